import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A request refused by more than one full window (the key's requests per minute and its limit on the model) must
 * wait for the last of them to free a place: retry-after used to tell the first full one's wait, so a client
 * retrying as told was refused again. The gateway runs on a clock the test moves.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.parse('2027-03-10T12:00:00.000Z');

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway(
    {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    },
    {},
    { clock: () => now },
  );
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** The status of a call, and its retry-after in seconds when refused. */
async function attempt(client: OpenAI, model: string): Promise<{ status: number; retryAfter: number | null }> {
  try {
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    return { status: 200, retryAfter: null };
  } catch (err) {
    const error = err as InstanceType<typeof OpenAI.APIError>;
    const header = error.headers?.get('retry-after');
    return { status: error.status ?? 0, retryAfter: header ? Number(header) : null };
  }
}

describe('retry-after when several request windows are full', () => {
  it('tells the wait of the window that frees last, so a retry as told passes', async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'two-windows', rate_limit: 2, model_rate_limits: { 'openai/m2': 1 } });
    expect(created.status).toBe(201);
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key as string, maxRetries: 0, timeout: 15_000 });

    expect((await attempt(client, 'openai/m1')).status).toBe(200); // t=0: the key's window holds 1 of 2
    now += 20_000;
    expect((await attempt(client, 'openai/m2')).status).toBe(200); // t=20: the key's is full, and m2's (1 of 1)
    now += 1_000;
    // t=21: the key's window frees a place at t=60, m2's only at t=80.
    const refused = await attempt(client, 'openai/m2');
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBeGreaterThanOrEqual(59);
    expect(refused.retryAfter).toBeLessThanOrEqual(61);

    now += (refused.retryAfter as number) * 1_000;
    expect((await attempt(client, 'openai/m2')).status).toBe(200);
  });
});
