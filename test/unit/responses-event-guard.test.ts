import { describe, expect, it } from 'vitest';
import type { NativeStreamEvent } from '../../src/core/canonical.js';
import { compileGuardrails, createStreamGuard } from '../../src/guardrails/index.js';
import { guardResponseBody } from '../../src/guardrails/responses-answer-guard.js';
import { ResponsesEventGuard } from '../../src/guardrails/responses-event-guard.js';

/**
 * Output rules on an OpenAI Responses API stream passed through (the cases the scripted upstream does not write): an
 * event between a text's deltas, a refusal, a text sent whole in its `.done`, a stream cut off, logprobs.
 */
const rules = compileGuardrails([
  { name: 'emails', kind: 'email', action: 'redact' },
  { name: 'stop', kind: 'keyword', action: 'block', keywords: ['bluebird'] },
]);
const newGuard = () => createStreamGuard(rules, { direction: 'output' });
const data = (item: NativeStreamEvent): Record<string, any> => JSON.parse(item.data);

/** A stream's events, numbered in order as OpenAI numbers them. */
function stream(...events: Array<Record<string, unknown>>): NativeStreamEvent[] {
  return events.map((event, index) => ({ event: String(event.type), data: JSON.stringify({ ...event, sequence_number: index }) }));
}
const at = { item_id: 'msg_1', output_index: 0, content_index: 0 };
const delta = (piece: string, extra: Record<string, unknown> = {}) => ({ type: 'response.output_text.delta', ...at, delta: piece, logprobs: [], ...extra });
const annotation = { type: 'response.output_text.annotation.added', ...at, annotation_index: 0, annotation: { type: 'url_citation', url: 'https://example.org' } };

/** The text the client's deltas make, and every event's sequence number. */
function sent(out: NativeStreamEvent[]): { text: string; numbers: number[]; types: string[] } {
  const events = out.map(data);
  return { text: events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join(''), numbers: events.map((event) => event.sequence_number), types: events.map((event) => event.type) };
}

describe('the Responses event guard', () => {
  it('keeps an event that came between deltas in its place, and a match held across it whole', () => {
    const guard = new ResponsesEventGuard(newGuard);
    const events = stream(delta('mail jane'), annotation, delta('.doe@example.com now'), { type: 'response.output_text.done', ...at, text: 'mail jane.doe@example.com now', logprobs: [] });
    const out = [...guard.pass(events.slice(0, 2)), ...guard.pass(events.slice(2))];
    const got = sent(out);
    expect(got.text).toBe('mail [REDACTED:email] now');
    expect(got.types).toEqual(['response.output_text.delta', 'response.output_text.annotation.added', 'response.output_text.delta', 'response.output_text.done']);
    expect(got.numbers).toEqual([0, 1, 2, 3]);
    expect(out[1]).toBe(events[1]);
    expect(data(out[3] as NativeStreamEvent).text).toBe('mail [REDACTED:email] now');
  });

  it('adds a delta for what a text held when it ended after another text began, the later events numbered on', () => {
    const guard = new ResponsesEventGuard(newGuard);
    const other = { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 1, delta: 'second part', logprobs: [] };
    const out = guard.pass(stream(delta('first text'), other, { type: 'response.output_text.done', ...at, text: 'first text', logprobs: [] }, { type: 'response.output_text.done', ...at, content_index: 1, text: 'second part', logprobs: [] }));
    const events = out.map(data);
    // Each text's deltas were held whole (short texts); each ends with a delta of its own before its .done.
    expect(events.map((event) => event.delta ?? event.text)).toEqual(['', '', 'first text', 'first text', 'second part', 'second part']);
    expect(events.map((event) => event.type)).toEqual(['response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.output_text.delta', 'response.output_text.done']);
    expect(events[4]).toMatchObject({ content_index: 1 });
    expect(events.map((event) => event.sequence_number)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('redacts a refusal, and a text sent whole in its .done', () => {
    const guard = new ResponsesEventGuard(newGuard);
    const refusal = { item_id: 'msg_1', output_index: 0, content_index: 0 };
    const out = guard.pass(
      stream(
        { type: 'response.refusal.delta', ...refusal, delta: 'ask a@b' },
        { type: 'response.refusal.delta', ...refusal, delta: '.co instead' },
        { type: 'response.refusal.done', ...refusal, refusal: 'ask a@b.co instead' },
        { type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 1, arguments: '{"to":"x@y.io"}' },
      ),
    );
    const events = out.map(data);
    expect(events.slice(0, 2).map((event) => event.delta).join('')).toBe('ask [REDACTED:email] instead');
    expect(events[2]?.refusal).toBe('ask [REDACTED:email] instead');
    expect(events[3]?.arguments).toBe('{"to":"[REDACTED:email]"}');
  });

  it('drops the logprobs of a delta whose text it changed (they spell the text as written)', () => {
    const guard = new ResponsesEventGuard(newGuard);
    const out = guard.pass(stream(delta('hi x@y.io', { logprobs: [{ token: 'x@y.io', logprob: -1 }] }), { type: 'response.output_text.done', ...at, text: 'hi x@y.io', logprobs: [{ token: 'x@y.io' }] }));
    expect(out.map(data).map((event) => event.logprobs)).toEqual([[], []]);
    expect(JSON.stringify(out)).not.toContain('x@y.io');
  });

  it('never sends a delta’s logprobs, which may spell text still held; an unchanged text’s .done keeps them', () => {
    const guard = new ResponsesEventGuard(newGuard);
    // The first delta fills the look-behind; the second releases the first's leading 'zq', the same text as its own
    // 'zq', which is held: the start of an address its logprobs would spell before the rule redacts it.
    const first = `zq ${'w'.repeat(rules.lookBehind('output') - 4)} `;
    const events = stream(delta(first, { logprobs: [{ token: 'w' }] }), delta('zq', { logprobs: [{ token: 'zq' }] }), delta('@x.io', { logprobs: [{ token: '@x.io' }] }), { type: 'response.output_text.done', ...at, text: `${first}zq@x.io`, logprobs: [{ token: 'zq' }] });
    const out = guard.pass(events).map(data);
    expect(out.slice(0, 3).map((event) => event.logprobs)).toEqual([[], [], []]);
    expect(out.map((event) => event.delta ?? event.text).join('|')).toBe(`|zq|${first.slice(2)}[REDACTED:email]|${first}[REDACTED:email]`);
    expect(JSON.stringify(out)).not.toContain('x.io');
    const clean = new ResponsesEventGuard(newGuard).pass(stream(delta('hello'), { type: 'response.output_text.done', ...at, text: 'hello', logprobs: [{ token: 'hello' }] }));
    expect(data(clean[1] as NativeStreamEvent).logprobs).toEqual([{ token: 'hello' }]);
  });

  it('closes a blocked stream the upstream cut off with response.incomplete from the Response it began', () => {
    const guard = new ResponsesEventGuard(newGuard);
    const created = { id: 'resp_1', object: 'response', status: 'in_progress', output: [], usage: null };
    const events = stream(
      { type: 'response.created', response: created },
      { type: 'response.output_item.added', output_index: 0, item: { id: 'msg_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] } },
      { type: 'response.content_part.added', ...at, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } },
      delta('the blue'),
      delta('bird sings'),
    );
    const out = [...guard.pass(events), ...guard.end()];
    const got = sent(out);
    expect(got.text).toBe('the ');
    expect(got.types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    expect(got.numbers).toEqual(got.numbers.map((_, index) => index));
    const last = data(out.at(-1) as NativeStreamEvent).response;
    expect(last).toMatchObject({ id: 'resp_1', status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(last.output).toEqual([{ id: 'msg_1', type: 'message', status: 'incomplete', role: 'assistant', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'the ' }] }]);
    expect(guard.pass(stream({ type: 'response.completed', response: created }))).toEqual([]);
  });
});

describe('raw reasoning (reasoning_text), which only this guard sees', () => {
  it('is redacted in its deltas, its .done and its item, and reported', () => {
    const steps: unknown[] = [];
    const guard = new ResponsesEventGuard(newGuard, (step) => steps.push(...step.findings));
    const where = { item_id: 'rs_1', output_index: 0, content_index: 0 };
    const item = { id: 'rs_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'mail a@b.co' }] };
    const out = guard
      .pass(
        stream(
          { type: 'response.reasoning_text.delta', ...where, delta: 'mail a@' },
          { type: 'response.reasoning_text.delta', ...where, delta: 'b.co' },
          { type: 'response.reasoning_text.done', ...where, text: 'mail a@b.co' },
          { type: 'response.content_part.done', ...where, part: item.content[0] },
          { type: 'response.output_item.done', output_index: 0, item },
        ),
      )
      .map(data);
    expect(out.slice(0, 2).map((event) => event.delta).join('')).toBe('mail [REDACTED:email]');
    expect(out[2]?.text).toBe('mail [REDACTED:email]');
    expect(out[3]?.part.text).toBe('mail [REDACTED:email]');
    expect(out[4]?.item.content[0].text).toBe('mail [REDACTED:email]');
    expect(steps).toHaveLength(1);
  });
});

describe('a whole Responses answer', () => {
  it('is the same object when nothing was found, and redacts in place otherwise', () => {
    const scanner = { scan: (text: string) => rules.scan(text, 'output'), redact: (text: string, findings: Parameters<typeof rules.redact>[1]) => rules.redact(text, findings) };
    const reasoning = { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'ask z@z.io' }], encrypted_content: 'gAAAA' };
    const clean = { id: 'resp_1', output: [{ id: 'ws_1', type: 'web_search_call', status: 'completed' }] };
    expect(guardResponseBody(clean, scanner).body).toBe(clean);
    const body = { id: 'resp_2', output: [reasoning, { id: 'fc_1', type: 'function_call', arguments: '{"to":"a@b.co"}', call_id: 'c', name: 'mail' }] };
    const guarded = guardResponseBody(body, scanner);
    expect(guarded.body.output).toEqual([
      { ...reasoning, summary: [{ type: 'summary_text', text: 'ask [REDACTED:email]' }] },
      { id: 'fc_1', type: 'function_call', arguments: '{"to":"[REDACTED:email]"}', call_id: 'c', name: 'mail' },
    ]);
    expect(guarded.findings).toHaveLength(2);
  });
});
