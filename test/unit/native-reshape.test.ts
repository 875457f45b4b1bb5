import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import { describe, expect, it } from 'vitest';
import type { NativeStreamEvent } from '../../src/core/canonical.js';
import { eventsMessage, messageEvents } from '../../src/wire/anthropic/message-events.js';
import { eventsResponse, responseEvents } from '../../src/wire/gemini/response-events.js';

/**
 * A cached native answer served in the other shape (src/cache/native-reshape.ts): an Anthropic message and its
 * stream, a Gemini response and its stream, each made from the other without losing what either carries.
 */

/** What the official Anthropic SDK accumulates from `events` (its MessageStream reads them as JSON lines). */
async function sdkMessage(events: readonly NativeStreamEvent[]): Promise<unknown> {
  const lines = events.map((item) => `${item.data}\n`).join('');
  const stream = MessageStream.fromReadableStream(new Response(lines).body as ReadableStream);
  const { parsed_output: _parsed, ...message } = JSON.parse(JSON.stringify(await stream.finalMessage())) as Record<string, unknown>;
  return message;
}

/** A message with every kind of block Anthropic's stream treats differently. */
const message = {
  id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [
    { type: 'thinking', thinking: 'The user wants the news; search first.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
    { type: 'server_tool_use', id: 'srvtoolu_014hJH82Qum7Td6UV8gDXThB', name: 'web_search', input: { query: 'tollgate news' } },
    {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_014hJH82Qum7Td6UV8gDXThB',
      content: [{ type: 'web_search_result', title: 'News', url: 'https://example.com/news', encrypted_content: 'EqgfCioIARgBIiQ3YTAwMjY1Zi', page_age: 'April 30, 2025' }],
    },
    {
      type: 'text',
      text: 'Tollgate shipped a release.',
      citations: [{ type: 'web_search_result_location', url: 'https://example.com/news', title: 'News', encrypted_index: 'Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm', cited_text: 'Tollgate shipped' }],
    },
    { type: 'text', text: ' Want details?', citations: null },
    { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
    { type: 'tool_use', id: 'toolu_01B', name: 'now', input: {} },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: {
    input_tokens: 2095,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 1024,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: 503,
    server_tool_use: { web_search_requests: 1 },
    service_tier: 'standard',
  },
};

describe('an Anthropic message and its stream', () => {
  it('streams a message as Anthropic does, and the SDK accumulates the stored message from it, field for field', async () => {
    const events = messageEvents(message);
    expect(events.map((item) => item.event)).toEqual([
      'message_start',
      ...message.content.flatMap((block) => {
        const deltas = block.type === 'thinking' ? 2 : block.type === 'text' ? 1 + (Array.isArray(block.citations) ? block.citations.length : 0) : block.type.endsWith('tool_use') && Object.keys(block.input ?? {}).length > 0 ? 1 : 0;
        return ['content_block_start', ...Array<string>(deltas).fill('content_block_delta'), 'content_block_stop'];
      }),
      'message_delta',
      'message_stop',
    ]);
    for (const item of events) expect(JSON.parse(item.data).type).toBe(item.event);
    expect(await sdkMessage(events)).toEqual(message);
    expect(eventsMessage(events)).toEqual(message);
  });

  it("accumulates a stream Anthropic sent (pings, input in pieces, usage totals in message_delta) as the SDK does", async () => {
    const data = (value: Record<string, unknown>): NativeStreamEvent => ({ event: String(value.type), data: JSON.stringify(value) });
    const events = [
      data({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } } }),
      data({ type: 'ping' }),
      data({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
      data({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me ' } }),
      data({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'think.' } }),
      data({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig_abc' } }),
      data({ type: 'content_block_stop', index: 0 }),
      data({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } }),
      data({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } }),
      data({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"location": "Par' } }),
      data({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'is"}' } }),
      data({ type: 'content_block_stop', index: 1 }),
      data({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89, input_tokens: 25, cache_read_input_tokens: 0 } }),
      data({ type: 'message_stop' }),
    ];
    const accumulated = eventsMessage(events);
    expect(accumulated).toEqual(await sdkMessage(events));
    expect(accumulated).toMatchObject({ content: [{ thinking: 'Let me think.', signature: 'sig_abc' }, { input: { location: 'Paris' } }], usage: { output_tokens: 89 } });
  });

  it('makes no message of a stream that is cut off or broken', () => {
    const events = messageEvents(message);
    expect(eventsMessage(events.slice(0, -1))).toBeNull();
    expect(eventsMessage(events.slice(1))).toBeNull();
    expect(eventsMessage([...events.slice(0, 3), { event: 'content_block_delta', data: '{not json' }, ...events.slice(3)])).toBeNull();
    expect(eventsMessage([events[0] as NativeStreamEvent, { event: 'error', data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' }])).toBeNull();
  });
});

describe('a Gemini response and its stream', () => {
  const usageMetadata = { promptTokenCount: 9, candidatesTokenCount: 12, thoughtsTokenCount: 4, totalTokenCount: 25, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 9 }] };
  const groundingMetadata = { webSearchQueries: ['deepest lake'], groundingChunks: [{ web: { uri: 'https://example.com', title: 'example.com' } }] };

  it('streams a whole response as one event, and reads it back the same', () => {
    const response = { candidates: [{ content: { parts: [{ text: 'Baikal.' }], role: 'model' }, finishReason: 'STOP', index: 0, groundingMetadata }], usageMetadata, modelVersion: 'gemini-2.5-flash', responseId: 'r1' };
    const events = responseEvents(response);
    expect(events).toHaveLength(1);
    expect(JSON.parse((events[0] as NativeStreamEvent).data)).toEqual(response);
    expect(eventsResponse(events)).toEqual(response);
  });

  it('joins a stream into one response: text pieces of a kind joined, a signature kept on the text it closes, calls whole, the rest from the last piece', () => {
    const piece = (parts: unknown[], extra: Record<string, unknown> = {}, top: Record<string, unknown> = {}): NativeStreamEvent => ({
      event: '',
      data: JSON.stringify({ candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }], usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, modelVersion: 'gemini-2.5-flash', responseId: 'r2', ...top }),
    });
    const events = [
      piece([{ text: 'Weighing ', thought: true }]),
      piece([{ text: 'the lakes.', thought: true }]),
      piece([{ text: 'It is ' }]),
      piece([{ text: 'Baikal.', thoughtSignature: 'c2lnLTE=' }]),
      piece([{ text: ' Checking.' }, { functionCall: { name: 'lookup', args: { lake: 'Baikal' } }, thoughtSignature: 'c2lnLTI=' }]),
      piece([], { finishReason: 'STOP', groundingMetadata, citationMetadata: { citations: [{ startIndex: 0, endIndex: 5, uri: 'https://a.example' }] } }, { usageMetadata }),
    ];
    expect(eventsResponse(events)).toEqual({
      candidates: [
        {
          content: {
            parts: [
              { text: 'Weighing the lakes.', thought: true },
              { text: 'It is Baikal.', thoughtSignature: 'c2lnLTE=' },
              { text: ' Checking.' },
              { functionCall: { name: 'lookup', args: { lake: 'Baikal' } }, thoughtSignature: 'c2lnLTI=' },
            ],
            role: 'model',
          },
          index: 0,
          finishReason: 'STOP',
          groundingMetadata,
          citationMetadata: { citations: [{ startIndex: 0, endIndex: 5, uri: 'https://a.example' }] },
        },
      ],
      usageMetadata,
      modelVersion: 'gemini-2.5-flash',
      responseId: 'r2',
    });
  });

  it('collects citations from every piece, and makes nothing of an event that is not JSON', () => {
    const cited = (startIndex: number): NativeStreamEvent => ({ event: '', data: JSON.stringify({ candidates: [{ index: 0, content: { parts: [{ text: 'x' }] }, citationMetadata: { citations: [{ startIndex }] } }] }) });
    const joined = eventsResponse([cited(0), cited(1)]) as { candidates: Array<{ citationMetadata: unknown; content: unknown }> };
    expect(joined.candidates[0]?.citationMetadata).toEqual({ citations: [{ startIndex: 0 }, { startIndex: 1 }] });
    expect(joined.candidates[0]?.content).toEqual({ parts: [{ text: 'xx' }] });
    expect(eventsResponse([cited(0), { event: '', data: 'not json' }])).toBeNull();
    expect(eventsResponse([])).toBeNull();
  });
});
