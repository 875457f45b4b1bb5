import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A routing rule may send a request to another `<provider>/<model>` (not only to a route). The answer that model gave
 * must not be served to a request for the model the client named that no rule redirected, nor the other way round:
 * README's "an answer is only ever served to a request with the same model (or route)".
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const stored = new Set<string>();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
    cache: { mode: 'on', semantic: { enabled: false } },
    routing_rules: [{ name: 'batch-to-mini', when: { metadata: { tier: 'batch' } }, route_to: 'openai/gpt-4o-mini' }],
  });
  tg.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function chat(body: Record<string, unknown>): Promise<{ status: number; cache: string | null; model: string | null; rule: string | null; id: string }> {
  const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await response.text();
  const header = (name: string): string | null => response.headers.get(name);
  return { status: response.status, cache: header('x-tollgate-cache'), model: header('x-tollgate-model'), rule: header('x-tollgate-routing-rule'), id: header('x-request-id') ?? '' };
}

async function storedOnce(id: string): Promise<void> {
  for (let i = 0; i < 80 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(stored.has(id)).toBe(true);
}

const ask = (question: string) => [{ role: 'user', content: question }];

describe('the response cache and a routing rule that sends a request to another model', () => {
  it("never serves the redirected model's answer to a request for the model named, and the other way round", async () => {
    const messages = ask('Which model answers this?');
    const redirected = await chat({ model: 'openai/gpt-4o', messages, metadata: { tier: 'batch' } });
    expect(redirected).toMatchObject({ status: 200, cache: 'miss', model: 'gpt-4o-mini', rule: 'batch-to-mini' });
    await storedOnce(redirected.id);

    const calls = upstream.calls.length;
    const direct = await chat({ model: 'openai/gpt-4o', messages });
    expect(direct).toMatchObject({ status: 200, cache: 'miss', model: 'gpt-4o', rule: null });
    expect(upstream.calls.length).toBe(calls + 1);
    expect(upstream.calls.at(-1)?.body.model).toBe('gpt-4o');
    await storedOnce(direct.id);

    // Each is served its own model's answer from then on.
    expect(await chat({ model: 'openai/gpt-4o', messages })).toMatchObject({ cache: 'hit-exact', model: 'gpt-4o' });
    expect(await chat({ model: 'openai/gpt-4o', messages, metadata: { tier: 'batch' } })).toMatchObject({ cache: 'hit-exact', model: 'gpt-4o-mini' });
    expect(upstream.calls.length).toBe(calls + 1);
  });
});
