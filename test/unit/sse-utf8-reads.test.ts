import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../src/core/canonical.js';
import { createSSEDecoder } from '../../src/providers/sse-decoder.js';

/** Decodes `reads` in order and returns the data of every event, and whether the stream ended with [DONE]. */
function decode(reads: Buffer[]): { data: string[]; complete: boolean } {
  const decoder = createSSEDecoder((event) => (event.data === '[DONE]' ? 'done' : ({ data: event.data } as unknown as ChatCompletionChunk)));
  const chunks: ChatCompletionChunk[] = [];
  for (const read of reads) chunks.push(...decoder.push(read));
  const tail = decoder.end();
  chunks.push(...tail.chunks);
  return { data: chunks.map((chunk) => (chunk as unknown as { data: string }).data), complete: tail.complete };
}

/** The body cut at the given byte offsets. */
function cut(body: Buffer, at: number[]): Buffer[] {
  const reads: Buffer[] = [];
  let from = 0;
  for (const to of [...at, body.length]) {
    reads.push(body.subarray(from, to));
    from = to;
  }
  return reads;
}

const texts = ['héllo wörld', '日本語のテキスト', 'emoji 🎉🚀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢', 'plain ascii'];
const body = Buffer.from(`${texts.map((text) => `data: ${text}\n\n`).join('')}data: [DONE]\n\n`, 'utf8');

describe('SSE decoder', () => {
  it('joins characters split between reads, at every byte offset', () => {
    for (let at = 1; at < body.length; at++) {
      expect(decode(cut(body, [at]))).toEqual({ data: texts, complete: true });
    }
  });

  it('decodes a body read one byte at a time, and in reads of three', () => {
    expect(decode(cut(body, Array.from({ length: body.length - 1 }, (_, i) => i + 1)))).toEqual({ data: texts, complete: true });
    expect(decode(cut(body, Array.from({ length: Math.floor((body.length - 1) / 3) }, (_, i) => 3 * (i + 1))))).toEqual({ data: texts, complete: true });
  });

  it('drops a leading byte order mark, whole or split, and keeps one that is not at the start', () => {
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]);
    for (const at of [[], [1], [2], [3], [1, 2], [5]]) expect(decode(cut(withBom, at)).data).toEqual(texts);
    const inside = Buffer.from('data: \ufeffkept\n\n', 'utf8');
    expect(decode([inside]).data).toEqual(['\ufeffkept']);
  });

  it('turns invalid bytes into U+FFFD as TextDecoder does, whether or not a read ends inside a character', () => {
    const invalid = Buffer.concat([Buffer.from('data: a'), Buffer.from([0xff, 0xc3]), Buffer.from('b\n\n'), Buffer.from('data: c'), Buffer.from([0xe6, 0x97])]);
    const expected = new TextDecoder().decode(Buffer.concat([invalid, Buffer.from('\n\n')]));
    const events = expected.split('\n\n').filter(Boolean).map((line) => line.slice('data: '.length));
    for (let at = 1; at < invalid.length; at++) {
      // The last event has no closing blank line: the decoder's end flushes it, its truncated character as U+FFFD.
      expect(decode(cut(invalid, [at])).data).toEqual(events);
    }
  });
});
