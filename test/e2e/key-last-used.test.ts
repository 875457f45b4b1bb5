import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A key's record said when it was created and last edited, never when it was last used: an operator looking for
// keys nobody uses any more (to revoke them) had only the request log, which is trimmed after 30 days. Keys now
// carry last_used_at, the last time one of them was let through (to the minute), on the gateway's clock.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.parse('2028-05-10T08:00:00.000Z');

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  tg = await startGateway(openAIConfig(upstream.url), {}, { clock: () => now });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const api = (method: string, path: string, body?: unknown) => jsonRequest(tg.url, method, path, body);

/** The key's last_used_at once it reads `expected` (the time is written with the background writes, just after). */
async function lastUsed(id: string, expected: string | null): Promise<string | null> {
  let seen: string | null = null;
  for (let i = 0; i < 100; i++) {
    seen = (await api('GET', `/api/keys/${id}`)).body.last_used_at as string | null;
    if (seen === expected) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return seen;
}

describe('a virtual key’s last use', () => {
  it('is null until the key is used, then the time of its last request, to the minute', async () => {
    const created = await api('POST', '/api/keys', { name: 'last-used' });
    expect(created.status).toBe(201);
    const { id, key } = created.body as { id: string; key: string };
    expect(created.body.last_used_at).toBeNull();
    expect((await api('GET', `/api/keys/${id}`)).body.last_used_at).toBeNull();

    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(await lastUsed(id, '2028-05-10T08:00:00.000Z')).toBe('2028-05-10T08:00:00.000Z');

    // Within the minute it is not written again...
    now += 20_000;
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await api('GET', `/api/keys/${id}`)).body.last_used_at).toBe('2028-05-10T08:00:00.000Z');

    // ...after it, any request the key makes counts, a model list too.
    now += 60_000;
    await client.models.list();
    expect(await lastUsed(id, '2028-05-10T08:01:20.000Z')).toBe('2028-05-10T08:01:20.000Z');
    // It shows in the list of keys, and editing the key does not move it.
    expect((await api('PATCH', `/api/keys/${id}`, { name: 'renamed' })).body.last_used_at).toBe('2028-05-10T08:01:20.000Z');
    const listed = ((await api('GET', '/api/keys')).body.data as Array<{ id: string; last_used_at: string | null }>).find((entry) => entry.id === id);
    expect(listed?.last_used_at).toBe('2028-05-10T08:01:20.000Z');
  });

  it('is not moved by a request the key was refused for (disabled), and nobody writes it', async () => {
    const created = await api('POST', '/api/keys', { name: 'refused', disabled: true });
    const { id, key } = created.body as { id: string; key: string };
    now += 120_000;
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
    await expect(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 401 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await api('GET', `/api/keys/${id}`)).body.last_used_at).toBeNull();

    const write = await api('PATCH', `/api/keys/${id}`, { last_used_at: '2028-01-01T00:00:00Z' });
    expect(write.status).toBe(400);
    expect(write.body.error).toMatchObject({ code: 'read_only_field', param: 'last_used_at' });
  });
});
