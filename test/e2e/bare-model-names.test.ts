import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Clients that only changed their base URL send bare model names. Three configured providers: OpenAI, a
 * vLLM-type server `lab` that lists `gpt-4o` (so `gpt-4o` is ambiguous) and `llama-local`, and Anthropic; a
 * route is named like an OpenAI model (`gpt-4.1-mini`) and sends it to the lab.
 */
let openai: ScriptedUpstream;
let lab: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let claude: Anthropic;

const messages = [{ role: 'user' as const, content: 'Say hi' }];

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  lab = await startOpenAIUpstream({ apiKey: 'sk-lab' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 0 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      lab: { type: 'vllm', base_url: `${lab.url}/v1`, api_key: 'sk-lab', models: ['gpt-4o', 'llama-local'] },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant' },
    },
    routes: { 'gpt-4.1-mini': { targets: [{ model: 'lab/llama-local' }] } },
  });
  claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await lab?.close();
  await anthropic?.close();
});

beforeEach(() => {
  openai.reset();
  lab.reset();
  anthropic.reset();
});

async function failure(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (err: unknown) => err,
  );
}

describe('bare model names on /v1 (OpenAI SDK)', () => {
  it('sends a bare name to the one configured provider that serves it', async () => {
    const { data, response } = await tg.client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBeTruthy();
    expect(openai.calls).toHaveLength(1);
    expect(openai.calls[0]?.body.model).toBe('gpt-4o-mini');
    expect(openai.calls[0]?.headers.authorization).toBe('Bearer sk-openai');
    expect(lab.calls).toHaveLength(0);
    expect(response.headers.get('x-tollgate-route')).toBeNull();
  });

  it('streams from it too', async () => {
    const stream = await tg.client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).not.toBe('');
    expect(openai.calls[0]?.body).toMatchObject({ model: 'gpt-4o-mini', stream: true });
  });

  it("sends a name only an operator's model list holds to that provider", async () => {
    await tg.client.chat.completions.create({ model: 'llama-local', messages });
    expect(lab.calls.map((call) => call.body.model)).toEqual(['llama-local']);
    expect(lab.calls[0]?.headers.authorization).toBe('Bearer sk-lab');
    expect(openai.calls).toHaveLength(0);
  });

  it('lets a route of that name win over the provider that serves it', async () => {
    const { response } = await tg.client.chat.completions.create({ model: 'gpt-4.1-mini', messages }).withResponse();
    expect(response.headers.get('x-tollgate-route')).toBe('gpt-4.1-mini');
    expect(lab.calls.map((call) => call.body.model)).toEqual(['llama-local']);
    expect(openai.calls).toHaveLength(0);
  });

  it('answers an ambiguous bare name with 404 ambiguous_model naming the candidates, calling nobody', async () => {
    const error = await failure(tg.client.chat.completions.create({ model: 'gpt-4o', messages }));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'ambiguous_model', param: 'model', type: 'invalid_request_error' });
    expect(error.message).toContain('lab/gpt-4o, openai/gpt-4o');
    expect(openai.calls).toHaveLength(0);
    expect(lab.calls).toHaveLength(0);
    // Either spelled out works.
    await tg.client.chat.completions.create({ model: 'lab/gpt-4o', messages });
    expect(lab.calls.map((call) => call.body.model)).toEqual(['gpt-4o']);
  });

  it('answers an unknown bare name with 404 model_not_found', async () => {
    const error = await failure(tg.client.chat.completions.create({ model: 'no-such-model-anywhere', messages }));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    expect(error.message).toContain("'no-such-model-anywhere'");
  });

  it('takes bare request fallbacks, and refuses an ambiguous one up front', async () => {
    openai.enqueue({ kind: 'error', status: 500 });
    const body = { model: 'gpt-4o-mini', messages, fallbacks: ['llama-local'] } as OpenAI.ChatCompletionCreateParamsNonStreaming;
    await tg.client.chat.completions.create(body);
    expect(openai.calls).toHaveLength(1);
    expect(lab.calls.map((call) => call.body.model)).toEqual(['llama-local']);

    const ambiguous = { model: 'gpt-4o-mini', messages, fallbacks: ['gpt-4o'] } as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const error = await failure(tg.client.chat.completions.create(ambiguous));
    expect(error).toMatchObject({ status: 400, code: 'invalid_fallback', param: 'fallbacks[0]' });
    expect(error.message).toContain('lab/gpt-4o, openai/gpt-4o');
  });
});

describe('bare model names on /v1: keys, logs and models.retrieve see the resolved name', () => {
  it("checks a virtual key's models against the resolved name, logs it, and echoes the client's", async () => {
    const created = await new AdminClient(tg.url).post('/api/keys', { name: 'v1-mini-only', models: ['openai/gpt-4o-mini'] });
    expect(created.status).toBe(201);
    const keyed = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    const { data, response } = await keyed.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(data.model).toBe('gpt-4o-mini');
    expect(openai.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini']);
    const entry = await new AdminClient(tg.url).logEntry(response.headers.get('x-request-id') ?? '');
    expect(entry).toMatchObject({ model: 'openai/gpt-4o-mini', provider: 'openai' });
    const refused = await failure(keyed.chat.completions.create({ model: 'llama-local', messages }));
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(lab.calls).toHaveLength(0);
  });

  it('answers models.retrieve for a bare name that resolves, under the name asked', async () => {
    expect(await tg.client.models.retrieve('gpt-4o-mini')).toMatchObject({ id: 'gpt-4o-mini', object: 'model', owned_by: 'openai' });
    const ambiguous = await failure(tg.client.models.retrieve('gpt-4o'));
    expect(ambiguous).toMatchObject({ status: 404 });
  });
});

describe('bare model names on /anthropic (Anthropic SDK)', () => {
  it('sends a bare claude name to Anthropic', async () => {
    const message = await claude.messages.create({ model: 'claude-haiku-4-5', max_tokens: 32, messages });
    expect(message.type).toBe('message');
    expect(anthropic.calls.at(-1)?.body.model).toBe('claude-haiku-4-5');
  });

  it('sends a bare OpenAI name to OpenAI, answered in the Anthropic shape', async () => {
    const message = await claude.messages.create({ model: 'gpt-4o-mini', max_tokens: 32, messages });
    expect(message.content[0]?.type).toBe('text');
    expect(openai.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini']);
    expect(anthropic.calls).toHaveLength(0);
  });

  it('answers an ambiguous bare name with a 404 in the Anthropic shape naming the candidates', async () => {
    const error = await failure(claude.messages.create({ model: 'gpt-4o', max_tokens: 32, messages }));
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(error.error.error.message).toContain('lab/gpt-4o, openai/gpt-4o');
  });

  it("checks a virtual key's models against the name the bare one resolved to", async () => {
    const created = await new AdminClient(tg.url).post('/api/keys', { name: 'mini-only', models: ['openai/gpt-4o-mini'] });
    expect(created.status).toBe(201);
    const keyed = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    await keyed.messages.create({ model: 'gpt-4o-mini', max_tokens: 32, messages });
    expect(openai.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini']);
    const refused = await failure(keyed.messages.create({ model: 'claude-haiku-4-5', max_tokens: 32, messages }));
    expect(refused).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(anthropic.calls).toHaveLength(0);
  });
});

describe('bare model names on /litellm that LiteLLM does not infer a provider for', () => {
  it("resolve as on /v1: the key's models, the log and models.retrieve see the resolved name", async () => {
    const created = await new AdminClient(tg.url).post('/api/keys', { name: 'litellm-lab-only', models: ['lab/llama-local'] });
    expect(created.status).toBe(201);
    const keyed = new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    const { data, response } = await keyed.chat.completions.create({ model: 'llama-local', messages }).withResponse();
    expect(data.model).toBe('llama-local');
    expect(lab.calls.map((call) => call.body.model)).toEqual(['llama-local']);
    const entry = await new AdminClient(tg.url).logEntry(response.headers.get('x-request-id') ?? '');
    expect(entry).toMatchObject({ model: 'lab/llama-local', provider: 'lab' });
    expect(await keyed.models.retrieve('llama-local')).toMatchObject({ id: 'llama-local', object: 'model', owned_by: 'lab' });
  });
});
