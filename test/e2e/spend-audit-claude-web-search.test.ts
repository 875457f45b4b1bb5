import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { calcPrice } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { WEB_SEARCH_TOOL } from '../upstream/anthropic-upstream.js';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';

/**
 * Claude's web search tool costs $10 per 1,000 searches (platform.claude.com, web search tool pricing), and Claude on
 * Vertex AI bills its searches at the same rate. The bundled catalogue prices searches for Anthropic's own API only, so
 * a search Claude ran on Vertex AI (usage.server_tool_use.web_search_requests) was charged nothing. The expected charge
 * is worked out by hand from the catalogue's token rates for Vertex AI plus $0.01 a search.
 */
const MODEL = 'claude-sonnet-4-5';
const PER_SEARCH_USD = 10 / 1_000;

let vertex: VertexUpstream;
let tg: RunningGateway;
let dir: string;
const { api, createKey } = gatewayApi(() => tg.url);

beforeAll(async () => {
  vertex = await startVertexUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tg-spend-search-'));
  const keyFile = join(dir, 'sa.json');
  writeFileSync(keyFile, vertex.serviceAccount, { mode: 0o600 });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { vertex: { base_url: vertex.url, api_key: `file:${keyFile}`, region: 'europe-west4' } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await vertex?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The Vertex AI catalogue's price of the tokens alone (no searches), as genai-prices computes it. */
function tokenCost(usage: Anthropic.Usage): number {
  const read = usage.cache_read_input_tokens ?? 0;
  const write = usage.cache_creation_input_tokens ?? 0;
  const found = calcPrice({ input_tokens: usage.input_tokens + read + write, cache_read_tokens: read, cache_write_tokens: write, output_tokens: usage.output_tokens }, MODEL, { providerId: 'google' });
  if (!found || found.provider.id !== 'google') throw new Error(`the google catalogue has no price for ${MODEL}`);
  return found.total_price;
}

/** The key's spend and its one logged request's cost. */
async function charged(keyId: string): Promise<{ spend: number; logged: number }> {
  let logged: Array<Record<string, number>> = [];
  for (const deadline = Date.now() + 5_000; logged.length === 0 && Date.now() < deadline; ) {
    logged = (await api('GET', `/api/logs?key_id=${keyId}`)).body.data;
    if (logged.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(logged).toHaveLength(1);
  return { spend: (await api('GET', `/api/keys/${keyId}`)).body.spend, logged: logged[0]?.cost_usd as number };
}

const search = {
  model: `vertex/${MODEL}`,
  max_tokens: 300,
  tools: [{ type: WEB_SEARCH_TOOL, name: 'web_search', max_uses: 3 } as const],
  messages: [{ role: 'user' as const, content: 'search the web for tollgate' }],
};

describe('Claude web searches on Vertex AI', () => {
  it('are charged $10 per 1,000 searches (whole answer)', async () => {
    const key = await createKey({ name: 'vertex-search-whole' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const message = await client.messages.create(search);
    expect(vertex.calls.at(-1)?.path).toMatch(/:rawPredict$/);
    const searches = message.usage.server_tool_use?.web_search_requests ?? 0;
    expect(searches).toBe(1);
    const expected = tokenCost(message.usage) + searches * PER_SEARCH_USD;
    const { spend, logged } = await charged(key.id);
    expect(logged).toBeCloseTo(expected, 9);
    expect(spend).toBeCloseTo(expected, 9);
  });

  it('are charged $10 per 1,000 searches from a stream, where message_delta reports them', async () => {
    const key = await createKey({ name: 'vertex-search-stream' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const message = await client.messages.stream(search).finalMessage();
    expect(vertex.calls.at(-1)?.path).toMatch(/:streamRawPredict$/);
    const searches = message.usage.server_tool_use?.web_search_requests ?? 0;
    expect(searches).toBe(1);
    const expected = tokenCost(message.usage) + searches * PER_SEARCH_USD;
    const { spend, logged } = await charged(key.id);
    expect(logged).toBeCloseTo(expected, 9);
    expect(spend).toBeCloseTo(expected, 9);
  });
});
