import { describe, expect, it } from 'vitest';
import type { NativeStreamEvent } from '../../src/core/canonical.js';
import { AnthropicEventGuard } from '../../src/guardrails/anthropic-event-guard.js';
import { GeminiEventGuard } from '../../src/guardrails/gemini-event-guard.js';
import { compileGuardrails, createStreamGuard } from '../../src/guardrails/index.js';

/**
 * Output rules on an upstream's own stream events (native pass-through on /anthropic and /genai): the texts are
 * checked in place and every other event and field is kept; a blocking finding ends the answer in the format's
 * own way.
 */
const rules = compileGuardrails([
  { name: 'emails', kind: 'email', action: 'redact' },
  { name: 'stop', kind: 'keyword', action: 'block', keywords: ['bluebird'] },
]);
const newGuard = () => createStreamGuard(rules, { direction: 'output' });
const data = (item: NativeStreamEvent): Record<string, any> => JSON.parse(item.data);

describe('the Anthropic event guard', () => {
  const frame = (value: Record<string, unknown>): NativeStreamEvent => ({ event: String(value.type), data: JSON.stringify(value) });
  const start = frame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  const text = (piece: string) => frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } });

  it('ends the message at a blocking match with a refusal, and drops what follows', () => {
    const guard = new AnthropicEventGuard(newGuard);
    const out = [...guard.pass([start, text('the word is blue')]), ...guard.pass([text('bird and more'), frame({ type: 'content_block_stop', index: 0 }), frame({ type: 'message_stop' })])];
    expect(out.map((item) => item.event)).toEqual(['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(data(out[1] as NativeStreamEvent).delta.text).toBe('the word is ');
    expect(data(out[3] as NativeStreamEvent).delta.stop_reason).toBe('refusal');
    expect(guard.pass([frame({ type: 'ping' })])).toEqual([]);
  });

  it("closes a refused message with the upstream's own message_delta, its usage kept", () => {
    const guard = new AnthropicEventGuard(newGuard);
    const usage = { input_tokens: 12, output_tokens: 34 };
    const out = guard.pass([
      start,
      text('the word is blue'),
      text('bird and more'),
      frame({ type: 'content_block_stop', index: 0 }),
      frame({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
      frame({ type: 'ping' }),
      frame({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage }),
      frame({ type: 'message_stop' }),
    ]);
    expect(out.map((item) => item.event)).toEqual(['content_block_start', 'content_block_delta', 'content_block_stop', 'ping', 'message_delta', 'message_stop']);
    expect(data(out[4] as NativeStreamEvent)).toEqual({ type: 'message_delta', delta: { stop_reason: 'refusal', stop_sequence: null }, usage });
    expect(guard.end()).toEqual([]);
  });

  it('sends what a cut-off stream held at its end', () => {
    const guard = new AnthropicEventGuard(newGuard);
    const held = guard.pass([start, text('short')]);
    expect(held.map((item) => item.event)).toEqual(['content_block_start']);
    expect(guard.end().map((item) => data(item).delta.text)).toEqual(['short']);
  });
});

describe('the Gemini event guard', () => {
  const event = (parts: unknown[], extra: Record<string, unknown> = {}): NativeStreamEvent => ({ event: '', data: JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], responseId: 'r' }) });

  it('ends the candidate at a blocking match with SAFETY, and drops what follows', () => {
    const guard = new GeminiEventGuard(newGuard);
    const out = [...guard.pass([event([{ text: 'the word is blue' }])]), ...guard.pass([event([{ text: 'bird and more' }]), event([{ text: 'end' }], { finishReason: 'STOP' })])];
    const last = data(out.at(-1) as NativeStreamEvent).candidates[0];
    expect(last.finishReason).toBe('SAFETY');
    expect(out.map((item) => data(item).candidates[0].content.parts.map((part: { text: string }) => part.text).join('')).join('')).toBe('the word is ');
  });

  it('drops a refused candidate until the event that finishes it, which keeps its usage; another candidate goes on', () => {
    const guard = new GeminiEventGuard(newGuard);
    const two = (first: unknown[], second: unknown[], finish: Record<string, unknown> = {}, usage: Record<string, unknown> = { promptTokenCount: 3 }): NativeStreamEvent => ({
      event: '',
      data: JSON.stringify({ candidates: [{ content: { role: 'model', parts: first }, index: 0, ...finish }, { content: { role: 'model', parts: second }, index: 1, ...finish }], usageMetadata: usage }),
    });
    const out = guard.pass([
      // Longer than what the guards hold back (an email's 262 characters): the block is known before the last event.
      two([{ text: `the bluebird sings ${'over the hills '.repeat(20)}` }], [{ text: 'a quiet answer that goes on ' }]),
      two([{ text: 'more words after the block' }], [{ text: 'and on and on ' }]),
      two([{ text: 'the end' }], [{ text: 'the end' }], { finishReason: 'STOP' }, { promptTokenCount: 3, candidatesTokenCount: 40 }),
    ]);
    const events = out.map((item) => data(item));
    const first = events.flatMap((event) => event.candidates.filter((candidate: { index: number }) => candidate.index === 0));
    const second = events.flatMap((event) => event.candidates.filter((candidate: { index: number }) => candidate.index === 1));
    expect(first.map((candidate) => (candidate.content?.parts ?? []).map((part: { text: string }) => part.text).join('')).join('')).toBe('the ');
    expect(first.at(-1)).toEqual({ index: 0, finishReason: 'SAFETY' });
    expect(second.map((candidate) => candidate.content.parts.map((part: { text: string }) => part.text).join('')).join('')).toBe('a quiet answer that goes on and on and on the end');
    expect(events.at(-1)!.usageMetadata).toEqual({ promptTokenCount: 3, candidatesTokenCount: 40 });
    expect(guard.end()).toEqual([]);
  });

  it('ends a cut-off candidate whose held text blocks with the safe text and SAFETY', () => {
    const guard = new GeminiEventGuard(newGuard);
    expect(guard.pass([event([{ text: 'the word is blue' }]), event([{ text: 'bird' }])]).map((item) => data(item).candidates[0].content.parts[0].text).join('')).toBe('');
    expect(guard.end().map((item) => data(item).candidates)).toEqual([[{ content: { parts: [{ text: 'the word is ' }], role: 'model' }, index: 0, finishReason: 'SAFETY' }]]);
  });

  it('checks a call whole and reads redacted arguments back', () => {
    const guard = new GeminiEventGuard(newGuard);
    const [out] = guard.pass([event([{ functionCall: { name: 'send', args: { to: 'jane@example.com', n: 1 } }, thoughtSignature: 'c2ln' }], { finishReason: 'STOP' })]);
    expect(data(out as NativeStreamEvent).candidates[0].content.parts).toEqual([{ functionCall: { name: 'send', args: { to: '[REDACTED:email]', n: 1 } }, thoughtSignature: 'c2ln' }]);
  });

  it("drops a text candidate's logprobs, whose tokens would send what the guard holds back or redacts", () => {
    const guard = new GeminiEventGuard(newGuard);
    const logprobs = (token: string) => ({ logprobsResult: { chosenCandidates: [{ token, logProbability: -0.1 }], topCandidates: [] } });
    const out = [
      ...guard.pass([event([{ text: 'write to jane' }], logprobs('write to jane'))]),
      ...guard.pass([event([{ text: '@example.com now' }], { finishReason: 'STOP', ...logprobs('@example.com now') })]),
    ];
    const sent = out.map((item) => item.data).join('');
    expect(out.map((item) => data(item).candidates[0].content.parts.map((part: { text: string }) => part.text).join('')).join('')).toBe('write to [REDACTED:email] now');
    expect(sent).not.toContain('jane');
    expect(out.every((item) => data(item).candidates[0].logprobsResult === undefined)).toBe(true);
  });

  it('leaves an event nothing was held from or found in as it came', () => {
    const guard = new GeminiEventGuard(newGuard);
    const call = event([{ functionCall: { name: 'lookup', args: { q: 'x' } } }], { finishReason: 'STOP', groundingMetadata: { webSearchQueries: ['x'] } });
    expect(guard.pass([call])).toEqual([call]);
  });
});
