// Stored Responses with the response cache on, shared by every key (scope global): a continued turn is cached by its
// whole conversation (never answered from another conversation's turn with the same last words), an answer served
// from the cache is kept as the caller's own Response, and OpenAI's own Response served to another key stays the
// first key's.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
let anthropic: AnthropicUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let alice: OpenAI;
let bob: OpenAI;

async function keyClient(name: string): Promise<OpenAI> {
  const created = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
  const { key } = (await created.json()) as { key: string };
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
}

/** Resolves when the cache has stored the next answer. */
function stored(): Promise<void> {
  return new Promise((resolve) => {
    const stop = tg.gateway.bus.on('cache.stored', () => {
      stop();
      resolve();
    });
  });
}

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    cache: { mode: 'on', scope: 'global' },
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
  alice = await keyClient('alice');
  bob = await keyClient('bob');
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await openai?.close();
});

describe('stored Responses and the cache', () => {
  it('a continued turn is a hit only for the same whole conversation', async () => {
    // Each answer's cache entry is awaited before the next request, so every hit and miss below is the key's doing.
    let next = stored();
    const a1 = await alice.responses.create({ model: CLAUDE, input: 'first story' });
    await next;
    next = stored();
    const b1 = await bob.responses.create({ model: CLAUDE, input: 'second story' });
    await next;
    next = stored();
    const a2 = await alice.responses.create({ model: CLAUDE, input: 'go on', previous_response_id: a1.id });
    await next;
    const calls = anthropic.calls.length;
    const b2 = await bob.responses.create({ model: CLAUDE, input: 'go on', previous_response_id: b1.id });
    // Another conversation with the same last words: asked of Claude, with its own history.
    expect(anthropic.calls).toHaveLength(calls + 1);
    expect(JSON.stringify(anthropic.calls.at(-1)?.body.messages)).toContain('second story');
    expect(b2.id).not.toBe(a2.id);
    // The same conversation again (bob sends alice's history as input) is served from the cache, as bob's own Response.
    const again = await bob.responses.create({ model: CLAUDE, input: [{ role: 'user', content: 'first story' }, { role: 'assistant', content: a1.output_text }, { role: 'user', content: 'go on' }] }).withResponse();
    expect(again.response.headers.get('x-tollgate-cache')).toMatch(/^hit/);
    expect(again.data.id).not.toBe(a2.id);
    expect((await bob.responses.retrieve(again.data.id)).output_text).toBe(a2.output_text);
    expect((await failure(alice.responses.retrieve(again.data.id))).status).toBe(404);
  });

  it("OpenAI's Response served from the cache to another key stays the first key's", async () => {
    const next = stored();
    const mine = await alice.responses.create({ model: 'openai/gpt-5', input: 'kept natively' });
    await next;
    const served = await bob.responses.create({ model: 'openai/gpt-5', input: 'kept natively' }).withResponse();
    expect(served.response.headers.get('x-tollgate-cache')).toMatch(/^hit/);
    expect(served.data.id).toBe(mine.id);
    expect((await alice.responses.retrieve(mine.id)).id).toBe(mine.id);
    expect((await failure(bob.responses.retrieve(mine.id))).status).toBe(404);
  });
});

async function failure(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}
