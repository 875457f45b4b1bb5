import { describe, expect, it } from 'vitest';
import type { NativeStreamEvent } from '../../src/core/canonical.js';
import { NativeRunStream } from '../../src/mcp/native-run-stream.js';
import { eventsMessage } from '../../src/wire/anthropic/message-events.js';

const event = (type: string, data: Record<string, unknown> = {}): NativeStreamEvent => ({ event: type, data: JSON.stringify({ type, ...data }) });
const start = (input: number) => event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: input, cache_read_input_tokens: 10, output_tokens: 1 } } });
const text = (index: number, words: string) => [
  event('content_block_start', { index, content_block: { type: 'text', text: '' } }),
  event('content_block_delta', { index, delta: { type: 'text_delta', text: words } }),
  event('content_block_stop', { index }),
];
const thinking = (index: number) => [
  event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: 'hmm' } }),
  event('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'sig_1' } }),
  event('content_block_stop', { index }),
];
const call = (index: number) => [
  event('content_block_start', { index, content_block: { type: 'tool_use', id: 'toolu_1', name: 'kb__lookup', input: {} } }),
  event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '{}' } }),
  event('content_block_stop', { index }),
];
const end = (reason: string, output: number) => [event('message_delta', { delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: output } }), event('message_stop')];

describe('NativeRunStream (Anthropic)', () => {
  it('holds a turn that calls an MCP tool before saying anything, and streams the answering turn as it came with the run\'s usage', () => {
    const run = new NativeRunStream('anthropic');
    run.startTurn(null, false);
    expect(run.push([start(5), ...thinking(0), ...call(1), ...end('tool_use', 7)])).toEqual([]);
    expect(run.finish(false)).toEqual([]);
    run.startTurn({ input_tokens: 5, cache_read_input_tokens: 10, output_tokens: 7 }, false);
    const out = [...run.push([start(20), ...thinking(0)]), ...run.push([...text(1, 'answer'), ...end('end_turn', 4)]), ...run.finish(true)];
    expect(out.map((item) => item.event)).toEqual(['message_start', ...thinking(0).map((item) => item.event), ...text(1, '').map((item) => item.event), 'message_delta', 'message_stop']);
    // Everything but the usage as the upstream sent it.
    expect(out.slice(1, -2)).toEqual([...thinking(0), ...text(1, 'answer')]);
    const message = eventsMessage(out) as Record<string, any>;
    expect(message.usage).toMatchObject({ input_tokens: 25, cache_read_input_tokens: 20, output_tokens: 11 });
  });

  it('goes on in the same message when a turn that streamed text then calls an MCP tool: its call dropped, the next blocks numbered after', () => {
    const run = new NativeRunStream('anthropic');
    run.startTurn(null, false);
    const first = run.push([start(5), ...thinking(0), ...text(1, 'Let me look. '), ...call(2), ...end('tool_use', 7)]);
    expect(run.finish(false)).toEqual([]);
    run.startTurn({ input_tokens: 5, cache_read_input_tokens: 10, output_tokens: 7 }, false);
    const second = [...run.push([start(20), ...thinking(0), ...text(1, 'answer'), ...end('end_turn', 4)]), ...run.finish(true)];
    const message = eventsMessage([...first, ...second]) as Record<string, any>;
    expect(message.content.map((block: { type: string }) => block.type)).toEqual(['thinking', 'text', 'thinking', 'text']);
    expect(message.content[3].text).toBe('answer');
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage).toMatchObject({ input_tokens: 25, cache_read_input_tokens: 20, output_tokens: 11 });
    expect([...first, ...second].filter((item) => item.event === 'message_start')).toHaveLength(1);
    expect(JSON.stringify([...first, ...second])).not.toContain('kb__lookup');
  });
});
