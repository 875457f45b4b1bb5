import { lastValueFrom, from, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ResponseEvent } from '../../src/core/canonical.js';
import { guardStream } from '../../src/guardrails/answer-guard.js';
import { compileGuardrails, createStreamGuard, type Finding, type GuardrailRule } from '../../src/guardrails/index.js';

// The answer guard over canonical streams: several choices, tool call arguments, and streams that end without a
// finish reason, each with its own look-behind.

const RULES: GuardrailRule[] = [
  { name: 'emails', kind: 'email', action: 'redact' },
  { name: 'cards', kind: 'payment_card', action: 'block' },
];

function chunk(choices: unknown[], usage: ChatCompletionChunk['usage'] = undefined): ResponseEvent {
  return { kind: 'chunk', chunk: { id: 'c1', object: 'chat.completion.chunk', model: 'm', choices, ...(usage !== undefined ? { usage } : {}) }, native: { format: 'openai', events: [] } };
}
const text = (index: number, content: string, finish: string | null = null) => ({ index, delta: { content }, finish_reason: finish });

async function run(events: ResponseEvent[], blockError: ((finding: Finding) => Error) | null = null) {
  const scanner = compileGuardrails(RULES);
  const reported: Finding[] = [];
  const out = await lastValueFrom(
    guardStream(from(events), {
      scanner: { scan: (value) => scanner.scan(value, 'output'), redact: (value, findings) => scanner.redact(value, findings) },
      newStreamGuard: () => createStreamGuard(scanner, { direction: 'output' }),
      report: (findings) => reported.push(...findings),
      blockError,
    }).pipe(toArray()),
  );
  const chunks = out.filter((event): event is Extract<ResponseEvent, { kind: 'chunk' }> => event.kind === 'chunk').map((event) => event.chunk);
  const textOf = (index: number) =>
    chunks.flatMap((c) => c.choices as Array<{ index: number; delta?: { content?: string } }>).filter((c) => c.index === index).map((c) => c.delta?.content ?? '').join('');
  const finishOf = (index: number) =>
    chunks.flatMap((c) => c.choices as Array<{ index: number; finish_reason?: string | null }>).filter((c) => c.index === index).map((c) => c.finish_reason).filter(Boolean);
  return { out, chunks, textOf, finishOf, reported };
}

describe('guardStream', () => {
  it('keeps one look-behind per choice: interleaved choices are redacted and blocked each on their own', async () => {
    const { textOf, finishOf, reported } = await run([
      chunk([text(0, 'a: jane'), text(1, 'b: 4111 1111')]),
      chunk([text(0, '.doe@exa'), text(1, ' 1111 11')]),
      chunk([text(0, 'mple.com ok', 'stop'), text(1, '11 end', 'stop')]),
      chunk([], { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }),
    ]);
    expect(textOf(0)).toBe('a: [REDACTED:email] ok');
    expect(finishOf(0)).toEqual(['stop']);
    expect(textOf(1)).toBe('b: ');
    expect(finishOf(1)).toEqual(['content_filter']);
    expect(reported.map((finding) => `${finding.rule}:${finding.action}`).sort()).toEqual(['cards:block', 'emails:redact']);
  });

  it("redacts an email split across a tool call's argument deltas, and keeps two tool calls apart", async () => {
    const call = (index: number, args: string, finish: string | null = null) => ({ index: 0, delta: { tool_calls: [{ index, function: { arguments: args } }] }, finish_reason: finish });
    const { chunks } = await run([
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: '' } }] }, finish_reason: null }]),
      chunk([call(0, '{"to":"jane.d')]),
      chunk([call(1, '{"cc":"bob@exa')]),
      chunk([call(0, 'oe@example.com"}')]),
      chunk([call(1, 'mple.org"}'), ]),
      chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]),
    ]);
    const args = new Map<number, string>();
    for (const c of chunks) {
      for (const choice of c.choices as Array<{ delta?: { tool_calls?: Array<{ index: number; function?: { arguments?: string } }> } }>) {
        for (const tool of choice.delta?.tool_calls ?? []) args.set(tool.index, (args.get(tool.index) ?? '') + (tool.function?.arguments ?? ''));
      }
    }
    expect(JSON.parse(args.get(0) ?? '')).toEqual({ to: '[REDACTED:email]' });
    expect(JSON.parse(args.get(1) ?? '')).toEqual({ cc: '[REDACTED:email]' });
    for (const piece of [...args.values()]) expect(piece).not.toMatch(/jane|bob/);
  });

  it('sends no unchecked text of a delta whose other text blocked the choice', async () => {
    const card = '4111 1111 1111 1111';
    // The reasoning blocks while the same delta carries answer text; then the answer, ended by a refusal in one delta.
    for (const deltas of [
      [{ reasoning_content: `use ${card}`, content: `here it is: ${card}` }],
      [{ content: `the card ${card}` }, { refusal: `no, not ${card}` }],
      [{ content: 'the card 4111 1111 ' }, { content: '1111 1111', refusal: `no, not ${card}` }],
    ]) {
      const { chunks, finishOf } = await run([...deltas.map((delta) => chunk([{ index: 0, delta, finish_reason: null }])), chunk([{ index: 0, delta: {}, finish_reason: 'stop' }])]);
      expect(JSON.stringify(chunks), JSON.stringify(deltas)).not.toContain('1111');
      expect(finishOf(0)).toEqual(['content_filter']);
    }
  });

  it('sends what is held when a stream ends without a finish reason or usage chunk, redacted', async () => {
    const { textOf } = await run([chunk([text(0, 'mail me at jane')]), chunk([text(0, '.doe@example.com')])]);
    expect(textOf(0)).toBe('mail me at [REDACTED:email]');
  });

  it('drops native bytes from every chunk it sends: the client gets what was checked', async () => {
    const { chunks, out } = await run([chunk([text(0, 'hello there', 'stop')])]);
    expect(chunks.length).toBeGreaterThan(0);
    for (const event of out) expect('native' in event && event.native).toBeFalsy();
  });

  it('fails the stream with the block error when the setting asks for errors', async () => {
    await expect(run([chunk([text(0, '4111 1111 1111 1111', 'stop')])], (finding) => new Error(`blocked by ${finding.rule}`))).rejects.toThrow('blocked by cards');
  });
});
