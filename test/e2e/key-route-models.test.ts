import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { jsonRequest } from '../helpers/api.js';

/**
 * A virtual key's `models` against routes: a key may use a route it lists by name, or one whose every target
 * and fallback it allows; the request's own fallbacks and routing rules' destinations count too. Refusals
 * happen before anything reaches the upstream.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  const base_url = `${upstream.url}/v1`;
  tg = await startGateway({
    providers: { openai: { base_url, api_key: 'sk-upstream' }, groq: { base_url, api_key: 'sk-upstream' } },
    routes: {
      'chat-default': { targets: [{ model: 'openai/gpt-4o-mini' }], fallbacks: ['groq/llama-3.1-8b-instant'] },
      'chat-big': { targets: [{ model: 'openai/gpt-4o' }] },
      // Its target always fails with a 503, so the request is served by the fallback.
      'chat-flaky': { targets: [{ model: 'openai/error-503' }], fallbacks: ['groq/llama-3.1-8b-instant'] },
    },
    routing_rules: [{ name: 'free-tier', when: { model: 'openai/gpt-4o', metadata: { tier: 'free' } }, route_to: 'chat-default' }],
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return jsonRequest(tg.url, method, path, body);
}

async function keyFor(name: string, models: string[]): Promise<OpenAI> {
  const created = await api('POST', '/api/keys', { name, models });
  expect(created.status).toBe(201);
  expect(created.body.models).toEqual(models);
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0 });
}

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

async function refusal(request: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await request.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
  const denied = error as InstanceType<typeof OpenAI.APIError>;
  expect(denied.status).toBe(403);
  expect(denied.code).toBe('model_not_allowed');
  return denied;
}

describe('a key listing a route by name', () => {
  it('is accepted by POST /api/keys, and may use that route and only it', async () => {
    const client = await keyFor('route-only', ['chat-default']);
    const completion = await client.chat.completions.create({ model: 'chat-default', messages: hi });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini']);

    upstream.reset();
    await refusal(client.chat.completions.create({ model: 'chat-big', messages: hi }));
    await refusal(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }));
    expect(upstream.calls).toHaveLength(0);
  });

  it('may list a route only once it exists (a name no route has is a 400 naming it), and reaches it', async () => {
    const early = await api('POST', '/api/keys', { name: 'future-route', models: ['chat-later'] });
    expect(early.status).toBe(400);
    expect(early.body.error).toMatchObject({ code: 'invalid_value', param: 'models.0' });
    expect(early.body.error.message).toContain("'chat-later' is no route");
    expect((await api('PUT', '/api/routes/chat-later', { targets: [{ model: 'openai/gpt-4o' }] })).status).toBe(201);
    const client = await keyFor('future-route', ['chat-later']);
    const completion = await client.chat.completions.create({ model: 'chat-later', messages: hi });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o']);
    // Deleted again, the name matches nothing, and the key cannot reach the former target directly.
    expect((await api('DELETE', '/api/routes/chat-later')).status).toBeLessThan(300);
    await expect(client.chat.completions.create({ model: 'chat-later', messages: hi })).rejects.toMatchObject({ status: 404 });
    await refusal(client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi }));
  });
});

describe('a key listing models, asking for a route it does not list', () => {
  it('may use the route when every target and fallback is in its list, fallback included', async () => {
    const client = await keyFor('all-targets', ['openai/gpt-4o-mini', 'openai/error-503', 'groq/llama-3.1-8b-instant']);
    const completion = await client.chat.completions.create({ model: 'chat-default', messages: hi });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    const flaky = await client.chat.completions.create({ model: 'chat-flaky', messages: hi });
    expect(flaky.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini', 'error-503', 'llama-3.1-8b-instant']);
  });

  it('is refused, naming the fallback it lacks, and nothing reaches the upstream', async () => {
    const client = await keyFor('no-groq', ['openai/*']);
    for (const stream of [false, true]) {
      const denied = await refusal(client.chat.completions.create({ model: 'chat-default', messages: hi, stream }));
      expect(denied.param).toBe('model');
      expect(denied.message).toContain("route 'chat-default' can reach 'groq/llama-3.1-8b-instant', which the virtual key 'no-groq' does not allow");
    }
    await refusal(client.chat.completions.create({ model: 'chat-flaky', messages: hi }));
    expect(upstream.calls).toHaveLength(0);
    // The route whose targets are all OpenAI's is allowed.
    await client.chat.completions.create({ model: 'chat-big', messages: hi });
    expect(upstream.calls).toHaveLength(1);
  });
});

describe("a request's own fallbacks", () => {
  it('are refused when outside the key list, before any call', async () => {
    const client = await keyFor('openai-only', ['openai/*']);
    const direct = await refusal(
      client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi, fallbacks: ['groq/llama-3.1-8b-instant'] } as never),
    );
    expect(direct.param).toBe('fallbacks[0]');
    expect(direct.message).toContain("'groq/llama-3.1-8b-instant'");
    const viaRoute = await refusal(
      client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi, fallbacks: ['openai/gpt-4o-mini', 'chat-default'] } as never),
    );
    expect(viaRoute.param).toBe('fallbacks[1]');
    expect(viaRoute.message).toContain("route 'chat-default' can reach 'groq/llama-3.1-8b-instant'");
    expect(upstream.calls).toHaveLength(0);

    const allowed = await client.chat.completions.create({ model: 'openai/error-503', messages: hi, fallbacks: ['openai/gpt-4o-mini'] } as never);
    expect((allowed as OpenAI.ChatCompletion).choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['error-503', 'gpt-4o-mini']);
  });
});

describe('routing rules', () => {
  it('cannot send a key to a model outside its list: a rule that applies to the request refuses it', async () => {
    const client = await keyFor('openai-only-rules', ['openai/*']);
    const denied = await refusal(client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi, metadata: { tier: 'free' } }));
    expect(denied.message).toContain("Routing rule 'free-tier' may send this request to route 'chat-default', which can reach 'groq/llama-3.1-8b-instant'");
    expect(upstream.calls).toHaveLength(0);
    // Without the metadata the rule does not apply, and the model is the key's.
    await client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi, metadata: { tier: 'paid' } });
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o']);
  });

  it('may redirect a key that allows the destination', async () => {
    const client = await keyFor('with-route', ['openai/*', 'chat-default']);
    const completion = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi, metadata: { tier: 'free' } });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini']);
  });
});
