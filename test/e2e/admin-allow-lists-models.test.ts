import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A virtual key's `models` is checked against the running config when written (POST and PATCH /api/keys): an entry
 * that can match nothing the config can serve (a misspelt provider or route, a bare model name, a model no key of
 * a provider serves) is a 400 naming it, where it used to be stored and refuse every call of the key (403). What is
 * open stays open: a configured provider takes any model name, a route pattern every name it matches.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);
const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  const base_url = `${upstream.url}/v1`;
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url, api_key: 'sk-upstream' },
      // A provider whose only key lists its models: nothing else reaches it.
      lab: { type: 'openai', base_url, keys: [{ value: 'sk-upstream', models: ['llama-local'] }] },
    },
    routes: {
      'chat-default': { targets: [{ model: 'openai/gpt-4o-mini' }] },
      // A pattern: a request for `fast-turbo` goes to `openai/turbo`.
      'fast-*': { targets: [{ model: 'openai/*' }] },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

async function refused(body: Record<string, unknown>, path = '/api/keys', method = 'POST'): Promise<{ param: string; message: string }> {
  const answer = await api(method, path, body);
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value' });
  return answer.body.error;
}

async function answerOf(client: OpenAI, model: string): Promise<string | null | undefined> {
  const completion = await client.chat.completions.create({ model, messages: hi, max_tokens: 5 });
  return completion.choices[0]?.message.content;
}

describe('a models entry naming a provider the config does not have', () => {
  it('is a 400 naming the entry and the provider meant, on create and on update; the right name is taken and calls', async () => {
    const typo = await refused({ name: 'typo', models: ['openai/*', 'opnai/gpt-4o-mini'] });
    expect(typo.param).toBe('models.1');
    expect(typo.message).toContain("Invalid 'models.1': 'opnai/gpt-4o-mini' names no route and no provider 'opnai' (did you mean 'openai/gpt-4o-mini'?)");
    // A pattern under a misspelt provider matches nothing either.
    expect((await refused({ name: 'typo', models: ['opnai/*'] })).message).toContain("'opnai/*' names no route and no provider 'opnai' (did you mean 'openai/*'?)");
    // A Hugging Face style id is no provider's either.
    expect((await refused({ name: 'hf', models: ['meta-llama/Llama-3.1-8B-Instruct'] })).message).toContain("no provider 'meta-llama'");
    expect((await api('GET', '/api/keys')).body.data).toEqual([]);

    const key = await createKey({ name: 'mini', models: ['openai/gpt-4o-mini'] });
    const patched = await refused({ models: ['opnai/gpt-4o-mini'] }, `/api/keys/${key.id}`, 'PATCH');
    expect(patched.param).toBe('models.0');
    expect((await api('GET', `/api/keys/${key.id}`)).body.models).toEqual(['openai/gpt-4o-mini']);
    expect(await answerOf(clientFor(key.key), 'openai/gpt-4o-mini')).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini']);
  });

  it('takes a model of a configured provider that its catalogue does not list: the provider takes any name', async () => {
    // Refused first, with the same list but for the misspelt provider.
    expect((await refused({ name: 'new', models: ['opnai/gpt-9-preview'] })).param).toBe('models.0');
    const key = await createKey({ name: 'new', models: ['openai/gpt-9-preview', 'anthropic/claude-sonnet-4-5'] });
    expect(await answerOf(clientFor(key.key), 'openai/gpt-9-preview')).toBe('echo: hi');
    await expect(clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o', messages: hi })).rejects.toMatchObject({ status: 403, code: 'model_not_allowed' });
  });
});

describe('a models entry naming no route', () => {
  it('is a 400 naming it and the route meant; a route, and a name a route pattern serves, are taken and call', async () => {
    const typo = await refused({ name: 'route-typo', models: ['chat-defualt'] });
    expect(typo.param).toBe('models.0');
    expect(typo.message).toContain("'chat-defualt' is no route (did you mean 'chat-default'?) and no '<provider>/<model>' name (routes: chat-default, fast-*)");
    expect((await refused({ name: 'pattern-typo', models: ['chat-*', 'fats-*'] })).message).toContain("'fats-*' matches no route and no '<provider>/<model>' of a known provider");

    const key = await createKey({ name: 'routes', models: ['chat-default', 'fast-turbo', 'fast-*'] });
    const client = clientFor(key.key);
    expect(await answerOf(client, 'chat-default')).toBe('echo: hi');
    expect(await answerOf(client, 'fast-turbo')).toBe('echo: hi');
    expect(await answerOf(client, 'fast-other')).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['gpt-4o-mini', 'turbo', 'other']);
  });

  it('is a 400 for a bare model name, which a request resolves before the list is read: it says what to list', async () => {
    const bare = await refused({ name: 'bare', models: ['gpt-4o-mini'] });
    expect(bare.message).toContain("'gpt-4o-mini' is no route, and a key's list is read against the '<provider>/<model>' a request's bare name resolves to: list 'openai/gpt-4o-mini'");
    const key = await createKey({ name: 'resolved', models: ['openai/gpt-4o-mini'] });
    // The client's bare name is served under the listed name.
    expect(await answerOf(clientFor(key.key), 'gpt-4o-mini')).toBe('echo: hi');
  });
});

describe('a models entry for a provider whose keys list their models', () => {
  it("is a 400 for a model none of its keys serves (the request would be a 404), and takes one they do", async () => {
    const typo = await refused({ name: 'lab-typo', models: ['lab/llama-locl'] });
    expect(typo.message).toContain("'lab/llama-locl' is no model provider 'lab' serves (did you mean 'lab/llama-local'?): its keys serve only llama-local");
    expect((await refused({ name: 'lab-pattern', models: ['lab/gpt-*'] })).message).toContain("'lab/gpt-*' matches no model provider 'lab' serves");
    const key = await createKey({ name: 'lab', models: ['lab/llama-local', 'lab/llama-*'] });
    expect(await answerOf(clientFor(key.key), 'lab/llama-local')).toBe('echo: hi');
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['llama-local']);
  });
});

describe('an entry the config later stops serving', () => {
  it('keeps refusing cleanly, in each route shape: a 403 for what the key does not list, a 404 for the name now unknown', async () => {
    expect((await api('PUT', '/api/routes/chat-later', { targets: [{ model: 'openai/gpt-4o' }] })).status).toBe(201);
    expect((await api('PUT', '/api/providers/lab-later', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ value: 'sk-upstream' }] })).status).toBe(201);
    const key = await createKey({ name: 'later', models: ['chat-later', 'lab-later/m'] });
    const client = clientFor(key.key);
    expect(await answerOf(client, 'chat-later')).toBe('echo: hi');
    expect(await answerOf(client, 'lab-later/m')).toBe('echo: hi');

    expect((await api('DELETE', '/api/routes/chat-later')).status).toBeLessThan(300);
    expect((await api('DELETE', '/api/providers/lab-later')).status).toBeLessThan(300);
    upstream.reset();
    // OpenAI shape.
    const denied = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi }).catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied).toMatchObject({ status: 403, code: 'model_not_allowed' });
    await expect(client.chat.completions.create({ model: 'chat-later', messages: hi })).rejects.toMatchObject({ status: 404 });
    await expect(client.chat.completions.create({ model: 'lab-later/m', messages: hi })).rejects.toMatchObject({ status: 404 });
    // Anthropic shape, from the Anthropic SDK.
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const refusedThere = await anthropic.messages.create({ model: 'openai/gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(refusedThere).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((refusedThere as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(upstream.calls).toHaveLength(0);

    // The stored list is kept, and the key can be changed in other fields; writing the list again is checked.
    expect((await api('GET', `/api/keys/${key.id}`)).body.models).toEqual(['chat-later', 'lab-later/m']);
    expect((await api('PATCH', `/api/keys/${key.id}`, { budget: 5 })).status).toBe(200);
    expect((await refused({ models: ['chat-later', 'lab-later/m'] }, `/api/keys/${key.id}`, 'PATCH')).param).toBe('models.0');
  });
});
