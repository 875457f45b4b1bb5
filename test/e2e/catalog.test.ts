import { calcPrice } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import OpenAI from 'openai';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-test' });
  tg = await startGateway({
    providers: {
      openai: {
        base_url: `${upstream.url}/v1`,
        api_key: 'sk-test',
        models: ['ft:gpt-4o-mini:acme'],
        prices: { 'gpt-4o': { input_per_mtok: 1, output_per_mtok: 2 } },
      },
    },
    routes: { 'team-chat': { targets: [{ model: 'openai/gpt-4o-mini' }] } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function get(path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${tg.url}${path}`);
  return { status: response.status, body: await response.json() };
}

describe('providers and the model catalogue', () => {
  it('supports at least 24 providers, each with a wire format of its own or the OpenAI-compatible one', async () => {
    const { body } = await get('/api/providers');
    const names = body.data.map((provider: { name: string }) => provider.name);
    expect(names.length).toBeGreaterThanOrEqual(24);
    for (const native of ['anthropic', 'gemini', 'vertex', 'bedrock', 'azure', 'azure-ai', 'cohere']) expect(names).toContain(native);
  });

  it('lists over a thousand models through /v1/models with the official client', async () => {
    const ids: string[] = [];
    for await (const model of tg.client.models.list()) ids.push(model.id);
    expect(ids.length).toBeGreaterThanOrEqual(1_000);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('openai/gpt-4o');
    expect(ids).toContain('openai/ft:gpt-4o-mini:acme');
    expect(ids.some((id) => id.startsWith('anthropic/claude-'))).toBe(true);
    expect(ids.some((id) => id.startsWith('gemini/gemini-'))).toBe(true);
    expect(ids.some((id) => id.startsWith('bedrock/'))).toBe(true);
  });

  it('filters /v1/models by provider and search', async () => {
    const { body } = await get('/v1/models?provider=anthropic&search=sonnet');
    expect(body.data.length).toBeGreaterThan(0);
    for (const model of body.data) {
      expect(model.owned_by).toBe('anthropic');
      expect(model.id.toLowerCase()).toContain('sonnet');
    }
  });

  it('describes models in /api/models: context window, capabilities and the catalogue price', async () => {
    const { body } = await get('/api/models?provider=anthropic&search=claude-sonnet-4-5');
    const entry = body.data.find((model: { model: string }) => model.model === 'claude-sonnet-4-5');
    expect(entry).toMatchObject({ id: 'anthropic/claude-sonnet-4-5', provider: 'anthropic', source: 'catalog' });
    expect(entry.context_window).toBeGreaterThanOrEqual(200_000);
    expect(entry.capabilities).toContain('prompt_caching');
    const reference = calcPrice({ input_tokens: 1_000_000, output_tokens: 1_000_000 }, 'claude-sonnet-4-5', { providerId: 'anthropic' });
    expect(entry.pricing.input_per_mtok + entry.pricing.output_per_mtok).toBeGreaterThanOrEqual(reference?.total_price ?? Infinity);

    const all = await get('/api/models?limit=5000');
    expect(all.body.total).toBeGreaterThanOrEqual(1_000);
    const page = await get('/api/models?limit=10&offset=10');
    expect(page.body.data).toEqual(all.body.data.slice(10, 20));
  });

  it('shows an operator price override instead of the catalogue price', async () => {
    const { body } = await get('/api/models?provider=openai&search=gpt-4o');
    const gpt4o = body.data.find((model: { model: string }) => model.model === 'gpt-4o');
    expect(gpt4o.pricing).toEqual({ input_per_mtok: 1, output_per_mtok: 2, request_usd: 0 });
    const configured = (await get('/api/models?provider=openai&search=acme')).body.data[0];
    expect(configured).toMatchObject({ id: 'openai/ft:gpt-4o-mini:acme', source: 'config', pricing: null });
  });

  it('refuses an unknown provider filter and bad paging with clear errors', async () => {
    const unknown = await get('/api/models?provider=nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('provider_not_found');
    expect((await get('/api/models?limit=-1')).status).toBe(400);
  });

  it('passes a model the catalogue does not know straight through to the provider', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'openai/brand-new-model-2027', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.at(-1)?.body.model).toBe('brand-new-model-2027');
  });
});

describe('GET /v1/models/{model} (models.retrieve)', () => {
  it('answers a <provider>/<model> id with the very entry the list holds, through the official client', async () => {
    const listed = (await get('/v1/models')).body.data.find((model: { id: string }) => model.id === 'openai/gpt-4o');
    const model = await tg.client.models.retrieve('openai/gpt-4o');
    expect({ ...model }).toEqual(listed);
    expect(model).toMatchObject({ id: 'openai/gpt-4o', object: 'model', owned_by: 'openai' });
    expect(model.created).toBe(listed.created);
    // A model listed from the config, whose name holds colons.
    expect(await tg.client.models.retrieve('openai/ft:gpt-4o-mini:acme')).toMatchObject({ id: 'openai/ft:gpt-4o-mini:acme', owned_by: 'openai' });
  });

  it('serves the id URL-encoded or not, on every OpenAI mount', async () => {
    const expected = { id: 'anthropic/claude-sonnet-4-5', object: 'model', owned_by: 'anthropic' };
    for (const prefix of ['/v1', '', '/litellm', '/litellm/v1']) {
      for (const id of ['anthropic%2Fclaude-sonnet-4-5', 'anthropic/claude-sonnet-4-5']) {
        const { status, body } = await get(`${prefix}/models/${id}`);
        expect({ prefix, id, status, body }).toMatchObject({ status: 200, body: expected });
      }
    }
  });

  it('answers a route name, and on /litellm a LiteLLM name by what it maps to, echoing the name asked for', async () => {
    expect(await tg.client.models.retrieve('team-chat')).toMatchObject({ id: 'team-chat', object: 'model', owned_by: 'tollgate' });
    const litellm = new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'x', maxRetries: 0 });
    expect(await litellm.models.retrieve('gpt-4o')).toMatchObject({ id: 'gpt-4o', object: 'model', owned_by: 'openai' });
    expect(await litellm.models.retrieve('team-chat')).toMatchObject({ id: 'team-chat', owned_by: 'tollgate' });
  });

  it('answers an unknown model with 404 model_not_found in the OpenAI error shape', async () => {
    const error = await tg.client.models.retrieve('openai/no-such-model-anywhere').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'model_not_found', param: 'model', type: 'invalid_request_error' });
    for (const id of ['no-such-bare-model', 'nope%2Fgpt-4o', 'a/b/c']) {
      const { status, body } = await get(`/v1/models/${id}`);
      expect(status).toBe(404);
      expect(body.error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error' });
    }
  });

  it('refuses hostile ids with a clear 4xx in the OpenAI shape, never a 5xx', async () => {
    const cases: Array<[string, number, string]> = [
      [`/v1/models/${'a'.repeat(5_000)}`, 400, 'invalid_model_name'],
      [`/v1/models/openai%2F${'b'.repeat(300)}`, 400, 'invalid_model_name'],
      ['/v1/models/openai%2Fgpt%00', 400, 'invalid_model_name'],
      ['/v1/models/gpt%0D%0Ax-injected:%201', 400, 'invalid_model_name'],
      ['/v1/models/%C3%A9t%C3%A9', 400, 'invalid_model_name'],
      ['/v1/models/%20gpt-4o', 400, 'invalid_model_name'],
      ['/v1/models/', 400, 'invalid_model_name'],
      ['/v1/models/%ED%A0%80', 400, 'invalid_url'],
      ['/litellm/models/%00', 400, 'invalid_model_name'],
    ];
    for (const [path, status, code] of cases) {
      const response = await fetch(`${tg.url}${path}`);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect({ path: path.slice(0, 40), status: response.status, code: body.error.code }).toEqual({ path: path.slice(0, 40), status, code });
      expect(response.headers.get('x-injected')).toBeNull();
      expect(body.error.message.length).toBeLessThan(300);
    }
  });
});
