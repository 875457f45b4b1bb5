import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A request refused by both its key's and its team's tokens-per-minute windows must be told the wait of the window
 * that frees last: retry-after told the key's (the first one checked), which freed half a minute before the team's, so
 * a client retrying as told was refused again. Requests windows already get this right (rate-limit-retry-after). The
 * gateway runs on a clock the test moves; the upstream reports the usage the test chooses.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.parse('2027-05-12T09:00:00.000Z');

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

const { api, createKey, clientFor } = gatewayApi(() => tg.url);

/** A call of `maxTokens` whose upstream reports 10 prompt and `maxTokens` completion tokens; its status and retry-after. */
async function call(client: OpenAI, maxTokens: number): Promise<{ status: number; retryAfter: number | null; type: string | null }> {
  upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 10, completion_tokens: maxTokens, total_tokens: 10 + maxTokens } });
  try {
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens });
    return { status: 200, retryAfter: null, type: null };
  } catch (err) {
    upstream.reset();
    const error = err as InstanceType<typeof OpenAI.APIError>;
    const header = error.headers?.get('retry-after');
    return { status: error.status ?? 0, retryAfter: header ? Number(header) : null, type: error.type ?? null };
  }
}

describe("retry-after when a key's and its team's token windows are both full", () => {
  it('tells the wait of the window that frees last, so a retry as told passes', async () => {
    const team = await api('POST', '/api/teams', { name: 'tpm-team', tokens_per_minute: 1000 });
    expect(team.status).toBe(201);
    const a = clientFor((await createKey({ name: 'tpm-a', team: team.body.id, tokens_per_minute: 500 })).key);
    const b = clientFor((await createKey({ name: 'tpm-b', team: team.body.id })).key);

    // t=0: key a uses 200 tokens (its window: 200 of 500; the team's: 200 of 1000).
    expect((await call(a, 190)).status).toBe(200);
    now += 30_000;
    // t=30: key b uses 710 (the team's window: 910 of 1000).
    expect((await call(b, 700)).status).toBe(200);
    now += 1_000;
    // t=31: key a asks for about 390. Its own window has room once its 200 leave (t=60); the team's only once b's 710
    // leave too (t=90): until then 710 + 390 is over 1000.
    const refused = await call(a, 380);
    expect(refused).toMatchObject({ status: 429, type: 'tokens' });
    expect(refused.retryAfter).toBeGreaterThanOrEqual(58);
    expect(refused.retryAfter).toBeLessThanOrEqual(61);

    now += (refused.retryAfter as number) * 1_000;
    expect((await call(a, 380)).status).toBe(200);
  });
});
