import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** The model lists of every route follow the virtual-key rules: a key that cannot call cannot list either. */

let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
});
afterAll(async () => {
  await upstream.close();
});

const LISTS: Array<{ path: string; headers: (key: string) => Record<string, string>; shape: (body: any) => unknown }> = [
  { path: '/v1/models', headers: (key) => ({ authorization: `Bearer ${key}` }), shape: (body) => body.error?.code },
  { path: '/litellm/models', headers: (key) => ({ authorization: `Bearer ${key}` }), shape: (body) => body.error?.code },
  { path: '/anthropic/v1/models', headers: (key) => ({ 'x-api-key': key }), shape: (body) => body.type === 'error' && body.error?.type },
  { path: '/genai/v1beta/models', headers: (key) => ({ 'x-goog-api-key': key }), shape: (body) => body.error?.status },
];

async function list(tg: RunningGateway, path: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const response = await fetch(`${tg.url}${path}`, { headers });
  return { status: response.status, body: await response.json() };
}

describe('model lists', () => {
  it('refuse a key that is unknown or disabled, in each route\'s error shape, and answer a live one', async () => {
    const tg = await startGateway(openAIConfig(upstream.url));
    try {
      const live = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'live' })).body as { key: string };
      const disabled = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'off' })).body as { id: string; key: string };
      expect((await jsonRequest(tg.url, 'PATCH', `/api/keys/${disabled.id}`, { disabled: true })).status).toBe(200);
      for (const { path, headers, shape } of LISTS) {
        const unknown = await list(tg, path, headers('tg-unknownunknownunknown1234'));
        expect(unknown.status, path).toBe(401);
        expect(shape(unknown.body), path).toBeTruthy();
        expect((await list(tg, path, headers(disabled.key))).status, path).toBe(401);
        expect((await list(tg, path, headers(live.key))).status, path).toBe(200);
      }
      // A client on this machine without a key is served, as its calls are.
      expect((await list(tg, '/v1/models', {})).status).toBe(200);
    } finally {
      await tg.stop();
    }
  });

  it('need a key under require_virtual_key', async () => {
    const tg = await startGateway(openAIConfig(upstream.url, { settings: { require_virtual_key: true } }));
    try {
      for (const { path } of LISTS) expect((await list(tg, path, {})).status, path).toBe(401);
    } finally {
      await tg.stop();
    }
  });
});
