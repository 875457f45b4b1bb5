import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The provider's rate-limit headers reach the client, as the provider wrote them or in the route's own style, and
// a virtual key's own limits go out instead of the provider's of the same unit. Read through the official SDKs'
// raw responses, as an application pacing itself reads them.

let openai: ScriptedUpstream;
let backup: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let azure: AzureUpstream;
let tg: RunningGateway;

const OPENAI_RESET = /^(\d+ms|[\d.]+s|\d+m[\d.]+s|\d+h\d+m[\d.]+s)$/;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  backup = await startOpenAIUpstream({ apiKey: 'sk-backup' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant' });
  azure = await startAzureUpstream({ apiKey: 'azure-key', deployments: { 'gpt-4o-mini': 'gpt-4o-mini-2024-07-18' } });
  tg = await startGateway({
    // Two attempts: a failed one and the fallback's.
    settings: { routing: { retry: { max_attempts: 2 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant' },
      azure: { base_url: azure.url, api_key: 'azure-key', api_version: '2025-04-01-preview' },
    },
  });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await backup?.close();
  await anthropic?.close();
  await azure?.close();
});

beforeEach(() => {
  openai.reset();
  backup.reset();
  anthropic.reset();
});

function openAIClient(apiKey = 'client-side-key'): OpenAI {
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey, maxRetries: 0, timeout: 15_000 });
}

function anthropicClient(): Anthropic {
  return new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
}

const hi = [{ role: 'user' as const, content: 'hi' }];

describe("the provider's rate-limit headers", () => {
  it('reach an OpenAI client as OpenAI wrote them, the account counting down from one answer to the next', async () => {
    const first = await openAIClient().chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).withResponse();
    const second = await openAIClient().chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi, stream: true }).withResponse();
    for await (const _chunk of second.data);
    expect(first.response.headers.get('x-ratelimit-limit-requests')).toBe('10000');
    expect(first.response.headers.get('x-ratelimit-limit-tokens')).toBe('2000000');
    expect(first.response.headers.get('x-ratelimit-reset-requests')).toMatch(OPENAI_RESET);
    expect(first.response.headers.get('x-ratelimit-reset-tokens')).toMatch(OPENAI_RESET);
    const remaining = (response: Response) => Number(response.headers.get('x-ratelimit-remaining-requests'));
    expect(remaining(first.response)).toBeLessThan(10_000);
    // The stream's headers are its own answer's: one request later on the upstream's count.
    expect(remaining(second.response)).toBe(remaining(first.response) - 1);
  });

  it("reach an OpenAI client of Azure OpenAI, whose answers carry the remaining counts alone", async () => {
    const { response } = await openAIClient().chat.completions.create({ model: 'azure/gpt-4o-mini', messages: hi }).withResponse();
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('99000');
    expect(response.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });

  it('reach an Anthropic client as Anthropic wrote them, every group', async () => {
    const { response } = await anthropicClient().messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: hi }).withResponse();
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('1000');
    expect(response.headers.get('anthropic-ratelimit-tokens-limit')).toBe('90000');
    expect(response.headers.get('anthropic-ratelimit-input-tokens-remaining')).toBe('79500');
    expect(response.headers.get('anthropic-ratelimit-output-tokens-limit')).toBe('16000');
    expect(Date.parse(response.headers.get('anthropic-ratelimit-requests-reset') ?? '')).toBeGreaterThan(Date.now());
    // No OpenAI-style copies on Anthropic's own route.
    expect(response.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });

  it("reach an OpenAI client of an Anthropic model in OpenAI's style, the reset as a duration", async () => {
    const { response } = await openAIClient().chat.completions.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: hi }).withResponse();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('1000');
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('90000');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('89000');
    const reset = response.headers.get('x-ratelimit-reset-requests') ?? '';
    // The upstream said a minute from its answer: a duration just under that.
    expect(reset).toMatch(/^(\d{2}(\.\d+)?s|1m0s)$/);
    expect(Number.parseFloat(reset)).toBeGreaterThan(50);
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBeNull();
  });

  it("reach an Anthropic client of an OpenAI model in Anthropic's style, the reset as a time", async () => {
    const { response } = await anthropicClient().messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages: hi }).withResponse();
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('10000');
    expect(response.headers.get('anthropic-ratelimit-tokens-limit')).toBe('2000000');
    const reset = Date.parse(response.headers.get('anthropic-ratelimit-requests-reset') ?? '');
    expect(reset).toBeGreaterThanOrEqual(Date.now() - 5_000);
    expect(reset).toBeLessThanOrEqual(Date.now() + 61_000);
  });

  it("are the answering attempt's: a fallback's answer does not carry the failed attempt's exhausted limits", async () => {
    openai.setMode({ kind: 'error', status: 429 });
    const { response } = await openAIClient()
      .chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi, fallbacks: ['backup/gpt-4o-mini'] } as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    expect(openai.calls.length).toBe(1);
    expect(response.headers.get('x-tollgate-provider')).toBe('backup');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('9999');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).not.toBe('0');
  });

  it("reach the client on the upstream's own 429, so it can see the account is exhausted", async () => {
    openai.setMode({ kind: 'error', status: 429 });
    const failed = await openAIClient().chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(OpenAI.RateLimitError);
    const headers = (failed as InstanceType<typeof OpenAI.RateLimitError>).headers;
    expect(headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(headers?.get('x-ratelimit-limit-requests')).toBe('10000');
  });

  it("give way to a virtual key's own limit of the same unit, and only that unit", async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'paced', rate_limit: 7, models: [] });
    expect(created.status).toBe(201);
    const { response } = await openAIClient(created.body.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).withResponse();
    // Requests: the key's limit of 7 a minute, which the client meets before the account's 10,000.
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('7');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('6');
    // Tokens: the key limits none, so the account's.
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('2000000');
  });
});

describe("the gateway's own limits on /anthropic", () => {
  it("go out under Anthropic's names too, on answers and on the key's own 429", async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'anthropic-paced', rate_limit: 1, models: [] });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    const { response } = await client.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: hi }).withResponse();
    expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('1');
    expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    // The account's token groups still come, the key limiting no tokens.
    expect(response.headers.get('anthropic-ratelimit-tokens-limit')).toBe('90000');
    const refused = await client.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 16, messages: hi }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    const headers = (refused as InstanceType<typeof Anthropic.RateLimitError>).headers;
    expect(headers?.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(Date.parse(headers?.get('anthropic-ratelimit-requests-reset') ?? '')).toBeGreaterThan(Date.now());
  });
});

describe('settings.upstream_rate_limit_headers: false', () => {
  it("keeps the provider account's limits to the operator", async () => {
    const quiet = await startGateway({ settings: { upstream_rate_limit_headers: false }, providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' } } });
    try {
      const client = new OpenAI({ baseURL: `${quiet.url}/v1`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
      const { response } = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).withResponse();
      expect(openai.calls.length).toBe(1);
      expect(response.headers.get('x-upstream-request-id')).toMatch(/^req_/);
      for (const name of ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-limit-tokens', 'x-ratelimit-reset-tokens']) {
        expect(response.headers.get(name)).toBeNull();
      }
    } finally {
      await quiet.stop();
    }
  });
});
