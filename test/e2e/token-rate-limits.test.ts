import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

/**
 * An OpenAI-format upstream that holds every chat completion until the test releases it, so a burst's admitted
 * requests are all in flight at once, whatever the machine's speed. Each answer reports `completion_tokens` as the
 * request's `max_tokens`: the request used all it asked for.
 */
interface HeldUpstream {
  url: string;
  /** Requests received so far. */
  arrived: number;
  /** Answers every held request: with a completion, or with this status (an upstream failure). */
  release(status?: number): void;
  close(): Promise<void>;
}

async function startHeldUpstream(): Promise<HeldUpstream> {
  const held: Array<{ res: ServerResponse; body: { model: string; max_tokens?: number } }> = [];
  const upstream = {
    url: '',
    arrived: 0,
    release(status = 200) {
      for (const { res, body } of held.splice(0)) {
        if (status !== 200) {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'scripted failure', type: 'invalid_request_error', param: null, code: null } }));
          continue;
        }
        const completion = body.max_tokens ?? 1;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-held',
            object: 'chat.completion',
            created: 1,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'length', logprobs: null }],
            usage: { prompt_tokens: 8, completion_tokens: completion, total_tokens: 8 + completion },
          }),
        );
      }
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      upstream.arrived++;
      held.push({ res, body: JSON.parse(raw) as { model: string; max_tokens?: number } });
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return upstream;
}

let upstream: HeldUpstream;
let tg: RunningGateway;
/** The clock the gateway's rate-limit windows run on: the test moves it past a window instead of waiting. */
let now = Date.now();

beforeAll(async () => {
  upstream = await startHeldUpstream();
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } }, {}, { clock: () => now });
});
afterAll(async () => {
  upstream.release();
  await tg.stop();
  await upstream.close();
});
// A failed assertion must not leave requests held for the next test.
afterEach(() => upstream.release());

const { createKey, clientFor } = gatewayApi(() => tg.url);

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** Waits until every request of a burst either reached the upstream or was refused (a condition, not a duration). */
async function settledAtGateway(refused: () => number, total: number): Promise<void> {
  for (let i = 0; i < 500 && upstream.arrived + refused() < total; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(upstream.arrived + refused()).toBe(total);
}

/**
 * Sends `count` concurrent requests of `max_tokens` each; once every one was admitted or refused, the upstream answers
 * the admitted ones (with `status`). Returns the answers and errors.
 */
async function burst(client: OpenAI, count: number, maxTokens: number, status = 200) {
  upstream.arrived = 0;
  let refused = 0;
  const requests = Array.from({ length: count }, () =>
    client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: hi, max_tokens: maxTokens })
      .withResponse()
      .catch((err: unknown) => {
        refused++;
        throw err;
      }),
  );
  const results = Promise.allSettled(requests);
  // Refusals counted before the upstream answers anything are the gateway's own.
  await settledAtGateway(() => refused, count);
  const admitted = upstream.arrived;
  upstream.release(status);
  return { admitted, results: await results };
}

describe('tokens per minute', () => {
  it('reserves each admitted request’s estimated tokens: a concurrent burst gets only what fits the limit', async () => {
    const { key } = await createKey({ name: 'tpm-burst', budget: null, rate_limit: null, models: [], tokens_per_minute: 1000 });
    // Each request reserves its prompt (a few tokens) and its 300 output tokens: three fit in 1000, a fourth does not.
    const { admitted, results } = await burst(clientFor(key), 6, 300);
    expect(admitted).toBe(3);
    const answered = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const refusals = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as InstanceType<typeof OpenAI.RateLimitError>] : []));
    expect(answered).toHaveLength(3);
    expect(refusals).toHaveLength(3);
    for (const { response } of answered) expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
      expect(refusal).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'tokens' });
      expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refusal.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
      expect(refusal.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
      expect(refusal.headers.get('x-ratelimit-reset-tokens')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m/);
    }

    // The three used what they reserved (308 tokens each): the window holds 924 of 1000, so another 300 does not fit...
    const client = clientFor(key);
    await expect(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi, max_tokens: 300 })).rejects.toMatchObject({
      status: 429,
      type: 'tokens',
    });
    // ...until the window has slid past them.
    now += 61_000;
    const again = await burst(client, 4, 300);
    expect(again.admitted).toBe(3);
  });

  it('releases the reservation of a request that failed upstream: it used no tokens', async () => {
    const { key } = await createKey({ name: 'tpm-failed', budget: null, rate_limit: null, models: [], tokens_per_minute: 1000 });
    const client = clientFor(key);
    const failed = await burst(client, 3, 300, 400);
    expect(failed.admitted).toBe(3);
    for (const result of failed.results) expect(result).toMatchObject({ status: 'rejected', reason: { status: 400 } });
    // Nothing was used, so nothing is held: the same burst fits again at once.
    const next = await burst(client, 3, 300);
    expect(next.admitted).toBe(3);
  });

  it('releases the reservation of a request the client cancelled', async () => {
    const { key } = await createKey({ name: 'tpm-cancelled', budget: null, rate_limit: null, models: [], tokens_per_minute: 1000 });
    const client = clientFor(key);
    upstream.arrived = 0;
    const controller = new AbortController();
    const cancelled = client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi, max_tokens: 900 }, { signal: controller.signal });
    await settledAtGateway(() => 0, 1);
    // While it runs, its 900 tokens are held: another such request does not fit.
    await expect(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi, max_tokens: 900 })).rejects.toMatchObject({ status: 429, type: 'tokens' });
    controller.abort();
    await expect(cancelled).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    // The upstream answered nothing, so the request used nothing: once the gateway has seen the client leave, the
    // whole limit is free again.
    let admitted = false;
    for (let i = 0; i < 100 && !admitted; i++) {
      const attempt = await burst(client, 1, 900);
      admitted = attempt.admitted === 1;
      if (!admitted) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(admitted).toBe(true);
  });

  it('applies the team’s limit across its keys, reserved the same way', async () => {
    const { api } = gatewayApi(() => tg.url);
    const team = await api('POST', '/api/teams', { name: 'tpm-team', budget: null, rate_limit: null, tokens_per_minute: 700 });
    expect(team.status).toBe(201);
    const a = await createKey({ name: 'tpm-ta', budget: null, rate_limit: null, models: [], team: team.body.id, tokens_per_minute: 5000 });
    const b = await createKey({ name: 'tpm-tb', budget: null, rate_limit: null, models: [], team: team.body.id });
    upstream.arrived = 0;
    let refused = 0;
    const sent = [a.key, b.key, a.key, b.key].map((key) =>
      clientFor(key)
        .chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi, max_tokens: 300 })
        .withResponse()
        .catch((err: unknown) => {
          refused++;
          throw err;
        }),
    );
    const results = Promise.allSettled(sent);
    await settledAtGateway(() => refused, 4);
    expect(upstream.arrived).toBe(2);
    upstream.release();
    const settled = await results;
    const refusals = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason as InstanceType<typeof OpenAI.RateLimitError>] : []));
    expect(refusals).toHaveLength(2);
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'tokens' });
      expect(refusal.message).toContain("team 'tpm-team'");
      // The team's limit refused it, so its headers describe the team's window, not the key's.
      expect(refusal.headers.get('x-ratelimit-limit-tokens')).toBe('700');
    }
    // The answered ones report the tighter of the two windows: the team's.
    for (const result of settled) if (result.status === 'fulfilled') expect(result.value.response.headers.get('x-ratelimit-limit-tokens')).toBe('700');
  });
});
