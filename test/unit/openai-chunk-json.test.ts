import { describe, expect, it } from 'vitest';
import { chunkSerialiser } from '../../src/dialects/openai/chunk-json.js';
import type { ChatCompletionChunk } from '../../src/core/canonical.js';

const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk' as const, created: 1732700000, model: 'openai/gpt-4o', system_fingerprint: 'fp_1' };
const delta = (content: string, finish: string | null = null): ChatCompletionChunk => ({ ...base, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: finish }] });

/** Serialises the chunks in order with one serialiser, checking each against JSON.stringify. */
function expectSameAsStringify(chunks: ChatCompletionChunk[]): void {
  const serialise = chunkSerialiser();
  for (const chunk of chunks) expect(serialise(chunk)).toBe(JSON.stringify(chunk));
}

describe('chunkSerialiser', () => {
  it('writes a stream’s chunks exactly as JSON.stringify does', () => {
    expectSameAsStringify([
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] },
      delta('caf\u00e9 "quoted" \\ \n'),
      delta('tollgate-choices-'),
      { ...base, choices: [{ index: 1, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: null }] },
      delta('', 'stop'),
      { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } },
    ]);
  });

  it('follows chunks whose other fields change: a value, the key order, a key more or less, undefined values', () => {
    expectSameAsStringify([
      delta('a'),
      { ...delta('b'), created: 1732700001 },
      { ...delta('c'), model: 'other' },
      { choices: [{ index: 0, delta: { content: 'd' } }], ...base } as ChatCompletionChunk,
      { ...delta('e'), usage: null },
      { ...delta('f'), usage: undefined, service_tier: undefined },
      { ...delta('g'), obfuscation: 'x' },
      delta('h'),
      { ...delta('i'), extra: { nested: true } },
      delta('j'),
      { ...delta('k'), n: Number.NaN, m: -0 },
      { ...delta('l'), n: Number.NaN, m: -0 },
    ]);
  });

  it('leaves a chunk that serialises itself, or whose choices are not an array, to JSON.stringify', () => {
    const own = { ...delta('a'), toJSON: () => ({ replaced: true }) };
    expectSameAsStringify([delta('x'), own, delta('y'), { ...base, choices: 'odd' as unknown as unknown[] }, delta('z')]);
  });
});
