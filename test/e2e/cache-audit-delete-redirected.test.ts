import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * `DELETE /api/cache?model=<name>` selects the answers asked for by that name, those of the route or model a request
 * was sent to (a routing rule may send it elsewhere than the name it asked for), and those `<provider>/<model>` gave.
 * An answer stored for a request a rule redirected to a route was found by none of the route's name.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const stored = new Set<string>();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
    cache: { mode: 'on', semantic: { enabled: false } },
    routes: { 'batch-pool': { targets: [{ model: 'openai/gpt-4o-mini' }] } },
    routing_rules: [
      { name: 'batch-to-pool', when: { metadata: { tier: 'batch' } }, route_to: 'batch-pool' },
      { name: 'cheap-to-mini', when: { metadata: { tier: 'cheap' } }, route_to: 'openai/gpt-4o-mini' },
    ],
  });
  tg.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function chat(body: Record<string, unknown>): Promise<{ cache: string | null; id: string }> {
  const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  await response.text();
  return { cache: response.headers.get('x-tollgate-cache'), id: response.headers.get('x-request-id') ?? '' };
}

async function storedAnswer(body: Record<string, unknown>): Promise<void> {
  const { cache, id } = await chat(body);
  expect(cache).toBe('miss');
  for (let i = 0; i < 80 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(stored.has(id)).toBe(true);
}

async function deleteBy(model: string): Promise<number> {
  const response = await fetch(`${tg.url}/api/cache?model=${encodeURIComponent(model)}`, { method: 'DELETE' });
  expect(response.status).toBe(200);
  return ((await response.json()) as { deleted: number }).deleted;
}

const messages = [{ role: 'user', content: 'Summarise the batch report.' }];

describe('DELETE /api/cache?model= and answers a routing rule redirected', () => {
  it('finds an answer a rule sent to a route by the route name, and by the model the client asked for', async () => {
    await storedAnswer({ model: 'openai/gpt-4o', messages, metadata: { tier: 'batch' } });
    expect(await deleteBy('batch-pool')).toBe(1);
    // Gone: asked again, it is a miss (and stored anew).
    await storedAnswer({ model: 'openai/gpt-4o', messages, metadata: { tier: 'batch' } });
    expect(await deleteBy('openai/gpt-4o')).toBe(1);
  });

  it('finds an answer a rule sent to another model by that model, and by the model the client asked for', async () => {
    const cheap = [{ role: 'user', content: 'A cheap question.' }];
    await storedAnswer({ model: 'openai/gpt-4o', messages: cheap, metadata: { tier: 'cheap' } });
    expect(await deleteBy('openai/gpt-4o-mini')).toBe(1);
    await storedAnswer({ model: 'openai/gpt-4o', messages: cheap, metadata: { tier: 'cheap' } });
    expect(await deleteBy('openai/gpt-4o')).toBe(1);
  });

  it('leaves the answers of other models and routes alone', async () => {
    await storedAnswer({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'Kept.' }], metadata: { tier: 'batch' } });
    expect(await deleteBy('openai/gpt-4.1')).toBe(0);
    expect(await deleteBy('other-pool')).toBe(0);
    expect(await deleteBy('batch-pool')).toBe(1);
  });
});
