import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResetDuration } from '../../src/core/durations.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A request refused by a full requests-per-minute window AND a full tokens-per-minute window (the key's or its team's)
 * must be told the wait of the one that frees last: the stage answered from the request windows alone (checked
 * first), so a client waiting as told was refused again by the token window. The 429's body, headers, metric and
 * request-log entry must name the same limit and the same wait. The gateway runs on a clock the test moves; the
 * upstream reports the usage the test chooses.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.parse('2027-06-02T10:00:00.000Z');

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

interface Refusal {
  status: number;
  type: string | null;
  code: string | null;
  message: string;
  retryAfter: number | null;
  headers: Headers;
}

/** A call of `maxTokens` whose upstream reports 10 prompt and `maxTokens` completion tokens: null when answered, else the refusal. */
async function call(client: OpenAI, maxTokens: number): Promise<Refusal | null> {
  upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 10, completion_tokens: maxTokens, total_tokens: 10 + maxTokens } });
  try {
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens });
    return null;
  } catch (err) {
    upstream.reset();
    if (!(err instanceof OpenAI.APIError)) throw err;
    const header = err.headers?.get('retry-after');
    return {
      status: err.status ?? 0,
      type: err.type ?? null,
      code: typeof err.code === 'string' ? err.code : null,
      message: (err.error as { message?: string } | undefined)?.message ?? '',
      retryAfter: header ? Number(header) : null,
      headers: err.headers as Headers,
    };
  }
}

async function rejections(labels: { scope: string; unit: string }): Promise<number> {
  const text = await (await fetch(`${tg.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_ratelimit_rejections_total{') && l.includes(`scope="${labels.scope}"`) && l.includes(`unit="${labels.unit}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Waits (a condition, bounded) until /metrics counts `target` rejections of `labels`. */
async function rejectionsReach(labels: { scope: string; unit: string }, target: number): Promise<number> {
  let seen = await rejections(labels);
  for (let i = 0; i < 100 && seen < target; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    seen = await rejections(labels);
  }
  return seen;
}

/** The request-log entry of a refusal, by the x-request-id its client got (written just after the answer). */
async function logEntry(refusal: Refusal): Promise<any> {
  const id = refusal.headers.get('x-request-id');
  expect(id).toBeTruthy();
  for (let i = 0; i < 100; i++) {
    const res = await api('GET', `/api/logs/${id}`);
    if (res.status === 200) return res.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no request-log entry for ${id}`);
}

/** The refusal's body and headers tell one wait, of the one limit it names. */
function expectConsistent(refusal: Refusal, unit: 'requests' | 'tokens', limit: number): void {
  expect(refusal).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: unit });
  expect(refusal.message).toContain(`limit ${limit} ${unit} per minute`);
  const retryAfter = refusal.retryAfter as number;
  // Every reset header the 429 carries tells the same wait as retry-after (to the second it rounds up to).
  const resets = ['requests', 'tokens'].flatMap((u) => {
    const value = refusal.headers.get(`x-ratelimit-reset-${u}`);
    return value === null ? [] : [{ unit: u, value }];
  });
  expect(resets.map((r) => r.unit)).toContain(unit);
  for (const { value } of resets) {
    const ms = parseResetDuration(value) as number;
    expect(Math.max(1, Math.ceil(ms / 1000))).toBe(retryAfter);
    // The message says the same wait.
    if (resets.length === 1) expect(refusal.message).toContain(`Try again in ${value}.`);
  }
  expect(refusal.headers.get(`x-ratelimit-limit-${unit}`)).toBe(String(limit));
  expect(refusal.headers.get(`x-ratelimit-remaining-${unit}`)).toBe('0');
  const retryAfterMs = refusal.headers.get('retry-after-ms');
  if (retryAfterMs !== null) expect(Math.max(1, Math.ceil(Number(retryAfterMs) / 1000))).toBe(retryAfter);
}

describe('retry-after when a request window and a token window are both full', () => {
  it("key: tells the token window's later wait, so a retry as told passes", async () => {
    const client = clientFor((await createKey({ name: 'both-key', rate_limit: 2, tokens_per_minute: 1000 })).key);

    // t=0: 15 tokens, request 1 of 2.
    expect(await call(client, 5)).toBeNull();
    now += 30_000;
    // t=30: 910 tokens (the window: 925 of 1000), request 2 of 2.
    expect(await call(client, 900)).toBeNull();
    now += 1_000;
    // t=31: a request of about 310 tokens. The request window frees a place at t=60; the token window has room for it
    // only once the 910 leave, at t=90.
    const before = await rejections({ scope: 'key', unit: 'tokens' });
    const refused = (await call(client, 300)) as Refusal;
    expect(refused).not.toBeNull();
    expect(refused.retryAfter).toBeGreaterThanOrEqual(58);
    expect(refused.retryAfter).toBeLessThanOrEqual(61);
    // The limit that keeps it out longest is the one named, everywhere.
    expectConsistent(refused, 'tokens', 1000);
    expect(await rejectionsReach({ scope: 'key', unit: 'tokens' }, before + 1)).toBe(before + 1);
    expect(await logEntry(refused)).toMatchObject({ status: 429, error_code: 'rate_limit_exceeded', error_type: 'tokens', error_message: refused.message });

    // The refused request held nothing: waiting as told, the same request passes.
    now += (refused.retryAfter as number) * 1_000;
    expect(await call(client, 300)).toBeNull();
  });

  it("team: the key's request window and the team's token window, the team's wait told", async () => {
    const team = await api('POST', '/api/teams', { name: 'both-team', tokens_per_minute: 1000 });
    expect(team.status).toBe(201);
    const client = clientFor((await createKey({ name: 'both-team-key', team: team.body.id, rate_limit: 2 })).key);

    expect(await call(client, 5)).toBeNull(); // t=0
    now += 30_000;
    expect(await call(client, 900)).toBeNull(); // t=30: the team's tokens 925 of 1000, the key's requests 2 of 2
    now += 1_000;
    const before = await rejections({ scope: 'team', unit: 'tokens' });
    const refused = (await call(client, 300)) as Refusal;
    expect(refused).not.toBeNull();
    expect(refused.retryAfter).toBeGreaterThanOrEqual(58);
    expect(refused.retryAfter).toBeLessThanOrEqual(61);
    expectConsistent(refused, 'tokens', 1000);
    expect(refused.message).toContain("team 'both-team'");
    expect(await rejectionsReach({ scope: 'team', unit: 'tokens' }, before + 1)).toBe(before + 1);
    expect(await logEntry(refused)).toMatchObject({ status: 429, error_type: 'tokens', error_message: refused.message });

    now += (refused.retryAfter as number) * 1_000;
    expect(await call(client, 300)).toBeNull();
  });

  it('control: when the request window frees last, its wait is told and it is named', async () => {
    const created = await createKey({ name: 'both-requests-last', tokens_per_minute: 1000 });
    const client = clientFor(created.key);
    // t=0, before the key has a request limit: 910 tokens.
    expect(await call(client, 900)).toBeNull();
    expect((await api('PATCH', `/api/keys/${created.id}`, { rate_limit: 1 })).status).toBe(200);
    now += 30_000;
    // t=30: request 1 of 1 (frees at t=90); tokens 925 of 1000 (room for ~310 once the 910 leave, at t=60).
    expect(await call(client, 5)).toBeNull();
    now += 1_000;
    const before = await rejections({ scope: 'key', unit: 'requests' });
    const refused = (await call(client, 300)) as Refusal;
    expect(refused).not.toBeNull();
    expect(refused.retryAfter).toBeGreaterThanOrEqual(58);
    expect(refused.retryAfter).toBeLessThanOrEqual(61);
    expectConsistent(refused, 'requests', 1);
    expect(await rejectionsReach({ scope: 'key', unit: 'requests' }, before + 1)).toBe(before + 1);

    now += (refused.retryAfter as number) * 1_000;
    expect(await call(client, 300)).toBeNull();
  });
});
