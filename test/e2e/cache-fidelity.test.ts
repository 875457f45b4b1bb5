import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** What a cache hit serves, against what the same request answered from the provider would be. */
describe('response cache, what a hit serves', () => {
  let upstream: ScriptedUpstream;
  let gateway: RunningGateway;
  const stored = new Set<string>();

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    gateway.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
  });

  afterAll(async () => {
    await gateway.stop();
    await upstream.close();
  });

  /** Until the answer of request `id` is in the cache (it is stored after the client got it). */
  async function storedAnswerOf(id: string | null): Promise<void> {
    for (let i = 0; i < 100 && !stored.has(id ?? ''); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stored.has(id ?? '')).toBe(true);
  }

  it('echoes the model name the client asked for now, not the one the storing request used', async () => {
    const messages = [{ role: 'user' as const, content: 'Which model name is echoed?' }];
    // A bare name resolves to the one provider serving it: the pipeline (and the cache key) see openai/gpt-4o-mini.
    const first = await gateway.client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(first.data.model).toBe('gpt-4o-mini');
    await storedAnswerOf(first.response.headers.get('x-request-id'));

    const whole = await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
    expect(whole.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(whole.data.model).toBe('openai/gpt-4o-mini');

    const models = new Set<string>();
    for await (const chunk of await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true })) models.add(chunk.model);
    expect([...models]).toEqual(['openai/gpt-4o-mini']);
  });
});
