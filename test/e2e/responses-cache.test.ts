// The response cache on the Responses route: an answer from OpenAI's own Responses API is served again as OpenAI
// gave it (but for the model name), whether it was stored from a whole answer or a stream, and a cached answer costs
// no upstream call.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({ cache: { mode: 'on' }, providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

/** Resolves when the cache has stored the next answer (storing waits for the spend stage and the embedder). */
function stored(): Promise<void> {
  return new Promise((resolve) => {
    const stop = tg.gateway.bus.on('cache.stored', () => {
      stop();
      resolve();
    });
  });
}

function post(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${tg.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('the response cache', () => {
  it('serves a whole request the Response a stream stored, as OpenAI wrote it but for the model name', async () => {
    const kept = stored();
    await (await post({ model: 'openai/gpt-5', input: 'cache me once', stream: true })).text();
    await kept;
    const sent = upstream.responses[0]?.response;
    const whole = await post({ model: 'openai/gpt-5', input: 'cache me once' });
    expect(whole.headers.get('x-tollgate-cache')).toMatch(/^hit/);
    expect(await whole.json()).toEqual({ ...sent, model: 'openai/gpt-5' });
    expect(upstream.calls).toHaveLength(1);
  });

  it('serves a stream again event for event', async () => {
    const kept = stored();
    const first = await (await post({ model: 'openai/gpt-5', input: 'stream me twice', stream: true })).text();
    await kept;
    const again = await post({ model: 'openai/gpt-5', input: 'stream me twice', stream: true });
    expect(again.headers.get('x-tollgate-cache')).toMatch(/^hit/);
    expect(await again.text()).toBe(first);
    expect(upstream.calls).toHaveLength(1);
  });
});
