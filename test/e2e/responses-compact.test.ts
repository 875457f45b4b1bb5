// OpenAI's "Compact a response" (`POST /v1/responses/compact`, the SDK's `client.responses.compact`, which Codex calls
// to shorten a long conversation) through the gateway: the client's body reaches OpenAI unchanged but for the model,
// OpenAI's `response.compaction` reaches the client exactly as written, and the call is a model call like any other:
// charged to the key's budget, logged with its usage and cost, routed with fallbacks. Only OpenAI compacts: another
// provider's model is a 400 in OpenAI's shape, and a route's other targets are left out. Never cached.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { encryptedCompaction } from '../upstream/openai-responses-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const GPT = 'openai/gpt-5';
const CLAUDE = 'anthropic/claude-sonnet-4-5';
/** Prices per million tokens: a token costs a dollar, so the charge is the tokens. */
const PRICES = { 'gpt-5': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let azure: AzureUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  azure = await startAzureUpstream({ apiKey: 'azure-key', deployments: { 'gpt-5-prod': 'gpt-5' } });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream', prices: PRICES },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      // Azure OpenAI's v1 API compacts as OpenAI does; its dated API has no compaction.
      'azure-v1': { type: 'azure', base_url: `${azure.url}/openai/v1/`, api_key: 'azure-key' },
      'azure-dated': { type: 'azure', base_url: azure.url, api_key: 'azure-key', api_version: '2024-10-21' },
    },
    routes: {
      'claude-first': { targets: [{ model: CLAUDE }, { model: GPT }] },
      'broken-then-gpt': { targets: [{ model: 'openai/error-503' }], fallbacks: [GPT] },
    },
    cache: { mode: 'on' },
    guardrails: {
      rules: [
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'input' },
        { name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'input' },
      ],
    },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await anthropic?.close();
  await azure?.close();
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
  azure.reset();
});

const conversation: OpenAI.Responses.ResponseInput = [
  { role: 'user', content: 'Plan a three-day trip to Lisbon.' },
  { role: 'assistant', content: 'Day one: Alfama and the castle. Day two: Belém. Day three: Sintra.' },
  { role: 'user', content: 'Now make it four days.' },
];

/** The request log entry of one request, once written. */
async function logOf(id: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as Record<string, any>;
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function compactCalls(): ScriptedUpstream['calls'] {
  return openai.calls.filter((call) => call.path === '/v1/responses/compact');
}

describe('an OpenAI model', () => {
  it('gets the client’s body but for the model, and the client gets OpenAI’s compaction exactly', async () => {
    const { data, response } = await client.responses
      .compact({ model: GPT, input: conversation, instructions: 'You plan trips.', prompt_cache_key: 'trip-42', service_tier: 'flex' })
      .withResponse();
    expect(response.status).toBe(200);
    const calls = compactCalls();
    expect(calls).toHaveLength(1);
    expect(calls[0]?.body).toEqual({ model: 'gpt-5', input: conversation, instructions: 'You plan trips.', prompt_cache_key: 'trip-42', service_tier: 'flex' });
    expect(calls[0]?.headers.authorization).toBe('Bearer sk-openai-upstream');
    // Exactly what OpenAI answered: the user messages, then the compaction item, the usage with its details.
    expect(data).toEqual(openai.compactions.at(-1));
    expect(data.object).toBe('response.compaction');
    expect(data.output.map((item) => item.type)).toEqual(['message', 'message', 'compaction']);
  });

  it('is logged and charged as a model call: tokens, reasoning tokens and cost from the compaction’s usage', async () => {
    const { response } = await client.responses.compact({ model: GPT, input: conversation }).withResponse();
    const id = response.headers.get('x-request-id') as string;
    const usage = openai.compactions.at(-1)?.usage;
    const entry = await logOf(id);
    expect(entry.status).toBe(200);
    expect(entry.path).toBe('/v1/responses/compact');
    expect(entry.provider).toBe('openai');
    expect(entry.dialect).toBe('openai-responses');
    expect(entry.prompt_tokens).toBe(usage.input_tokens);
    expect(entry.completion_tokens).toBe(usage.output_tokens);
    expect(entry.reasoning_tokens).toBe(usage.output_tokens_details.reasoning_tokens);
    expect(entry.cost_usd).toBeCloseTo(usage.input_tokens + usage.output_tokens, 6);
  });

  it('hands back a compaction item /v1/responses passes on to OpenAI unchanged', async () => {
    const compacted = await client.responses.compact({ model: GPT, input: conversation });
    const item = compacted.output.at(-1) as OpenAI.Responses.ResponseCompactionItem;
    expect(item.encrypted_content).toBe(encryptedCompaction(item.id));
    const next = [...compacted.output, { role: 'user' as const, content: 'And a fifth day?' }] as OpenAI.Responses.ResponseInput;
    const answer = await client.responses.create({ model: GPT, input: next, store: false });
    expect(answer.status).toBe('completed');
    const sent = openai.calls.find((call) => call.path === '/v1/responses')?.body as Record<string, any>;
    expect(sent.input).toEqual(JSON.parse(JSON.stringify(next)));
  });

  it('is never answered from the response cache: the same compaction twice reaches OpenAI twice', async () => {
    await client.responses.compact({ model: GPT, input: 'Summarize our talk about Lisbon.' });
    const again = await client.responses.compact({ model: GPT, input: 'Summarize our talk about Lisbon.' }).withResponse();
    expect(compactCalls()).toHaveLength(2);
    expect(again.response.headers.get('x-tollgate-cache')).toBeNull();
  });

  it('takes a route’s OpenAI target and its fallbacks, leaving out the targets of other providers', async () => {
    await client.responses.compact({ model: 'claude-first', input: conversation });
    expect(anthropic.calls).toHaveLength(0);
    expect(compactCalls()).toHaveLength(1);
    expect(compactCalls()[0]?.body.model).toBe('gpt-5');
    const fallen = await client.responses.compact({ model: 'broken-then-gpt', input: conversation }).withResponse();
    expect(fallen.response.status).toBe(200);
    expect(compactCalls().map((call) => call.body.model)).toEqual(['gpt-5', 'error-503', 'gpt-5']);
  });

  it('passes OpenAI’s own refusal through in its shape', async () => {
    const error = await client.responses.compact({ model: GPT, input: conversation, stream: true } as never).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("Unknown parameter: 'stream'");
    expect(compactCalls()).toHaveLength(1);
  });
});

describe('Azure OpenAI', () => {
  it('its v1 API compacts at /openai/v1/responses/compact with the deployment as the model; its dated API is a 400', async () => {
    const data = await client.responses.compact({ model: 'azure-v1/gpt-5-prod', input: conversation });
    expect(data.object).toBe('response.compaction');
    const call = azure.calls.at(-1);
    expect(call?.path).toBe('/openai/v1/responses/compact');
    expect(call?.headers['api-key']).toBe('azure-key');
    expect(call?.body).toMatchObject({ model: 'gpt-5-prod', input: conversation });
    const calls = azure.calls.length;
    const error = await client.responses.compact({ model: 'azure-dated/gpt-5-prod', input: conversation }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('model');
    expect(azure.calls).toHaveLength(calls);
  });
});

describe('what the gateway adds', () => {
  it('input guardrails read the body OpenAI gets: an email is redacted in it, a card number blocks it before any call', async () => {
    await client.responses.compact({ model: GPT, input: [{ role: 'user', content: 'Write to ana@example.com about the trip.' }] });
    const sent = JSON.stringify(compactCalls()[0]?.body.input);
    expect(sent).not.toContain('ana@example.com');
    const error = await client.responses.compact({ model: GPT, input: 'Book it on card 4111 1111 1111 1111.' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(compactCalls()).toHaveLength(1);
  });

  it('a previous_response_id tollgate kept is compacted as the conversation it names, whichever provider answered it', async () => {
    const earlier = await client.responses.create({ model: CLAUDE, input: 'Plan a day in Porto.' });
    expect(earlier.status).toBe('completed');
    await client.responses.compact({ model: GPT, previous_response_id: earlier.id, input: [{ role: 'user', content: 'Shorter, please.' }] });
    const body = compactCalls()[0]?.body as Record<string, any>;
    expect(body).not.toHaveProperty('previous_response_id');
    const texts = JSON.stringify(body.input);
    expect(texts).toContain('Plan a day in Porto.');
    expect(texts).toContain('Shorter, please.');
  });
});

describe('another provider’s model', () => {
  it('is a 400 in OpenAI’s shape naming the model, with no upstream call', async () => {
    const error = await client.responses.compact({ model: CLAUDE, input: conversation }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const bad = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(bad.param).toBe('model');
    expect(bad.message).toContain('served by OpenAI');
    expect(anthropic.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(0);
  });

  it('a body that is not one is the 400 /v1/responses gives', async () => {
    const response = await fetch(`${tg.url}/v1/responses/compact`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'no model' }) });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { param: string; code: string } };
    expect(body.error).toMatchObject({ param: 'model', code: 'missing_required_parameter' });
  });
});

describe('governance', () => {
  it('a virtual key’s budget is charged the compaction’s usage, and one that cannot cover it refuses before any upstream call', async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'compaction-budget', budget: 500_000, rate_limit: null, models: [] });
    expect(created.status).toBe(201);
    const keyed = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    await keyed.responses.compact({ model: GPT, input: conversation });
    const usage = openai.compactions.at(-1)?.usage;
    const spend = (await jsonRequest(tg.url, 'GET', `/api/keys/${created.body.id}`)).body.spend;
    expect(spend).toBeCloseTo(usage.input_tokens + usage.output_tokens, 6);
    const poor = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'compaction-poor', budget: 10, rate_limit: null, models: [] });
    const calls = openai.calls.length;
    const refused = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: poor.body.key, maxRetries: 0, timeout: 15_000 });
    const error = await refused.responses.compact({ model: GPT, input: conversation }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('budget_exceeded');
    expect(openai.calls).toHaveLength(calls);
  });
});
