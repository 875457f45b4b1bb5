import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * Token counts answer as the real APIs do. On /anthropic a count Anthropic makes reaches the client as Anthropic wrote
 * it (fields beside input_tokens included: `context_management` when context editing trimmed the prompt). On /genai
 * countTokens for a model the gateway cannot resolve is the 404 generateContent gets, not an estimate.
 */

/** Anthropic's count_tokens answer when context editing applied, written as Anthropic writes it. */
const ANTHROPIC_COUNT = '{"input_tokens":42,"context_management":{"original_input_tokens":50}}';

interface CountServer {
  url: string;
  paths: string[];
  server: Server;
}

/** Anthropic's count_tokens endpoint, scripted: the answer above for any body. */
async function startCountServer(): Promise<CountServer> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      paths.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(ANTHROPIC_COUNT);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths, server };
}

let counter: CountServer;
let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  counter = await startCountServer();
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${counter.url}/v1`, api_key: 'sk-ant-counter' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
    },
    routes: { 'gemini-route': { targets: [{ model: 'gemini/gemini-2.5-flash' }] } },
  });
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await new Promise((resolve) => counter?.server.close(resolve));
});

beforeEach(() => {
  counter.paths.length = 0;
  gemini.reset();
});

describe('/anthropic count_tokens', () => {
  it("passes Anthropic's whole answer on, context_management included", { timeout: 15_000 }, async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 10_000 });
    const count = await client.messages.countTokens({ model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'count me' }] });
    expect(counter.paths).toEqual(['/v1/messages/count_tokens']);
    expect(count).toEqual({ input_tokens: 42, context_management: { original_input_tokens: 50 } });
    // Byte for byte, as Anthropic wrote it.
    const raw = await fetch(`${tg.url}/anthropic/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'count me' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(raw.status).toBe(200);
    expect(await raw.text()).toBe(ANTHROPIC_COUNT);
  });
});

describe('/genai countTokens', () => {
  const ai = (): GoogleGenAI => new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 10_000 } });

  it('answers a model the gateway cannot resolve with the 404 generateContent gives', { timeout: 15_000 }, async () => {
    const generated = await ai().models.generateContent({ model: 'nosuch/x', contents: 'hi' }).catch((err: unknown) => err);
    const counted = await ai().models.countTokens({ model: 'nosuch/x', contents: 'hi' }).catch((err: unknown) => err);
    expect(generated).toBeInstanceOf(ApiError);
    expect(counted).toBeInstanceOf(ApiError);
    expect((counted as ApiError).status).toBe(404);
    const body = JSON.parse((counted as ApiError).message) as { error: { code: number; status: string; message: string } };
    expect(body).toEqual(JSON.parse((generated as ApiError).message));
    expect(body.error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
    // The URL-encoded spelling a raw client writes, too.
    const encoded = await fetch(`${tg.url}/genai/v1beta/models/nosuch%2Fx:countTokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"contents":[{"parts":[{"text":"hi"}]}]}',
      signal: AbortSignal.timeout(10_000),
    });
    expect(encoded.status).toBe(404);
    expect(((await encoded.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');
    expect(gemini.calls).toHaveLength(0);
  });

  it('still estimates for a model it serves and for a route, calling no upstream', { timeout: 15_000 }, async () => {
    for (const model of ['gemini-2.5-flash', 'gemini/gemini-2.5-flash', 'gemini-route']) {
      const counted = await ai().models.countTokens({ model, contents: 'how many tokens is this' });
      expect(counted.totalTokens, model).toBeGreaterThan(5);
    }
    expect(gemini.calls).toHaveLength(0);
  });
});
