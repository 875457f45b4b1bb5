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

  it('streams a Response a whole request stored as OpenAI wrote it, encrypted reasoning and all, through the SDK’s parser', async () => {
    // Codex's way: stateless (store: false), the reasoning handed back next turn by its encrypted content.
    const request = { model: 'openai/gpt-5', input: 'cache me whole', reasoning: { effort: 'low' as const }, include: ['reasoning.encrypted_content' as const], store: false };
    const kept = stored();
    const whole = await tg.client.responses.create(request);
    await kept;
    expect(whole.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const stream = tg.client.responses.stream(request);
    const events: Array<{ type: string; sequence_number: number; delta?: string }> = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    expect(upstream.calls).toHaveLength(1);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.at(0)?.type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')).toBe(whole.output_text);
    const { _request_id: _id, ...sent } = whole;
    expect({ ...final, _request_id: undefined }).toMatchObject({ ...sent, output_text: whole.output_text });
    expect(final.id).toBe(whole.id);
    expect(final.output[0]).toEqual(whole.output[0]);
  });

  it('answers a paraphrase from the semantic tier, under the same instructions only', async () => {
    for (let i = 0; i < 200; i++) {
      const report = (await (await fetch(`${tg.url}/api/cache`)).json()) as { semantic_index: { state: string }; embedder: { state: string } };
      if (report.semantic_index.state === 'ready' && report.embedder.state === 'ready') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const kept = stored();
    const first = await post({ model: 'openai/gpt-5', instructions: 'Answer in one word.', input: 'What is the capital of France?' });
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const answer = (await first.json()) as { id: string };
    await kept;
    const paraphrase = await post({ model: 'openai/gpt-5', instructions: 'Answer in one word.', input: "Tell me France's capital city" });
    expect(paraphrase.headers.get('x-tollgate-cache')).toBe('hit-semantic');
    expect(((await paraphrase.json()) as { id: string }).id).toBe(answer.id);
    const otherInstructions = await post({ model: 'openai/gpt-5', instructions: 'Answer at length.', input: "Tell me France's capital city" });
    expect(otherInstructions.headers.get('x-tollgate-cache')).toBe('miss');
    expect(upstream.calls).toHaveLength(2);
  });
});
