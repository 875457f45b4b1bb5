import { describe, expect, it } from 'vitest';
import { BodyCapture, keptBody } from '../../src/pipeline/body-capture.js';
import type { RequestContext } from '../../src/core/context.js';
import type { LogBodySettings } from '../../src/core/config.js';

const settings: LogBodySettings = { enabled: true, maxBytes: 2_000, redact: ['secret-\\d+'] };

/** A value whose serialisation is counted: what comes after the cut should never be read. */
function counted(): { value: { toJSON(): unknown }; reads: () => number } {
  let reads = 0;
  return { value: { toJSON: () => (reads++, { role: 'user', content: 'after the image' }) }, reads: () => reads };
}

function requestBody(request: unknown): string {
  const capture = new BodyCapture(settings);
  return capture.bodies({ native: null, request } as unknown as RequestContext).request;
}

/** The text kept before the truncation note. */
const keptPart = (body: string): string => body.slice(0, body.indexOf('…[truncated'));

describe('request bodies in the log', () => {
  it('keeps the start of a request with a 10 MiB base64 image without serialising all of it', () => {
    const image = `data:image/png;base64,${Buffer.alloc(10 * 1024 * 1024, 7).toString('base64')}`;
    const after = counted();
    const request = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'key sk-proj-abcdefghijklmnopqrstuvwxyz look' }, { type: 'image_url', image_url: { url: image } }] }, { role: 'user', content: [after.value] }] };
    const kept = requestBody(request);
    expect(after.reads()).toBe(0);
    expect(Buffer.byteLength(keptPart(kept))).toBeLessThanOrEqual(settings.maxBytes);
    expect(kept).toMatch(/…\[truncated over \d+ bytes\]$/);
    // The same text as serialising it all and cutting it.
    expect(keptPart(kept)).toBe(keptPart(keptBody(JSON.stringify(request), settings)));
    expect(kept).toContain('key [REDACTED] look');
  });

  it('keeps the start of an answer of many embedding vectors without serialising all of it', () => {
    const capture = new BodyCapture(settings);
    const vectors = Array.from({ length: 200 }, () => Array.from({ length: 3_072 }, (_, i) => i / 3_072));
    const after = counted();
    (vectors[199] as unknown[]).push(after.value);
    const response = { object: 'list', data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })), model: 'e' };
    capture.add({ kind: 'embeddings', response } as never);
    const kept = capture.bodies({ native: null, request: { model: 'e', input: 'x' } } as unknown as RequestContext).response;
    expect(after.reads()).toBe(0);
    expect(keptPart(kept)).toBe(keptPart(keptBody(JSON.stringify(response), settings)));
  });

  it('never keeps part of a secret when redaction shortens the text past where serialising stopped', () => {
    // Keys shrink to [REDACTED]: the kept text reaches far past what a budget of characters would serialise.
    const keys = Array.from({ length: 400 }, (_, i) => `sk-proj-${String(i).padStart(4, '0')}abcdefghijklmnopqrstuvwxyz0123456789`).join(' ');
    const request = { model: 'm', messages: [{ role: 'user', content: `${keys} secret-1234 ${'z'.repeat(50_000)}` }] };
    const kept = requestBody(request);
    expect(kept).not.toMatch(/sk-proj|secret-\d|sk-|\bsk\b/);
    expect(kept).toBe(keptBody(JSON.stringify(request), settings));
  });

  it('keeps a small body whole, and cuts a larger one on a character boundary', () => {
    expect(requestBody({ model: 'm', messages: [{ role: 'user', content: 'héllo 😀' }] })).toBe('{"model":"m","messages":[{"role":"user","content":"héllo 😀"}]}');
    const cut = requestBody({ model: 'm', messages: [{ role: 'user', content: '😀'.repeat(100_000) }] });
    expect(keptPart(cut)).not.toContain('\uFFFD');
    expect(Buffer.byteLength(keptPart(cut))).toBeLessThanOrEqual(settings.maxBytes);
  });
});

describe('secrets in kept bodies', () => {
  it('redacts a key that follows a newline or a tab, and an operator pattern written with \\b there', () => {
    // Serialised, a newline is `\n`: the key then follows an `n`, which the patterns' word-boundary look-behind took for
    // part of a word, and the key stayed in the log.
    const vk = 'tg-RwFfOBTSBabcdefghijklmnop';
    const kept = requestBody({ model: 'm', messages: [{ role: 'user', content: `line1\nsk-proj-ABCDEFGHIJKLMNOPQRSTUV and\n${vk}\tBearer abcdefgh12345678\r\nsecret-42` }] });
    expect(kept).not.toContain('sk-proj-ABCD');
    expect(kept).not.toContain(vk);
    expect(kept).not.toContain('abcdefgh12345678');
    expect(kept).not.toContain('secret-42');
    expect(JSON.parse(kept).messages[0].content).toBe('line1\n[REDACTED] and\n[REDACTED]\t[REDACTED]\r\n[REDACTED]');
    const card = new BodyCapture({ enabled: true, maxBytes: 2_000, redact: ['\\b\\d{16}\\b'] }).bodies({ native: null, request: { content: 'card:\n4111111111111111' } } as unknown as RequestContext).request;
    expect(card).toBe('{"content":"card:\\n[REDACTED]"}');
  });

  it('redacts the key shapes of Hugging Face, Perplexity, Cerebras, Fireworks, NVIDIA and Replicate', () => {
    const keys = ['hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345', 'pplx-0123456789abcdef0123456789abcdef0123456789abcdef', 'csk-abcdefghij0123456789abcdefghij0123456789', 'fw_3ZabcdefghijKLMNOPQRSTuv', 'nvapi-abcdefghijklmnopqrstuvwxyz0123456789', 'r8_abcdefghijklmnopqrstuvwxyz012345678'];
    const kept = requestBody({ content: keys.join(' and ') });
    for (const key of keys) expect(kept).not.toContain(key);
  });
});
