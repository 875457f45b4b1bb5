import { calcPrice } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

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
