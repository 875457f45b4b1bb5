import { describe, expect, it } from 'vitest';
import { nativeNextTurn } from '../../src/mcp/native-turn.js';

describe('nativeNextTurn', () => {
  it("marks a failed tool call's result as an error in Anthropic's and Gemini's own shapes", () => {
    const anthropic = nativeNextTurn(
      { format: 'anthropic', body: { messages: [{ role: 'user', content: 'x' }] } } as never,
      { format: 'anthropic', body: { content: [{ type: 'tool_use', id: 'toolu_1', name: 'kb__a', input: {} }, { type: 'tool_use', id: 'toolu_2', name: 'kb__b', input: {} }] } },
      [{ name: 'kb__a', result: 'Error: the index is offline', isError: true }, { name: 'kb__b', result: 'fine' }],
    ) as { messages: Array<{ content: unknown }> };
    expect(anthropic.messages[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Error: the index is offline', is_error: true },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'fine' },
    ]);
    const gemini = nativeNextTurn(
      { format: 'gemini', body: { contents: [{ role: 'user', parts: [{ text: 'x' }] }] } } as never,
      { format: 'gemini', body: { candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'kb__a', args: {} } }, { functionCall: { name: 'kb__b', args: {} } }] } }] } },
      [{ name: 'kb__a', result: 'Error: the index is offline', isError: true }, { name: 'kb__b', result: 'fine' }],
    ) as { contents: Array<{ parts: unknown }> };
    expect(gemini.contents[2]?.parts).toEqual([
      { functionResponse: { name: 'kb__a', response: { error: 'Error: the index is offline' } } },
      { functionResponse: { name: 'kb__b', response: { result: 'fine' } } },
    ]);
  });
});
