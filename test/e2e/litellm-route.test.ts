import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { jsonRequest } from '../helpers/api.js';

// `/litellm` is the OpenAI API under another base URL, with LiteLLM's model names mapped to tollgate's.

const BEDROCK_MODEL = 'anthropic.claude-3-5-sonnet-20241022-v2:0';
const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

let openai: ScriptedUpstream;
let together: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let bedrock: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  together = await startOpenAIUpstream({ apiKey: 'sk-together' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      together: { base_url: `${together.url}/v1`, api_key: 'sk-together', prices: PRICES },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
    },
    // A route whose name LiteLLM would otherwise read as OpenAI's: the route wins.
    routes: { 'gpt-4o': { targets: [{ model: 'together/routed-model' }] } },
    // LiteLLM's metadata is the gateway's to read, though no provider gets it.
    routing_rules: [{ name: 'litellm-batch', when: { metadata: { tier: 'batch' } }, route_to: 'together/batch-model' }],
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), together?.close(), anthropic?.close(), bedrock?.close()]);
});
beforeEach(() => {
  openai.reset();
  together.reset();
  anthropic.reset();
  bedrock.reset();
});

function client(base: string, apiKey = 'client-side-key'): OpenAI {
  return new OpenAI({ baseURL: `${tg.url}${base}`, apiKey, maxRetries: 0, timeout: 15_000 });
}

async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return jsonRequest(tg.url, method, path, body);
}

describe.each(['/litellm', '/litellm/v1'])('the official openai client at %s', (base) => {
  it('chats with a LiteLLM name, routed to the mapped provider, answering with the name it was sent', async () => {
    const completion = await client(base).chat.completions.create({
      model: 'together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo',
      messages: [{ role: 'user', content: 'hello litellm' }],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hello litellm');
    expect(completion.model).toBe('together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo');
    expect(together.calls).toHaveLength(1);
    expect(together.calls[0]?.body.model).toBe('meta-llama/Llama-3.3-70B-Instruct-Turbo');
    expect(together.calls[0]?.headers.authorization).toBe('Bearer sk-together');
    expect(openai.calls).toHaveLength(0);
  });

  it('streams, every chunk naming the model as the client wrote it', async () => {
    const stream = await client(base).chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream through litellm' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const models = new Set<string>();
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      models.add(chunk.model);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('echo: stream through litellm');
    expect([...models]).toEqual(['openai/gpt-4o-mini']);
    expect(usage?.total_tokens).toBeGreaterThan(0);
    expect(openai.calls[0]?.body).toMatchObject({ model: 'gpt-4o-mini', stream: true });
  });

  it('infers the provider of a bare name the way LiteLLM does', async () => {
    const completion = await client(base).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bare' }] });
    expect(completion.model).toBe('gpt-4o-mini');
    expect(openai.calls[0]?.body.model).toBe('gpt-4o-mini');
  });

  it("sends a fine-tuned OpenAI model (ft:...) to OpenAI, as LiteLLM infers it", async () => {
    const model = 'ft:gpt-4o-mini-2024-07-18:my-org::9abcDEF';
    const completion = await client(base).chat.completions.create({ model, messages: [{ role: 'user', content: 'tuned' }] });
    expect(completion.model).toBe(model);
    expect(openai.calls[0]?.body.model).toBe(model);
  });

  it('embeds with a bare OpenAI embedding model and with a LiteLLM prefix', async () => {
    const bare = await client(base).embeddings.create({ model: 'text-embedding-3-small', input: ['one', 'two'] });
    expect(bare.data).toHaveLength(2);
    expect(bare.data[0]?.embedding).toHaveLength(8);
    expect(bare.model).toBe('text-embedding-3-small');
    expect(openai.calls[0]).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: ['one', 'two'] } });
    const prefixed = await client(base).embeddings.create({ model: 'together_ai/m2-bert-80M-8k-retrieval', input: 'three' });
    expect(prefixed.model).toBe('together_ai/m2-bert-80M-8k-retrieval');
    expect(together.calls[0]?.body.model).toBe('m2-bert-80M-8k-retrieval');
  });

  it('lists the same models as /v1/models', async () => {
    const ours = await client(base).models.list();
    const v1 = await client('/v1').models.list();
    expect(ours.data.map((model) => model.id)).toEqual(v1.data.map((model) => model.id));
    expect(ours.data.length).toBeGreaterThan(0);
    const filtered = await api('GET', `${base}/models?provider=together`);
    expect(filtered.status).toBe(200);
    expect(filtered.body.data.every((model: { owned_by: string }) => model.owned_by === 'together')).toBe(true);
  });

  it('answers errors in OpenAI shape; an unknown prefix passes through and is named', async () => {
    const error = await failure(client(base).chat.completions.create({ model: 'sagemaker/my-endpoint', messages: [{ role: 'user', content: 'x' }] }));
    expect(error.status).toBe(404);
    expect(error.code).toBe('provider_not_found');
    expect(error.message).toContain("'sagemaker'");
    expect(error.type).toBe('invalid_request_error');
  });
});

describe('LiteLLM names for the native providers', () => {
  it('sends anthropic/claude-... and a bare claude-... to Anthropic', async () => {
    const prefixed = await client('/litellm').chat.completions.create({
      model: 'anthropic/claude-haiku-4-5',
      messages: [{ role: 'user', content: 'hi claude' }],
      max_tokens: 50,
    });
    expect(prefixed.choices[0]?.message.content).toBe('echo: hi claude');
    expect(prefixed.model).toBe('anthropic/claude-haiku-4-5');
    expect(anthropic.calls[0]).toMatchObject({ path: '/v1/messages', body: { model: 'claude-haiku-4-5' } });

    const stream = await client('/litellm').chat.completions.create({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'bare claude' }], max_tokens: 50, stream: true });
    let text = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      expect(chunk.model).toBe('claude-haiku-4-5');
    }
    expect(text).toBe('echo: bare claude');
    expect(anthropic.calls[1]?.body.model).toBe('claude-haiku-4-5');
  });

  it('sends bedrock/converse/<id> to Bedrock Converse for <id>', async () => {
    const model = `bedrock/converse/${BEDROCK_MODEL}`;
    const completion = await client('/litellm').chat.completions.create({ model, messages: [{ role: 'user', content: 'hello bedrock' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: hello bedrock');
    expect(completion.model).toBe(model);
    expect(bedrock.calls[0]?.modelId).toBe(BEDROCK_MODEL);
    expect(bedrock.calls[0]?.action).toBe('converse');
  });
});

describe("LiteLLM's own request fields", () => {
  it('sends none of them to the provider, reads their metadata, and merges extra_body', async () => {
    const body = {
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'with extras' }],
      user: 'end-user-1',
      // LiteLLM metadata holds non-string values, which OpenAI's own `metadata` refuses.
      metadata: { tier: 'batch', generation_name: 'nightly', trace_user_id: 7, tags: ['a'] },
      tags: ['team-a'],
      litellm_session_id: 'session-1',
      litellm_trace_id: 'trace-1',
      num_retries: 2,
      caching: false,
      cache: { 'no-cache': true },
      guardrails: ['pii-mask'],
      spend_logs_metadata: { project: 'x' },
      extra_body: { top_k: 5, user: 'not-this-one' },
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const { data, response } = await client('/litellm').chat.completions.create(body).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: with extras');
    // The routing rule read the metadata: the request went to together, not openai.
    expect(response.headers.get('x-tollgate-routing-rule')).toBe('litellm-batch');
    expect(openai.calls).toHaveLength(0);
    const sent = together.calls[0]?.body as Record<string, unknown>;
    expect(sent).toMatchObject({ model: 'batch-model', user: 'end-user-1', top_k: 5 });
    for (const field of ['metadata', 'tags', 'litellm_session_id', 'litellm_trace_id', 'num_retries', 'caching', 'cache', 'guardrails', 'spend_logs_metadata', 'extra_body']) {
      expect(sent).not.toHaveProperty(field);
    }
  });

  it('sends none of them with an embeddings request either', async () => {
    const body = { model: 'text-embedding-3-small', input: 'x', metadata: { app: 'rag' }, tags: ['t'], fallbacks: ['openai/text-embedding-3-large'] } as unknown as OpenAI.EmbeddingCreateParams;
    await client('/litellm').embeddings.create(body);
    const sent = openai.calls[0]?.body as Record<string, unknown>;
    expect(sent).toMatchObject({ model: 'text-embedding-3-small', input: 'x' });
    for (const field of ['metadata', 'tags', 'fallbacks']) expect(sent).not.toHaveProperty(field);
  });

  it('refuses mock_response rather than calling (and charging for) the provider the client meant not to call', async () => {
    const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], mock_response: 'canned' } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const error = await failure(client('/litellm').chat.completions.create(body));
    expect(error.status).toBe(400);
    expect(error.code).toBe('unsupported_parameter');
    expect(error.param).toBe('mock_response');
    expect(openai.calls).toHaveLength(0);
  });
});

describe('one pipeline for every route', () => {
  it('lets a configured route name win over LiteLLM inference', async () => {
    const response = await fetch(`${tg.url}/litellm/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'routed' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-tollgate-route')).toBe('gpt-4o');
    expect(response.headers.get('x-tollgate-provider')).toBe('together');
    const body = (await response.json()) as OpenAI.ChatCompletion;
    expect(body.model).toBe('gpt-4o');
    expect(together.calls[0]?.body.model).toBe('routed-model');
    expect(openai.calls).toHaveLength(0);
  });

  it('charges a virtual key, whose model list speaks tollgate names', async () => {
    const created = await api('POST', '/api/keys', { name: 'litellm-user', budget: 10, rate_limit: null, models: ['together/*'] });
    expect(created.status).toBe(201);
    const litellm = client('/litellm', created.body.key as string);
    const completion = await litellm.chat.completions.create({ model: 'together_ai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    // The key never goes upstream.
    expect(JSON.stringify(together.calls[0]?.headers)).not.toContain(created.body.key);
    const record = await api('GET', `/api/keys/${created.body.id}`);
    expect(record.body).toMatchObject({ requests: 1, spend: 2 });
    // The key's model list applies to the mapped name: OpenAI is outside it, whatever the spelling.
    const refused = await failure(litellm.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));
    expect(refused.status).toBe(403);
    expect(refused.code).toBe('model_not_allowed');
    expect(openai.calls).toHaveLength(0);
  });

  it('knows the virtual key sent as x-litellm-api-key, before the Authorization header, as the LiteLLM proxy does', async () => {
    const created = await api('POST', '/api/keys', { name: 'litellm-header', budget: 10, rate_limit: null, models: ['together/*'] });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    for (const value of [key, `Bearer ${key}`]) {
      // The SDK needs an api key of its own: a placeholder, which LiteLLM's header supersedes.
      const litellm = new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'sk-placeholder', maxRetries: 0, defaultHeaders: { 'x-litellm-api-key': value } });
      const completion = await litellm.chat.completions.create({ model: 'together_ai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      expect(completion.choices[0]?.message.content).toBe('echo: hi');
      const refused = await failure(litellm.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));
      expect(refused.code).toBe('model_not_allowed');
    }
    expect((await api('GET', `/api/keys/${created.body.id}`)).body).toMatchObject({ requests: 2, spend: 4 });
    expect(JSON.stringify(together.calls.map((call) => call.headers))).not.toContain(key);
    // The model list is the key's too.
    const listed = await fetch(`${tg.url}/litellm/models`, { headers: { authorization: 'Bearer sk-placeholder', 'x-litellm-api-key': 'tg-not-a-key' } });
    expect(listed.status).toBe(401);
  });

  it("answers with LiteLLM's x-litellm-call-id and x-litellm-response-cost headers", async () => {
    const { data, response } = await client('/litellm')
      .chat.completions.create({ model: 'together_ai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-litellm-call-id')).toBe(response.headers.get('x-request-id'));
    // "echo: hi" is 2 output tokens at $1 each.
    expect(Number(response.headers.get('x-litellm-response-cost'))).toBe(2);
    const stream = await client('/litellm').chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true }).withResponse();
    for await (const chunk of stream.data) void chunk;
    expect(stream.response.headers.get('x-litellm-call-id')).toBe(stream.response.headers.get('x-request-id'));
    const refused = await fetch(`${tg.url}/litellm/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sagemaker/my-endpoint', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(refused.status).toBe(404);
    expect(refused.headers.get('x-litellm-call-id')).toBe(refused.headers.get('x-request-id'));
    // /v1 is OpenAI's API: no LiteLLM headers there.
    const v1 = await client('/v1').chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(v1.response.headers.get('x-litellm-call-id')).toBeNull();
  });

  it('answers a raw fetch to /litellm/chat/completions', async () => {
    const response = await fetch(`${tg.url}/litellm/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer anything' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'raw fetch' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const body = (await response.json()) as OpenAI.ChatCompletion;
    expect(body).toMatchObject({ object: 'chat.completion', model: 'openai/gpt-4o-mini', choices: [{ message: { role: 'assistant', content: 'echo: raw fetch' } }] });
  });

  it('renders bad requests and unknown URLs under /litellm in OpenAI shape', async () => {
    const bad = await fetch(`${tg.url}/litellm/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
    expect(bad.status).toBe(400);
    const badBody = (await bad.json()) as { error: Record<string, unknown> };
    expect(Object.keys(badBody.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(badBody.error.code).toBe('invalid_json');
    const missing = await api('POST', '/litellm/v1/embeddings', { input: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ param: 'model', type: 'invalid_request_error' });
    const unknown = await api('GET', '/litellm/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('unknown_url');
  });

  it('does not map names under /v1: LiteLLM spellings are a LiteLLM-route feature', async () => {
    const error = await failure(client('/v1').chat.completions.create({ model: 'together_ai/priced-model', messages: [{ role: 'user', content: 'x' }] }));
    expect(error.status).toBe(404);
    expect(error.code).toBe('provider_not_found');
  });

  it('answers /litellm/health like /health', async () => {
    const health = await api('GET', '/litellm/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', config_version: (await api('GET', '/health')).body.config_version });
  });
});
