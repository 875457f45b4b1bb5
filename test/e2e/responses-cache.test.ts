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

  it('never answers a request OpenAI is to keep (store) with an answer it did not keep, which a next turn could not name', async () => {
    // Codex and other stateless clients send store: false; the SDKs' default keeps the Response for previous_response_id.
    const kept = stored();
    const unstored = (await (await post({ model: 'openai/gpt-5', input: 'remember the colour blue', store: false })).json()) as { id: string };
    await kept;
    const first = await post({ model: 'openai/gpt-5', input: 'remember the colour blue' });
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const response = (await first.json()) as { id: string; store: boolean };
    expect(response.id).not.toBe(unstored.id);
    expect(response.store).toBe(true);
    const next = await post({ model: 'openai/gpt-5', previous_response_id: response.id, input: 'which colour?' });
    expect(next.status).toBe(200);
    // And the other way round: an answer OpenAI kept is not served to a client that asked it not to keep it.
    const again = await post({ model: 'openai/gpt-5', input: 'remember the colour blue', store: false });
    expect(again.headers.get('x-tollgate-cache')).toMatch(/^hit/);
    expect(((await again.json()) as { id: string }).id).toBe(unstored.id);
  });
});
