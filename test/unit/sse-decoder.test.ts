import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import type { StreamDecoder } from '../../src/core/provider.js';
import { openAICompatibleAdapter } from '../../src/providers/openai-compatible/adapter.js';
import { makeTarget } from './targets.js';

function chunk(content: string, extra: Record<string, unknown> = {}): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  };
}

function sseEvent(payload: unknown, eol = '\n'): string {
  const data = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return `data: ${data}${eol}${eol}`;
}

function newDecoder(): StreamDecoder {
  return openAICompatibleAdapter.createStreamDecoder(makeTarget({ name: 'openai' }), { model: 'm', messages: [], stream: true });
}

/** Feeds the bytes in pieces of `size` bytes and collects every chunk, including the ones `end()` returns. */
function decodeInPieces(bytes: Buffer, size: number, decoder = newDecoder()): { chunks: ChatCompletionChunk[]; complete: boolean; pushes: number } {
  const chunks: ChatCompletionChunk[] = [];
  let pushes = 0;
  for (let i = 0; i < bytes.length; i += size) {
    chunks.push(...decoder.push(bytes.subarray(i, i + size)));
    pushes++;
  }
  const tail = decoder.end();
  chunks.push(...tail.chunks);
  return { chunks, complete: tail.complete, pushes };
}

function contents(chunks: ChatCompletionChunk[]): string[] {
  return chunks.map((c) => (c.choices[0] as { delta: { content: string } }).delta.content);
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to throw');
}

describe('SSE stream decoder (openai-compatible)', () => {
  const stream = sseEvent(chunk('Hel')) + sseEvent(chunk('lo')) + sseEvent(chunk('!', { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })) + sseEvent('[DONE]');

  it('decodes a whole stream pushed at once', () => {
    const { chunks, complete } = decodeInPieces(Buffer.from(stream), Number.MAX_SAFE_INTEGER);
    expect(contents(chunks)).toEqual(['Hel', 'lo', '!']);
    expect(chunks[2]?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
    expect(complete).toBe(true);
  });

  it('reassembles events split at every byte boundary (one byte per push)', () => {
    const bytes = Buffer.from(stream);
    const { chunks, complete, pushes } = decodeInPieces(bytes, 1);
    expect(pushes).toBe(bytes.length);
    expect(contents(chunks)).toEqual(['Hel', 'lo', '!']);
    expect(complete).toBe(true);
  });

  it('returns each chunk from the push that completes its event, not earlier', () => {
    const decoder = newDecoder();
    const first = Buffer.from(sseEvent(chunk('a')));
    expect(decoder.push(first.subarray(0, first.length - 1))).toEqual([]);
    expect(contents(decoder.push(first.subarray(first.length - 1)))).toEqual(['a']);
  });

  it('decodes the same for every split point of a two-event stream', () => {
    const bytes = Buffer.from(sseEvent(chunk('x')) + sseEvent(chunk('y')) + sseEvent('[DONE]'));
    for (let cut = 1; cut < bytes.length; cut++) {
      const decoder = newDecoder();
      const out = [...decoder.push(bytes.subarray(0, cut)), ...decoder.push(bytes.subarray(cut))];
      const tail = decoder.end();
      expect(contents([...out, ...tail.chunks]), `cut at ${cut}`).toEqual(['x', 'y']);
      expect(tail.complete, `cut at ${cut}`).toBe(true);
    }
  });

  it.each([
    ['é (2 bytes)', 'café'],
    ['🙂 (4 bytes)', 'ok 🙂 fine'],
    ['CJK (3 bytes)', '日本語'],
  ])('reassembles a multi-byte UTF-8 character split across pushes: %s', (_label, text) => {
    const bytes = Buffer.from(sseEvent(chunk(text)) + sseEvent('[DONE]'));
    const { chunks, complete } = decodeInPieces(bytes, 1);
    expect(contents(chunks)).toEqual([text]);
    expect(complete).toBe(true);
  });

  it('splits inside the character exactly (first push ends mid-sequence)', () => {
    const bytes = Buffer.from(sseEvent(chunk('🙂')) + sseEvent('[DONE]'));
    const emojiStart = bytes.indexOf(Buffer.from('🙂'));
    expect(emojiStart).toBeGreaterThan(0);
    for (const offset of [1, 2, 3]) {
      const decoder = newDecoder();
      const out = [...decoder.push(bytes.subarray(0, emojiStart + offset)), ...decoder.push(bytes.subarray(emojiStart + offset))];
      expect(contents(out)).toEqual(['🙂']);
      expect(decoder.end().complete).toBe(true);
    }
  });

  it('accepts \\r\\n line endings, whole and one byte at a time', () => {
    const crlf = sseEvent(chunk('a'), '\r\n') + sseEvent(chunk('b'), '\r\n') + sseEvent('[DONE]', '\r\n');
    for (const size of [Number.MAX_SAFE_INTEGER, 1, 2, 3]) {
      const { chunks, complete } = decodeInPieces(Buffer.from(crlf), size);
      expect(contents(chunks), `pieces of ${size}`).toEqual(['a', 'b']);
      expect(complete).toBe(true);
    }
  });

  it('keeps a multi-line data field together when \\r\\n is split between \\r and \\n', () => {
    // One event whose data spans two lines; the JSON is valid only when the lines are joined.
    const event = 'data: {"id":"c","object":"chat.completion.chunk","model":"m",\r\ndata: "choices":[{"index":0,"delta":{"content":"joined"}}]}\r\n\r\n';
    const bytes = Buffer.from(event + sseEvent('[DONE]', '\r\n'));
    const { chunks, complete } = decodeInPieces(bytes, 1);
    expect(contents(chunks)).toEqual(['joined']);
    expect(complete).toBe(true);
  });

  it('ignores comment lines (keep-alives) and events without choices', () => {
    const body = ': keep-alive\n\n' + sseEvent(chunk('a')) + ': OPENROUTER PROCESSING\n\n' + sseEvent({ object: 'ping' }) + sseEvent(chunk('b')) + sseEvent('[DONE]');
    const { chunks, complete } = decodeInPieces(Buffer.from(body), 1);
    expect(contents(chunks)).toEqual(['a', 'b']);
    expect(complete).toBe(true);
  });

  it('reports complete only after [DONE]', () => {
    const { chunks, complete } = decodeInPieces(Buffer.from(sseEvent(chunk('a')) + sseEvent(chunk('b'))), 7);
    expect(contents(chunks)).toEqual(['a', 'b']);
    expect(complete).toBe(false);
  });

  it('reports an empty body as incomplete', () => {
    expect(newDecoder().end()).toEqual({ chunks: [], complete: false });
  });

  it('accepts a last [DONE] that lacks its closing blank line', () => {
    const { chunks, complete } = decodeInPieces(Buffer.from(sseEvent(chunk('a')) + 'data: [DONE]'), 4);
    expect(contents(chunks)).toEqual(['a']);
    expect(complete).toBe(true);
  });

  it('flushes a last chunk event that lacks its closing blank line from end()', () => {
    const decoder = newDecoder();
    expect(decoder.push(Buffer.from(`data: ${JSON.stringify(chunk('tail'))}`))).toEqual([]);
    const tail = decoder.end();
    expect(contents(tail.chunks)).toEqual(['tail']);
    expect(tail.complete).toBe(false);
  });

  it('ignores events after [DONE]', () => {
    const { chunks, complete } = decodeInPieces(Buffer.from(sseEvent(chunk('a')) + sseEvent('[DONE]') + sseEvent(chunk('late'))), 5);
    expect(contents(chunks)).toEqual(['a']);
    expect(complete).toBe(true);
  });

  it('turns an in-stream error event into a 502 GatewayError keeping the upstream message', () => {
    const decoder = newDecoder();
    expect(contents(decoder.push(Buffer.from(sseEvent(chunk('partial')))))).toEqual(['partial']);
    const errorEvent = sseEvent({ error: { message: 'The server is overloaded', type: 'server_error', code: 'overloaded' } });
    const err = caught(() => decoder.push(Buffer.from(errorEvent)));
    expect(err).toBeInstanceOf(GatewayError);
    const gw = err as GatewayError;
    expect(gw.status).toBe(502);
    expect(gw.type).toBe('server_error');
    expect(gw.code).toBe('overloaded');
    expect(gw.message).toBe('The server is overloaded');
    expect(gw.retryable).toBe(true);
  });

  it('gives an in-stream error without a code the code upstream_stream_error', () => {
    const decoder = newDecoder();
    const err = caught(() => decoder.push(Buffer.from(sseEvent({ error: { message: 'boom' } })))) as GatewayError;
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.status).toBe(502);
    expect(err.code).toBe('upstream_stream_error');
    expect(err.message).toContain('boom');
  });

  it('throws invalid_upstream_response for a data line that is not JSON', () => {
    const decoder = newDecoder();
    const err = caught(() => decoder.push(Buffer.from('data: this is not json\n\n'))) as GatewayError;
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.status).toBe(502);
    expect(err.code).toBe('invalid_upstream_response');
    expect(err.message.startsWith('openai: ')).toBe(true);
  });

  it('throws for non-JSON data even when it arrives one byte at a time', () => {
    const bytes = Buffer.from(sseEvent(chunk('ok')) + 'data: {broken\n\n');
    const decoder = newDecoder();
    let thrown: unknown = null;
    const seen: ChatCompletionChunk[] = [];
    for (let i = 0; i < bytes.length && !thrown; i++) {
      try {
        seen.push(...decoder.push(bytes.subarray(i, i + 1)));
      } catch (err) {
        thrown = err;
      }
    }
    expect(contents(seen)).toEqual(['ok']);
    expect(thrown).toBeInstanceOf(GatewayError);
    expect((thrown as GatewayError).code).toBe('invalid_upstream_response');
  });
});
