import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../helpers/gateway.js';
import { startThreeUpstreams, type ThreeUpstreams } from '../helpers/three-upstreams.js';
import type { AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import type { GeminiUpstream } from '../upstream/gemini-upstream.js';
import type { ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A request body whose bytes are not UTF-8 is refused with a 400 in the route's own error shape (the one its JSON
 * syntax errors use), not decoded with each bad byte turned into U+FFFD and sent upstream as text the client never
 * wrote. The bodies are sent raw: an SDK only ever sends UTF-8.
 */

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

let rig: ThreeUpstreams | undefined;
beforeAll(async () => {
  rig = await startThreeUpstreams({ routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } });
  ({ openai, anthropic, gemini, tg } = rig);
}, 30_000);
afterAll(async () => {
  await rig?.stop();
});
beforeEach(() => rig?.reset());

/** Bytes FF FE C3 inside the text of the one message: no UTF-8 sequence starts with FF or FE, and C3 ends unfinished. */
function withBadBytes(before: string, after: string): Buffer {
  return Buffer.concat([Buffer.from(before, 'utf8'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(after, 'utf8')]);
}

const ROUTES = {
  openai: { path: '/v1/chat/completions', body: withBadBytes('{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi ', '"}]}') },
  anthropic: { path: '/anthropic/v1/messages', body: withBadBytes('{"model":"anthropic/claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi ', '"}]}') },
  gemini: { path: '/genai/v1beta/models/gemini-2.0-flash:generateContent?key=k', body: withBadBytes('{"contents":[{"role":"user","parts":[{"text":"hi ', '"}]}]}') },
};

/** POSTs `chunks` one write each (a body can split anywhere), with the headers given. */
function send(path: string, chunks: Buffer[], headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const url = new URL(path, tg.url);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, timeout: 10_000 }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

function expectNoUpstreamCalls(): void {
  expect(openai.calls).toHaveLength(0);
  expect(anthropic.calls).toHaveLength(0);
  expect(gemini.calls).toHaveLength(0);
}

describe('a request body that is not UTF-8', () => {
  it('/v1: 400 in OpenAI shape, as a JSON syntax error there', { timeout: 15_000 }, async () => {
    const res = await send(ROUTES.openai.path, [ROUTES.openai.body]);
    const syntax = await send(ROUTES.openai.path, [Buffer.from('{"model":')]);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error).sort()).toEqual(Object.keys(syntax.body.error).sort());
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_body' });
    expect(res.body.error.message).toContain('not valid UTF-8');
    expectNoUpstreamCalls();
  });

  it('/anthropic: 400 in Anthropic shape', { timeout: 15_000 }, async () => {
    const res = await send(ROUTES.anthropic.path, [ROUTES.anthropic.body]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.body.error.message).toContain('not valid UTF-8');
    expectNoUpstreamCalls();
  });

  it('/genai: 400 in Google shape', { timeout: 15_000 }, async () => {
    const res = await send(ROUTES.gemini.path, [ROUTES.gemini.body]);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(res.body.error.message).toContain('not valid UTF-8');
    expectNoUpstreamCalls();
  });

  it('is checked after a gzip body is inflated', { timeout: 15_000 }, async () => {
    const res = await send(ROUTES.anthropic.path, [gzipSync(ROUTES.anthropic.body)], { 'content-encoding': 'gzip' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('not valid UTF-8');
    expectNoUpstreamCalls();
  });
});

describe('UTF-8 bodies go on as before', () => {
  it('a character split across two writes, and a leading byte order mark', { timeout: 15_000 }, async () => {
    const text = Buffer.from('\ufeff{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"naïve 数据 🙂"}]}', 'utf8');
    const emoji = text.indexOf(Buffer.from('🙂', 'utf8'));
    const res = await send(ROUTES.openai.path, [text.subarray(0, emoji + 2), text.subarray(emoji + 2)]);
    expect(res.status).toBe(200);
    expect(openai.calls.at(-1)!.raw).toContain('naïve 数据 🙂');
  });

  it('from each SDK', { timeout: 20_000 }, async () => {
    const content = 'naïve 数据 🙂';
    await new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'k', maxRetries: 0, timeout: 10_000 }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] });
    await new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'k', maxRetries: 0, timeout: 10_000 }).messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content }] });
    await new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 10_000 } }).models.generateContent({ model: 'gemini-2.0-flash', contents: content });
    expect(openai.calls.at(-1)!.raw).toContain(content);
    expect(anthropic.calls.at(-1)!.raw).toContain(content);
    expect(gemini.calls.at(-1)!.raw).toContain(content);
  });
});
