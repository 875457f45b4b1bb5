import { describe, expect, it } from 'vitest';
import { createToolCallNumbering } from '../../src/providers/openai-compatible/tool-call-indexes.js';

/** The index each tool call delta ends up with, delta by delta, for a stream of one choice. */
function numbered(deltas: Array<Record<string, unknown>>): Array<unknown> {
  const numberCalls = createToolCallNumbering();
  return deltas.map((call) => {
    const choices = [{ index: 0, delta: { tool_calls: [call] } }];
    numberCalls(choices);
    return choices[0]!.delta.tool_calls[0]!.index;
  });
}

describe('tool call numbering', () => {
  it('leaves a stream numbered as OpenAI numbers it as it came, the same objects', () => {
    const calls = [{ index: 0, id: 'a', function: { name: 'f', arguments: '' } }, { index: 0, function: { arguments: '{}' } }, { index: 1, id: 'b', function: { name: 'g' } }];
    const choices = [{ index: 0, delta: { tool_calls: calls } }];
    const before = structuredClone(choices);
    createToolCallNumbering()(choices);
    expect(choices).toEqual(before);
    expect(choices[0]!.delta.tool_calls[0]).toBe(calls[0]);
  });

  it('keeps a call whose every delta repeats its id (and name) as one call', () => {
    expect(numbered([{ index: 0, id: 'a', function: { name: 'f', arguments: '{' } }, { index: 0, id: 'a', function: { name: 'f', arguments: '}' } }])).toEqual([0, 0]);
  });

  it('gives a call its id from a later delta when its first had none', () => {
    expect(numbered([{ index: 0, function: { arguments: '' } }, { index: 0, id: 'a', function: { name: 'f' } }, { index: 1, id: 'b' }])).toEqual([0, 0, 1]);
  });

  it('numbers calls that reuse index 0 or have none by their ids, fragments following their call', () => {
    expect(numbered([{ index: 0, id: 'a' }, { index: 0 }, { index: 0, id: 'b' }, { index: 0 }, { index: 0, id: 'c' }])).toEqual([0, 0, 1, 1, 2]);
    expect(numbered([{ id: 'a' }, {}, { id: 'b' }, {}])).toEqual([0, 0, 1, 1]);
  });

  it('numbers each choice on its own', () => {
    const numberCalls = createToolCallNumbering();
    const choices = [
      { index: 0, delta: { tool_calls: [{ index: 0, id: 'a' }, { index: 0, id: 'b' }] } },
      { index: 1, delta: { tool_calls: [{ index: 0, id: 'c' }] } },
    ];
    numberCalls(choices);
    expect(choices.map((choice) => choice.delta.tool_calls.map((call) => call.index))).toEqual([[0, 1], [0]]);
  });
});
