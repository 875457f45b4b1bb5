import { from, lastValueFrom, Observable, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ResponseEvent } from '../../src/core/canonical.js';
import { guardStream } from '../../src/guardrails/answer-guard.js';
import { compileGuardrails, createStreamGuard, type Finding, type GuardrailRule } from '../../src/guardrails/index.js';

// An OpenAI-format upstream's stream under output rules (each event carrying its own text, `native.text`): plain
// events are held until the guard has released their text and then go on as they came, native kept, unless the
// rules changed that text. Whatever the client gets, its text, finish reasons and events' order must be what the
// guard gives a stream whose chunks are all rebuilt (the same events without their text).

type ChunkEvent = Extract<ResponseEvent, { kind: 'chunk' }>;

function event(choices: unknown[], usage?: ChatCompletionChunk['usage']): ChunkEvent {
  const chunk: ChatCompletionChunk = { id: 'c1', object: 'chat.completion.chunk', model: 'm', choices, ...(usage !== undefined ? { usage } : {}) };
  return { kind: 'chunk', chunk, native: { format: 'openai', text: JSON.stringify(chunk) } };
}
const content = (text: string, finish: string | null = null) => event([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: finish }]);
const USAGE = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };

/** A stream of `pieces`, as OpenAI sends one: the role, a chunk a piece, the finish, the usage. */
function stream(pieces: readonly string[]): ChunkEvent[] {
  return [event([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]), ...pieces.map((piece) => content(piece)), event([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]), event([], USAGE)];
}

/** The same events without the upstream's text: the guard rebuilds every chunk, as it did for every stream before. */
const rebuiltOnly = (events: readonly ResponseEvent[]): ResponseEvent[] => events.map((e) => (e.kind === 'chunk' ? { kind: 'chunk', chunk: e.chunk } : e));

function guarded(source: Observable<ResponseEvent>, rules: GuardrailRule[], blockError: ((finding: Finding) => Error) | null = null): Observable<ResponseEvent> {
  const scanner = compileGuardrails(rules);
  return guardStream(source, {
    scanner: { scan: (value) => scanner.scan(value, 'output'), redact: (value, findings) => scanner.redact(value, findings) },
    newStreamGuard: () => createStreamGuard(scanner, { direction: 'output' }),
    report: () => {},
    blockError,
  });
}

async function run(events: readonly ResponseEvent[], rules: GuardrailRule[]) {
  const out = (await lastValueFrom(guarded(from(events), rules).pipe(toArray()))).filter((e): e is ChunkEvent => e.kind === 'chunk');
  const choices = out.flatMap((e) => e.chunk.choices as Array<{ delta?: { content?: string; tool_calls?: unknown }; finish_reason?: string | null }>);
  return {
    out,
    text: choices.map((choice) => choice.delta?.content ?? '').join(''),
    finishes: choices.map((choice) => choice.finish_reason).filter(Boolean),
    usage: out.filter((e) => e.chunk.usage).length,
  };
}

const EMAIL: GuardrailRule = { name: 'emails', kind: 'email', action: 'redact' };
const CARD: GuardrailRule = { name: 'cards', kind: 'payment_card', action: 'block' };

describe('an OpenAI-format stream under output rules', () => {
  it('goes out as the upstream wrote it when the rules change nothing: the same event objects, native kept, in order', async () => {
    const events = stream(Array.from({ length: 40 }, (_, i) => ` word number ${i}`));
    const { out, text } = await run(events, [EMAIL, CARD]);
    expect(out).toHaveLength(events.length);
    out.forEach((e, i) => expect(e).toBe(events[i]));
    expect(text).toBe(Array.from({ length: 40 }, (_, i) => ` word number ${i}`).join(''));
  });

  it('sends the role chunk at once and each later event as soon as its text is released, never sooner', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => ` word number ${String(i).padStart(2, '0')}`); // 15 characters each
    const events = stream(pieces);
    const seen: ResponseEvent[] = [];
    const source = new Observable<ResponseEvent>((subscriber) => {
      let pushed = 0;
      for (const e of events) {
        subscriber.next(e);
        if (e.chunk.choices.length > 0 && e !== events[0] && e !== events.at(-2)) {
          pushed += 15;
          // The look-behind is 256 characters here (an email's 254, with a margin, capped): what went out is at
          // most what is 256 characters behind the text pushed so far.
          const out = seen.filter((s) => s !== events[0]).length * 15;
          expect(out).toBeLessThanOrEqual(Math.max(0, pushed - 256));
          expect(out).toBeGreaterThan(pushed - 256 - 15);
        }
      }
      subscriber.complete();
    });
    guarded(source, [EMAIL]).subscribe((e) => seen.push(e));
    expect(seen[0]).toBe(events[0]);
    expect(seen).toEqual(events);
  });

  it('sends the first event at once even when it carries text (role and content together), as before', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => ` word number ${String(i).padStart(2, '0')}`);
    const events = [event([{ index: 0, delta: { role: 'assistant', content: 'Hello,' }, logprobs: null, finish_reason: null }]), ...stream(pieces).slice(1)];
    const seen: ResponseEvent[] = [];
    const source = new Observable<ResponseEvent>((subscriber) => {
      subscriber.next(events[0]!);
      expect(seen).toHaveLength(1);
      for (const e of events.slice(1)) subscriber.next(e);
      subscriber.complete();
    });
    guarded(source, [EMAIL]).subscribe((e) => seen.push(e));
    const chunks = (seen as ChunkEvent[]).map((e) => e.chunk.choices[0] as { delta?: { role?: string; content?: string } } | undefined);
    expect(chunks[0]?.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.map((c) => c?.delta?.content ?? '').join('')).toBe(`Hello,${pieces.join('')}`);
    // The text it still held goes with the next event; the events after it are the upstream's own again.
    expect(seen.filter((e) => events.includes(e as ChunkEvent)).length).toBe(events.length - 2);
  });

  it('rebuilds only the events whose text a redaction changed, whatever the chunking and the placeholder', async () => {
    const words = Array.from({ length: 60 }, (_, i) => (i % 17 === 5 ? `mail j.doe${i}@example.com now` : `plain word ${i}`)).join(' ');
    for (const placeholder of ['', '[x]', '[REDACTED:a much longer placeholder than the address it replaces]']) {
      for (const size of [1, 3, 7, 16, 40, 300]) {
        const pieces: string[] = [];
        for (let at = 0; at < words.length; at += size) pieces.push(words.slice(at, at + size));
        const rules: GuardrailRule[] = [{ ...EMAIL, placeholder }];
        const events = stream(pieces);
        const held = await run(events, rules);
        const rebuilt = await run(rebuiltOnly(events), rules);
        expect(held.text, `${size}/${placeholder}`).toBe(rebuilt.text);
        expect(held.text).not.toContain('@example.com');
        expect(held.finishes).toEqual(['stop']);
        expect(held.usage).toBe(1);
        const own = held.out.filter((e, i) => events.includes(e) && e.native !== undefined && i > 0).length;
        // Events away from the addresses (four of them, each in a few events) are the upstream's own.
        if (size >= 3) expect(own, `${size}/${placeholder}`).toBeGreaterThan(pieces.length - 4 * (20 / size + 2));
      }
    }
  });

  it('gives the client the text, finish reasons and usage a rebuilt stream gives, on random streams', async () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const parts = ['plain words here ', 'mail a.b@example.com ', 'x@y.io', ' 4111 1111 1111 1111 ', 'secret sk-abcdefghijklmnopqrstuvwx1 ', 'é ', '\n', 'jane@', 'example.org.'];
    for (let round = 0; round < 300; round++) {
      let text = '';
      while (text.length < random() * 900) text += parts[Math.floor(random() * parts.length)];
      const pieces: string[] = [];
      for (let at = 0; at < text.length; ) {
        const size = 1 + Math.floor(random() * 40);
        pieces.push(text.slice(at, at + size));
        at += size;
      }
      const events = stream(pieces);
      // Now and then a chunk the guard rebuilds whatever happens (logprobs, a second choice) in the middle.
      if (random() < 0.3 && pieces.length > 2) events.splice(2, 0, event([{ index: 0, delta: { content: 'lp ' }, logprobs: { content: [] }, finish_reason: null }]));
      if (random() < 0.2 && pieces.length > 3) events.splice(3, 0, event([{ index: 1, delta: { content: 'other jo@example.com' }, logprobs: null, finish_reason: null }]));
      const rules: GuardrailRule[] = [EMAIL, CARD, { name: 'keys', kind: 'secret', action: 'redact', placeholder: random() < 0.5 ? '' : '[key]' }];
      const held = await run(events, rules);
      const rebuilt = await run(rebuiltOnly(events), rules);
      expect(held.text, `round ${round}`).toBe(rebuilt.text);
      expect(held.finishes, `round ${round}`).toEqual(rebuilt.finishes);
      expect(held.usage).toBe(1);
    }
  });

  it('ends a blocked answer as before: the safe text, content_filter, no byte of the card in a native event', async () => {
    const pieces = ['pay with ', '4111 1111', ' 1111 1111', ' please', ' and thanks'];
    const events = stream(pieces);
    const held = await run(events, [EMAIL, CARD]);
    const rebuilt = await run(rebuiltOnly(events), [EMAIL, CARD]);
    expect(held.text).toBe('pay with ');
    expect(held.text).toBe(rebuilt.text);
    expect(held.finishes).toEqual(['content_filter']);
    expect(held.usage).toBe(1);
    expect(held.out.filter((e) => e.native?.text?.includes('4111'))).toEqual([]);
  });

  it('keeps the order of texts when a tool call (not held) follows held text', async () => {
    const pieces = ['I will mail ', 'jane.doe@exa', 'mple.com now.'];
    const call = event([{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: '{"to":"x"}' } }] }, logprobs: null, finish_reason: null }]);
    const base = stream(pieces);
    const events = [...base.slice(0, -2), call, ...base.slice(-2)];
    const { out, text } = await run(events, [EMAIL]);
    expect(text).toBe('I will mail [REDACTED:email] now.');
    const callAt = out.findIndex((e) => (e.chunk.choices[0] as { delta?: { tool_calls?: unknown } } | undefined)?.delta?.tool_calls);
    const lastText = out.map((e) => (e.chunk.choices[0] as { delta?: { content?: string } } | undefined)?.delta?.content ?? '').findLastIndex((c) => c !== '');
    expect(lastText).toBeLessThan(callAt);
  });

  it('sends what was released before an upstream error, as before', async () => {
    const pieces = Array.from({ length: 30 }, (_, i) => ` word number ${String(i).padStart(2, '0')}`);
    const events = stream(pieces).slice(0, 31);
    const collect = async (source: ResponseEvent[]) => {
      const seen: ChunkEvent[] = [];
      const failing = new Observable<ResponseEvent>((subscriber) => {
        for (const e of source) subscriber.next(e);
        subscriber.error(new Error('upstream reset'));
      });
      await new Promise<void>((resolve) => guarded(failing, [EMAIL]).subscribe({ next: (e) => seen.push(e as ChunkEvent), error: () => resolve() }));
      return seen.flatMap((e) => e.chunk.choices as Array<{ delta?: { content?: string } }>).map((c) => c.delta?.content ?? '').join('');
    };
    const held = await collect(events);
    expect(held).toBe(await collect(rebuiltOnly(events)));
    expect(held.length).toBe(30 * 15 - 256);
  });
});
