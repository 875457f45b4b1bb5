import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Review of a991e6b / 6d6aa6f: README says "A virtual key's or team's own limit of the same unit goes out instead of
// the provider's (the client meets it first), unit by unit". Two cases where the provider's goes out instead.

let openai: ScriptedUpstream;
let backup: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  backup = await startOpenAIUpstream({ apiKey: 'sk-backup' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant' },
      // Nothing listens there: an attempt on it fails before any answer (no headers of its own).
      dead: { type: 'openai', base_url: 'http://127.0.0.1:1/v1', api_key: 'sk-dead' },
    },
  });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await backup?.close();
  await anthropic?.close();
});

beforeEach(() => {
  openai.reset();
  backup.reset();
  anthropic.reset();
});

const hi = [{ role: 'user' as const, content: 'hi' }];

async function createKey(body: Record<string, unknown>): Promise<string> {
  const created = await jsonRequest(tg.url, 'POST', '/api/keys', { models: [], ...body });
  expect(created.status).toBe(201);
  return created.body.key as string;
}

describe("review: a key's own request limit against the provider's rate-limit headers", () => {
  it("on /anthropic, an Anthropic client reads the key's request limit, not the provider account's 1000", async () => {
    const key = await createKey({ name: 'paced-anthropic', rate_limit: 7 });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const { response } = await client.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: hi }).withResponse();
    // The key allows 7 requests a minute; the header an Anthropic SDK user paces by says the provider's 1000.
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('7');
  });

  it("after a failed attempt, the fallback model's per-key limit is not replaced by the fallback provider's", async () => {
    const key = await createKey({ name: 'model-paced', model_rate_limits: { 'backup/gpt-4o-mini': 5 } });
    openai.setMode({ kind: 'error', status: 429 });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const { response } = await client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: hi, fallbacks: ['backup/gpt-4o-mini'] } as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    expect(response.headers.get('x-tollgate-provider')).toBe('backup');
    // The key allows 5 requests a minute on backup/gpt-4o-mini: the client meets that first.
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('5');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('4');
  });

  it('control: the same per-model limit without a failed attempt before it is shown', async () => {
    const key = await createKey({ name: 'model-paced-direct', model_rate_limits: { 'backup/gpt-4o-mini': 5 } });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const { response } = await client.chat.completions.create({ model: 'backup/gpt-4o-mini', messages: hi }).withResponse();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('5');
  });
});

describe("review: the answering attempt's rate-limit headers only", () => {
  it("an error carries its own attempt's limits: a fallback no upstream answered leaves the request with the earlier 429, and that 429's headers", async () => {
    openai.setMode({ kind: 'error', status: 429 });
    const response = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer client-side-key' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: hi, fallbacks: ['dead/gpt-4o-mini'] }),
    });
    // The fallback reached no upstream: the request ends with the error of the last target called, openai's 429 ...
    expect(response.status).toBe(429);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
    // ... with that answer's account state, as it came.
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('10000');
  });
});
