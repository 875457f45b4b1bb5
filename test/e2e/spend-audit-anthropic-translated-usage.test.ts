import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * An `/anthropic` answer translated from an OpenAI-format provider carries, in Anthropic's usage fields, what the
 * upstream reported where the meaning is the same (platform.claude.com, Messages usage object): input_tokens leaves
 * the cache out, cache_read_input_tokens and cache_creation_input_tokens are the cache parts, cache_creation splits
 * the writes by lifetime and server_tool_use.web_search_requests counts the searches. The search count (Perplexity's
 * num_search_queries, or Anthropic's own names passed on by a proxy of Claude) and the writes' split were dropped.
 */
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let client: Anthropic;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
      perplexity: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
    },
  });
  client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-key', maxRetries: 0 });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const messages = [{ role: 'user' as const, content: 'search the web for tollgate' }];

/** A proxy of Claude (OpenRouter's shape): OpenAI's counts plus Anthropic's own meters under Anthropic's names. */
const PROXIED_CLAUDE = {
  prompt_tokens: 1_000,
  completion_tokens: 20,
  total_tokens: 1_020,
  prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 500 },
  cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 300 },
  server_tool_use: { web_search_requests: 2 },
};
const PROXIED_CLAUDE_USAGE = {
  input_tokens: 400,
  output_tokens: 20,
  cache_read_input_tokens: 100,
  cache_creation_input_tokens: 500,
  cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 300 },
  server_tool_use: { web_search_requests: 2 },
};

/** The usage of the raw stream's message_delta, as it went out (the SDK's accumulated message keeps only some fields). */
async function streamedUsage(model: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${tg.url}/anthropic/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'client-key', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 100, stream: true, messages }),
  });
  expect(response.status).toBe(200);
  const text = await response.text();
  const delta = text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as { type: string; usage?: Record<string, unknown> })
    .find((data) => data.type === 'message_delta');
  return delta?.usage ?? {};
}

describe('an /anthropic answer translated from an OpenAI-format provider', () => {
  it("reports Perplexity's searches as server_tool_use.web_search_requests (whole answer)", async () => {
    upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42, num_search_queries: 3 } });
    const message = await client.messages.create({ model: 'perplexity/sonar-pro', max_tokens: 100, messages });
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 3 });
    expect(message.usage.input_tokens).toBe(30);
  });

  it("reports a proxied Claude's cache parts, writes by lifetime and searches (whole answer)", async () => {
    upstream.enqueue({ kind: 'usage', usage: PROXIED_CLAUDE });
    const message = await client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 100, messages });
    expect(message.usage).toMatchObject(PROXIED_CLAUDE_USAGE);
  });

  it("reports a proxied Claude's cache parts, writes by lifetime and searches in a stream's message_delta", async () => {
    upstream.enqueue({ kind: 'usage', usage: PROXIED_CLAUDE });
    expect(await streamedUsage('openai/gpt-4o-mini')).toMatchObject(PROXIED_CLAUDE_USAGE);
  });
});
