import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { ConfigInput } from '../../src/config/schema.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// An account out of credit, past a spend limit or without billing is the operator's to mend, and no wait mends it: a
// key from the gateway's config that answers so is not retried, the request moves on at once to the provider's other
// keys and the fallbacks, and the key is paused for the breaker's cool-down (as OpenAI's 429 insufficient_quota already
// was). Other providers say it otherwise, and tollgate sent those answers straight back to the client (a 402 or 400, a
// client error), though the route had a fallback, or took a spend cap's 429 for a rate limit (paused a second, retried).
// The bodies below are the providers' own, from their docs and public issues (see each case).

const JSON_TYPE = { 'content-type': 'application/json' };

interface Case {
  name: string;
  status: number;
  body: string;
}

/** OpenAI-format upstreams (the OpenAI-compatible adapter), called through the OpenAI SDK. */
const OPENAI_FORMAT: Case[] = [
  {
    // api-docs.deepseek.com/quick_start/error_codes: "402 - Insufficient Balance: You have run out of balance". Body as reported.
    name: "DeepSeek's 402 Insufficient Balance",
    status: 402,
    body: JSON.stringify({ error: { message: 'Insufficient Balance', type: 'unknown_error', param: null, code: 'invalid_request_error' } }),
  },
  {
    // openrouter.ai/docs/errors: "402: Your account or API key has insufficient credits."
    name: "OpenRouter's 402 insufficient credits",
    status: 402,
    body: JSON.stringify({ error: { code: 402, message: 'Insufficient credits. Add more using https://openrouter.ai/settings/credits', metadata: { limit_source: 'openrouter_credits' } } }),
  },
  {
    // docs.together.ai/docs/error-codes: "402 - Payment Required: the account ... has reached its maximum allowed monthly spending limit."
    name: "Together's 402 spending limit",
    status: 402,
    body: JSON.stringify({ error: { message: 'Payment Required: monthly spending limit reached.', type: 'invalid_request_error', param: null, code: null } }),
  },
  {
    // console.groq.com/docs/spend-limits: "API calls from any key in your organization will return a 400 with code blocked_api_access".
    name: "Groq's 400 blocked_api_access (its spend limit)",
    status: 400,
    body: JSON.stringify({ error: { message: 'API access is blocked for this organization.', type: 'invalid_request_error', code: 'blocked_api_access' } }),
  },
  {
    // continuedev/continue issues 10373 and 10740: xAI's 429 for a team out of credit (its body: `code` and `error`).
    name: "xAI's 429 for a team without credit",
    status: 429,
    body: JSON.stringify({
      code: 'Some resource has been exhausted',
      error: 'Your team 16f2151a-40f4-4a80-8ad0-cae00c27e8dd has either used all available credits or reached its monthly spending limit. To continue making API requests, please purchase more credits or raise your spending limit.',
    }),
  },
];

/** Anthropic upstreams, called through the Anthropic SDK on /anthropic. */
const ANTHROPIC_FORMAT: Case[] = [
  {
    // platform.claude.com/docs/en/api/errors: "402 - billing_error: There's an issue with your billing or payment information."
    name: "Anthropic's 402 billing_error",
    status: 402,
    body: JSON.stringify({ type: 'error', error: { type: 'billing_error', message: 'There is an issue with your billing or payment information.' }, request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy' }),
  },
  {
    // anthropics/anthropic-sdk-typescript issue 618: a valid request with insufficient credit gets a 400 with this message.
    name: "Anthropic's 400 credit balance too low",
    status: 400,
    body: JSON.stringify({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.' },
      request_id: 'req_011CSHoEeqs5C35K2UUqR7Fz',
    }),
  },
  {
    // platform.claude.com/docs/en/api/errors: a 400 when usage reaches a spend limit the organization or workspace set.
    name: "Anthropic's 400 spend limit reached",
    status: 400,
    body: JSON.stringify({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC.' },
      request_id: 'req_011CSHoEeqs5C35K2UUqR7G0',
    }),
  },
  {
    // platform.claude.com/docs/en/api/rate-limits: a usage tier's monthly spend cap, a 429 rate_limit_error without retry-after.
    name: "Anthropic's 429 enforced_spend_limit_reached",
    status: 429,
    body: JSON.stringify({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: "You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-12-01 at 00:00 UTC.",
        details: { error_code: 'enforced_spend_limit_reached' },
      },
      request_id: 'req_018EeWyXxfu5pfWkrYcMdjWG',
    }),
  },
];

/** Gemini upstreams (the Gemini adapter), called through the OpenAI SDK. */
const GEMINI_FORMAT: Case[] = [
  {
    // discuss.ai.google.dev "API update: Depleted prepay credits now return HTTP 402 instead of 429".
    name: "Gemini's 402 depleted prepay credits",
    status: 402,
    body: JSON.stringify({
      error: {
        code: 402,
        message: 'Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing. Learn more at https://ai.google.dev/gemini-api/docs/billing#prepay.',
        status: 'RESOURCE_EXHAUSTED',
      },
    }),
  },
  {
    // ai.google.dev/gemini-api/docs/troubleshooting: 400 FAILED_PRECONDITION for a project without billing where the free tier is not offered.
    name: "Gemini's 400 FAILED_PRECONDITION (enable billing)",
    status: 400,
    body: JSON.stringify({
      error: { code: 400, message: 'Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.', status: 'FAILED_PRECONDITION' },
    }),
  },
];

let broke: ScriptedUpstream;
let healthy: ScriptedUpstream;
let claude: AnthropicUpstream;
let gemini: GeminiUpstream;
let cohere: CohereUpstream;
let tg: RunningGateway | null = null;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [broke, healthy, claude, gemini, cohere] = await Promise.all([
    startOpenAIUpstream(),
    startOpenAIUpstream(),
    startAnthropicUpstream({ apiKey: null }),
    startGeminiUpstream({ apiKey: null }),
    startCohereUpstream({ apiKey: 'co-broke-account' }),
  ]);
});
afterAll(async () => {
  await Promise.all([broke.close(), healthy.close(), claude.close(), gemini.close(), cohere.close()]);
});
afterEach(async () => {
  await tg?.stop();
  tg = null;
  broke.reset();
  healthy.reset();
  claude.reset();
  gemini.reset();
  cohere.reset();
});

async function start(): Promise<RunningGateway> {
  const config: ConfigInput = {
    providers: {
      broke: { type: 'openai', base_url: `${broke.url}/v1`, api_key: 'sk-broke-account' },
      healthy: { type: 'openai', base_url: `${healthy.url}/v1`, api_key: 'sk-healthy-account' },
      // No key of its own: a client brings one (x-tollgate-provider-key).
      byok: { type: 'openai', base_url: `${broke.url}/v1` },
      claude: { type: 'anthropic', base_url: `${claude.url}/v1`, api_key: 'sk-ant-broke-account' },
      gem: { type: 'gemini', base_url: `${gemini.url}/v1beta`, api_key: 'gemini-broke-account' },
      co: { type: 'cohere', base_url: `${cohere.url}/v2`, api_key: 'co-broke-account' },
    },
    settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 } } },
    routes: {
      chat: { targets: [{ model: 'broke/gpt-4o-mini' }], fallbacks: ['healthy/gpt-4o-mini'] },
      'claude-chat': { targets: [{ model: 'claude/claude-sonnet-4-5' }], fallbacks: ['healthy/gpt-4o-mini'] },
      'gemini-chat': { targets: [{ model: 'gem/gemini-2.5-flash' }], fallbacks: ['healthy/gpt-4o-mini'] },
      'cohere-chat': { targets: [{ model: 'co/command-a-03-2025' }], fallbacks: ['healthy/gpt-4o-mini'] },
      'own-key': { targets: [{ model: 'byok/gpt-4o-mini' }], fallbacks: ['healthy/gpt-4o-mini'] },
    },
  };
  tg = await startGateway(config);
  return tg;
}

function anthropicClient(gateway: RunningGateway): Anthropic {
  return new Anthropic({ baseURL: `${gateway.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
}

/** Past the pause a rate limit without retry-after gets (1 s): an account that cannot pay still cannot. */
const pastRateLimitPause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1_300));

describe('an upstream error saying the account of a key from the config cannot pay', () => {
  describe.each(OPENAI_FORMAT)('$name', ({ status, body }) => {
    it('moves on to the fallback at once, and later requests go to the fallback without calling that key again', async () => {
      const gateway = await start();
      broke.setMode({ kind: 'raw', status, headers: JSON_TYPE, body });
      const first = await gateway.client.chat.completions.create({ model: 'chat', messages }).withResponse();
      expect(first.data.choices[0]?.message.content).toBe('echo: hi');
      expect(first.response.headers.get('x-tollgate-provider')).toBe('healthy');
      expect(broke.calls).toHaveLength(1);
      await pastRateLimitPause();
      const second = await gateway.client.chat.completions.create({ model: 'chat', messages }).withResponse();
      expect(second.response.headers.get('x-tollgate-provider')).toBe('healthy');
      expect(broke.calls).toHaveLength(1);
      expect(healthy.calls).toHaveLength(2);
    });

    it('with nowhere else to go, reaches the client once, with the status and error the upstream wrote', async () => {
      const gateway = await start();
      broke.setMode({ kind: 'raw', status, headers: JSON_TYPE, body });
      const startedAt = Date.now();
      const failure = await gateway.client.chat.completions.create({ model: 'broke/gpt-4o-mini', messages }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      const error = failure as InstanceType<typeof OpenAI.APIError>;
      expect(error.status).toBe(status);
      const upstream = JSON.parse(body) as { error: unknown };
      // OpenAI's error object as written; a bare `{"error": "..."}` (xAI's) as its message.
      if (typeof upstream.error === 'string') expect(error.message).toContain(upstream.error);
      else expect(error.error).toMatchObject({ message: (upstream.error as { message: string }).message });
      expect(error.headers?.get('x-tollgate-attempts')).toBe('1');
      expect(broke.calls).toHaveLength(1);
      expect(Date.now() - startedAt).toBeLessThan(900);
    });
  });

  describe.each(ANTHROPIC_FORMAT)('$name', ({ status, body }) => {
    it('moves on to the fallback at once, and later requests go to the fallback without calling that key again', async () => {
      const gateway = await start();
      claude.setMode({ kind: 'raw', status, headers: JSON_TYPE, body });
      const client = anthropicClient(gateway);
      const params = { model: 'claude-chat', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };
      const first = await client.messages.create(params).withResponse();
      expect(first.data.content).toEqual([expect.objectContaining({ type: 'text', text: 'echo: hi' })]);
      expect(first.response.headers.get('x-tollgate-provider')).toBe('healthy');
      expect(claude.calls).toHaveLength(1);
      await pastRateLimitPause();
      const second = await client.messages.create(params).withResponse();
      expect(second.response.headers.get('x-tollgate-provider')).toBe('healthy');
      expect(claude.calls).toHaveLength(1);
      expect(healthy.calls).toHaveLength(2);
    });

    it('with nowhere else to go, reaches the client once, with the status, type and message the upstream wrote', async () => {
      const gateway = await start();
      claude.setMode({ kind: 'raw', status, headers: JSON_TYPE, body });
      const startedAt = Date.now();
      const failure = await anthropicClient(gateway)
        .messages.create({ model: 'claude/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
        .catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(Anthropic.APIError);
      const error = failure as InstanceType<typeof Anthropic.APIError>;
      expect(error.status).toBe(status);
      const written = (JSON.parse(body) as { error: { type: string; message: string } }).error;
      expect(error.error).toMatchObject({ type: 'error', error: { type: written.type, message: written.message } });
      expect(error.headers?.get('x-tollgate-attempts')).toBe('1');
      expect(claude.calls).toHaveLength(1);
      expect(Date.now() - startedAt).toBeLessThan(900);
    });
  });

  describe.each(GEMINI_FORMAT)('$name', ({ status, body }) => {
    it('moves on to the fallback at once, and later requests go to the fallback without calling that key again', async () => {
      const gateway = await start();
      gemini.setMode({ kind: 'raw', status, headers: JSON_TYPE, body });
      const first = await gateway.client.chat.completions.create({ model: 'gemini-chat', messages }).withResponse();
      expect(first.data.choices[0]?.message.content).toBe('echo: hi');
      expect(first.response.headers.get('x-tollgate-provider')).toBe('healthy');
      expect(gemini.calls).toHaveLength(1);
      await pastRateLimitPause();
      const second = await gateway.client.chat.completions.create({ model: 'gemini-chat', messages }).withResponse();
      expect(second.response.headers.get('x-tollgate-provider')).toBe('healthy');
      expect(gemini.calls).toHaveLength(1);
      expect(healthy.calls).toHaveLength(2);
    });
  });

  it("Cohere's 402 (a billing limit, no payment method) moves on to the fallback at once, and later requests skip that key", async () => {
    // docs.cohere.com/errors-reference: "402 responses are sent when the account has reached its billing limit"; the
    // scripted upstream answers with Cohere's documented message.
    const gateway = await start();
    cohere.setMode({ kind: 'error', status: 402 });
    const first = await gateway.client.chat.completions.create({ model: 'cohere-chat', messages }).withResponse();
    expect(first.data.choices[0]?.message.content).toBe('echo: hi');
    expect(first.response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(cohere.calls).toHaveLength(1);
    await pastRateLimitPause();
    const second = await gateway.client.chat.completions.create({ model: 'cohere-chat', messages }).withResponse();
    expect(second.response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(cohere.calls).toHaveLength(1);
    expect(healthy.calls).toHaveLength(2);
  });
});

describe("the same error to a key the client brought", () => {
  it.each(OPENAI_FORMAT.filter((c) => c.status === 402))('($name) goes straight back to the client, fallbacks untried', async ({ status, body }) => {
    const gateway = await start();
    broke.setMode({ kind: 'raw', status, headers: JSON_TYPE, body });
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-tollgate-provider-key': 'sk-client-own-key' } });
    const failure = await client.chat.completions.create({ model: 'own-key', messages }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
    expect(broke.calls).toHaveLength(1);
    expect(broke.calls[0]?.headers.authorization).toBe('Bearer sk-client-own-key');
    expect(healthy.calls).toHaveLength(0);
  });
});

describe('errors that are not about paying', () => {
  it('a 400 whose message only quotes such words later on stays the client\'s bad request, the fallback untried', async () => {
    const gateway = await start();
    broke.setMode({
      kind: 'raw',
      status: 400,
      headers: JSON_TYPE,
      body: JSON.stringify({ error: { message: "Invalid 'stop': 'Your credit balance is too low to access the Anthropic API' is too long.", type: 'invalid_request_error', param: 'stop', code: null } }),
    });
    const failure = await gateway.client.chat.completions.create({ model: 'chat', messages }).catch((err: unknown) => err);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(healthy.calls).toHaveLength(0);
  });
});
