import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { GatewayEvents } from '../../src/core/events.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Five scripted upstreams at once, each its own provider: one failing with 500s, one answering 429 with
// retry-after, one stalling, one resetting connections, one healthy.
let failing: ScriptedUpstream;
let limited: ScriptedUpstream;
let stalling: ScriptedUpstream;
let resetting: ScriptedUpstream;
let healthy: ScriptedUpstream;
let tg: RunningGateway | null = null;

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

function provider(upstream: ScriptedUpstream, timeouts?: { first_byte_ms?: number; idle_ms?: number; total_ms?: number }) {
  return { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-test', ...(timeouts ? { timeouts } : {}) };
}

function providers() {
  return {
    failing: provider(failing),
    limited: provider(limited),
    // first_byte_ms bounds a stream's start; a whole answer's wait is bounded by total_ms.
    stalling: provider(stalling, { first_byte_ms: 300, idle_ms: 300, total_ms: 1_000 }),
    resetting: provider(resetting),
    healthy: provider(healthy),
  };
}

async function start(config: ConfigInput): Promise<RunningGateway> {
  tg = await startGateway({ ...config, providers: { ...providers(), ...config.providers } });
  return tg;
}

/** Events of one kind, collected from now on. */
function collect<K extends keyof GatewayEvents>(gateway: RunningGateway, name: K): Array<GatewayEvents[K]> {
  const seen: Array<GatewayEvents[K]> = [];
  gateway.gateway.bus.on(name, (payload) => seen.push(payload));
  return seen;
}

async function health(gateway: RunningGateway, name: string): Promise<any> {
  const response = await fetch(`${gateway.url}/api/routes/${name}/health`);
  expect(response.status).toBe(200);
  return response.json();
}

/** Sends `count` requests, `concurrency` at a time, and returns every raw response. */
async function load(gateway: RunningGateway, model: string, count: number, concurrency: number, extra: Record<string, unknown> = {}): Promise<Response[]> {
  const responses: Response[] = [];
  let next = 0;
  async function worker(): Promise<void> {
    while (next < count) {
      next++;
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages, ...extra }),
      });
      await response.arrayBuffer();
      responses.push(response);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  return responses;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  const started = () => startOpenAIUpstream({ apiKey: 'sk-test' });
  [failing, limited, stalling, resetting, healthy] = await Promise.all([started(), started(), started(), started(), started()]);
});
afterAll(async () => {
  await Promise.all([failing, limited, stalling, resetting, healthy].map((upstream) => upstream.close()));
});
beforeEach(() => {
  for (const upstream of [failing, limited, stalling, resetting, healthy]) upstream.reset();
  failing.setMode({ kind: 'error', status: 500 });
  limited.setMode({ kind: 'error', status: 429, headers: { 'retry-after': '30' } });
  stalling.setMode({ kind: 'slow-headers', delayMs: 5_000 });
  resetting.setMode({ kind: 'reset' });
});
afterEach(async () => {
  await tg?.stop();
  tg = null;
});

const everyTarget = {
  targets: ['failing/m', 'limited/m', 'stalling/m', 'resetting/m', 'healthy/m'].map((model) => ({ model, weight: 1 })),
  retry: { max_attempts: 5, initial_delay_ms: 10, max_delay_ms: 50 },
  breaker: { consecutive_failures: 2, cooldown_ms: 60_000 },
};

describe('fault injection across five upstreams', () => {
  it('answers every request while a healthy target exists, and the breakers stop calls to the broken ones', async () => {
    const gateway = await start({ routes: { mixed: everyTarget } });
    const opened = collect(gateway, 'breaker.opened');
    const failed = collect(gateway, 'provider.failed');

    const plain = await load(gateway, 'mixed', 40, 4);
    const streamed = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const stream = await gateway.client.chat.completions.create({ model: 'mixed', messages, stream: true });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        return text;
      }),
    );

    expect(plain.map((response) => response.status)).toEqual(Array(40).fill(200));
    expect(plain.every((response) => response.headers.get('x-tollgate-provider') === 'healthy')).toBe(true);
    expect(streamed).toEqual(Array(10).fill('echo: hi'));
    expect(healthy.calls).toHaveLength(50);
    // Two failures open a breaker; an open target is skipped without a call. Calls already in flight when it
    // opened (4 requests at a time) may still fail, so at most 2 + 3 calls reach a broken target, of 50 requests.
    for (const broken of [failing, resetting, stalling]) {
      expect(broken.calls.length).toBeGreaterThanOrEqual(2);
      expect(broken.calls.length).toBeLessThanOrEqual(5);
    }
    // A 429 pauses its target for the retry-after instead of opening the breaker: the first calls, then no more.
    expect(limited.calls.length).toBeGreaterThanOrEqual(1);
    expect(limited.calls.length).toBeLessThanOrEqual(4);
    expect(new Set(opened.map((event) => event.label))).toEqual(new Set(['failing/m', 'resetting/m', 'stalling/m']));
    expect(failed.every((event) => event.willRetry)).toBe(true);

    const view = await health(gateway, 'mixed');
    const byTarget = Object.fromEntries(view.groups[0].targets.map((target: any) => [target.target, target]));
    expect(byTarget['failing/m'].breaker.state).toBe('open');
    expect(byTarget['failing/m'].effective_weight).toBe(0);
    expect(byTarget['limited/m'].health.rate_limited_until).not.toBeNull();
    expect(byTarget['healthy/m'].breaker.state).toBe('closed');
    expect(byTarget['healthy/m'].share).toBeGreaterThan(0.9);
    // The view never shows a provider key.
    expect(JSON.stringify(view)).not.toContain('sk-test');
  }, 30_000);

  it('lets a healed target back after the cool-down: a trial call, then breaker.closed and traffic again', async () => {
    const gateway = await start({
      routes: {
        pair: {
          targets: [
            { model: 'failing/m', weight: 1 },
            { model: 'healthy/m', weight: 1 },
          ],
          breaker: { consecutive_failures: 2, cooldown_ms: 1500 },
          adaptive: false,
        },
      },
    });
    // A cool-down the first ten requests fit in even on a loaded machine (at 400 ms they took longer there, a trial
    // call went out among them and the failing target was called three times).
    const closed = collect(gateway, 'breaker.closed');
    await load(gateway, 'pair', 10, 1);
    expect(failing.calls.length).toBe(2);
    expect((await health(gateway, 'pair')).groups[0].targets[0].breaker.state).toBe('open');

    failing.setMode({ kind: 'ok' });
    await sleep(1550);
    expect((await health(gateway, 'pair')).groups[0].targets[0].breaker.state).toBe('half-open');
    const after = await load(gateway, 'pair', 20, 1);
    expect(after.every((response) => response.status === 200)).toBe(true);
    expect(closed.map((event) => event.label)).toEqual(['failing/m']);
    // Back in the rotation at its configured weight (1:1).
    expect(failing.calls.length - 2).toBe(10);
    expect((await health(gateway, 'pair')).groups[0].targets[0].breaker.state).toBe('closed');
  }, 30_000);

  it('closes a half-open breaker once a trial stream answers, not when its last chunk comes: other requests are served meanwhile', async () => {
    const gateway = await start({ routes: { solo: { targets: [{ model: 'failing/m', weight: 1 }], breaker: { consecutive_failures: 1, cooldown_ms: 300 }, retry: { max_attempts: 1 } } } });
    const closed = collect(gateway, 'breaker.closed');
    expect((await load(gateway, 'solo', 1, 1))[0]?.status).toBe(500);
    await sleep(350);
    // The trial: a long answer, one chunk every 150 ms.
    failing.setMode({ kind: 'ok' });
    failing.enqueue({ kind: 'slow-chunks', delayMs: 150 });
    const stream = await gateway.client.chat.completions.create({ model: 'solo', messages, stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    expect(closed.map((event) => event.label)).toEqual(['failing/m']);
    // While it still streams, the healed target takes other requests instead of a 503 'every breaker is open'.
    const during = await load(gateway, 'solo', 3, 3);
    expect(during.map((response) => response.status)).toEqual([200, 200, 200]);
    let text = '';
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) text += next.value.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    expect((await health(gateway, 'solo')).groups[0].targets[0].breaker).toMatchObject({ state: 'closed', consecutive_failures: 0 });
  });

  it('opens on the failure rate of its window, and reading a health view does not reset that window', async () => {
    // Only the failure rate can open this breaker: 4 calls in a 10 s window, half of them failed.
    const gateway = await start({
      routes: {
        rated: {
          targets: [{ model: 'failing/m', weight: 1 }],
          retry: { max_attempts: 1 },
          breaker: { consecutive_failures: 100, failure_rate: 0.5, min_requests: 4, window_ms: 10_000 },
        },
      },
    });
    const opened = collect(gateway, 'breaker.opened');
    expect((await load(gateway, 'rated', 3, 1)).map((response) => response.status)).toEqual([500, 500, 500]);
    // The same target seen through its own name, under the default policy (a 30 s window): a read, nothing more.
    const direct = await health(gateway, 'failing/m');
    expect(direct.groups[0].targets[0].breaker.window_calls).toBe(3);
    expect((await health(gateway, 'rated')).groups[0].targets[0].breaker).toMatchObject({ state: 'closed', window_calls: 3, failure_rate: 1 });

    expect((await load(gateway, 'rated', 1, 1))[0]?.status).toBe(500);
    expect(opened.map((event) => event.label)).toEqual(['failing/m']);
    expect((await health(gateway, 'rated')).groups[0].targets[0].breaker.state).toBe('open');
  });

  it("opens on the failure rate of a route's window while the same target also takes direct requests under another window", async () => {
    const gateway = await start({
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 100 } } },
      routes: { rated: { targets: [{ model: 'failing/m', weight: 1 }], breaker: { failure_rate: 0.5, min_requests: 4, window_ms: 10_000 } } },
    });
    // Route and direct requests take turns on failing/m: every one of them counts in the route's 10 s window.
    const statuses: number[] = [];
    for (const model of ['rated', 'failing/m', 'rated', 'failing/m', 'rated']) statuses.push(...(await load(gateway, model, 1, 1)).map((response) => response.status));
    expect(statuses).toEqual([500, 500, 500, 500, 500]);
    expect((await health(gateway, 'rated')).groups[0].targets[0].breaker).toMatchObject({ state: 'open', window_calls: 5, failure_rate: 1 });
    const error = await gateway.client.chat.completions.create({ model: 'rated', messages }).catch((err: unknown) => err);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect(failing.calls).toHaveLength(5);
  });

  it('answers 503 without an upstream call when every target of the request is open', async () => {
    const gateway = await start({
      routes: { doomed: { targets: [{ model: 'failing/m', weight: 1 }], retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2 } } },
    });
    const first = await load(gateway, 'doomed', 2, 1);
    expect(first.map((response) => response.status)).toEqual([500, 500]);
    const error = await gateway.client.chat.completions.create({ model: 'doomed', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(503);
    expect(apiError.code).toBe('all_targets_unavailable');
    expect(apiError.message).toMatch(/circuit breaker is open.*failing\/m/);
    expect(Number(apiError.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(failing.calls.length).toBe(2);
  });

  it('moves a stream that fails before its first byte to the next target', async () => {
    const gateway = await start({
      routes: { streamy: { targets: [{ model: 'resetting/m', weight: 1 }], fallbacks: ['stalling/m', 'healthy/m'] } },
    });
    const fallbacks = collect(gateway, 'fallback.used');
    const { data: stream, response } = await gateway.client.chat.completions.create({ model: 'streamy', messages, stream: true }).withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-attempts')).toBe('3');
    expect(response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(fallbacks.map((event) => [event.from, event.to])).toEqual([
      ['resetting/m', 'stalling/m'],
      ['stalling/m', 'healthy/m'],
    ]);
  });
});

describe('retries', () => {
  it('retries a 429 after the upstream retry-after and succeeds on the same target', async () => {
    const gateway = await start({ routes: { solo: { targets: [{ model: 'limited/m', weight: 1 }] } } });
    limited.setMode({ kind: 'ok' });
    limited.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '1' } });
    const started = Date.now();
    const { data, response } = await gateway.client.chat.completions.create({ model: 'solo', messages }).withResponse();
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-attempts')).toBe('2');
    expect(response.headers.get('x-tollgate-fallback')).toBe('false');
    expect(limited.calls).toHaveLength(2);
  });

  it('waits out the retry-after of a 503 too before calling the target again', async () => {
    // HTTP defines retry-after for 503 (overloaded, in maintenance) as much as for 429.
    const gateway = await start({ routes: { solo: { targets: [{ model: 'failing/m', weight: 1 }] } } });
    failing.setMode({ kind: 'ok' });
    failing.enqueue({ kind: 'error', status: 503, headers: { 'retry-after': '1' } });
    const started = Date.now();
    const { data, response } = await gateway.client.chat.completions.create({ model: 'solo', messages }).withResponse();
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-attempts')).toBe('2');
    expect(failing.calls).toHaveLength(2);
  });

  it('keeps the health view readable after an upstream asks for an absurd retry-after', async () => {
    // 99999999999999 s: as a time, past the last date JavaScript can write (year 275760).
    limited.setMode({ kind: 'error', status: 429, headers: { 'retry-after': '99999999999999' } });
    const gateway = await start({ routes: { solo: { targets: [{ model: 'limited/m', weight: 1 }] } } });
    const error = await gateway.client.chat.completions.create({ model: 'solo', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const target = (await health(gateway, 'solo')).groups[0].targets[0];
    expect(Date.parse(target.health.rate_limited_until)).toBeGreaterThan(Date.now() + 24 * 3600_000);
  });

  it('gives up at the deadline rather than wait out a long retry-after', async () => {
    const gateway = await start({ routes: { solo: { targets: [{ model: 'limited/m', weight: 1 }], retry: { deadline_ms: 2_000 } } } });
    const started = Date.now();
    const error = await gateway.client.chat.completions.create({ model: 'solo', messages }).catch((err: unknown) => err);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.calls).toHaveLength(1);
  });

  it('sends non-retryable client errors straight back, unless the route fails over on them', async () => {
    failing.setMode({ kind: 'error', status: 400, message: 'bad field' });
    const gateway = await start({
      routes: {
        strict: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['healthy/m'] },
        lenient: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['healthy/m'], fallback_on_client_errors: true },
      },
    });
    const error = await gateway.client.chat.completions.create({ model: 'strict', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(healthy.calls).toHaveLength(0);
    expect(failing.calls).toHaveLength(1);

    const ok = await gateway.client.chat.completions.create({ model: 'lenient', messages });
    expect(ok.choices[0]?.message.content).toBe('echo: hi');
    expect(healthy.calls).toHaveLength(1);
  });

  it('counts a fallback naming one of the route’s own targets as that target: no second call at once, the next fallback gets its turn', async () => {
    const gateway = await start({ routes: { again: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['failing/m', 'healthy/m'], retry: { max_attempts: 2 } } } });
    const fallbacks = collect(gateway, 'fallback.used');
    const { data, response } = await gateway.client.chat.completions.create({ model: 'again', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(failing.calls).toHaveLength(1);
    expect(fallbacks.map((event) => [event.from, event.to])).toEqual([['failing/m', 'healthy/m']]);
  });

  it('fails over on a client error but never sends the request to a target that refused it again', async () => {
    // Both targets refuse the request as bad: the fallback is tried, but a 400 is the same on a retry.
    failing.setMode({ kind: 'error', status: 400, message: 'bad field' });
    healthy.setMode({ kind: 'error', status: 422, message: 'unprocessable field' });
    const gateway = await start({
      routes: { lenient: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['healthy/m'], fallback_on_client_errors: true, retry: { initial_delay_ms: 10 } } },
    });
    const failed = collect(gateway, 'provider.failed');
    const error = await gateway.client.chat.completions.create({ model: 'lenient', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as Error).message).toContain('unprocessable field');
    expect(failing.calls).toHaveLength(1);
    expect(healthy.calls).toHaveLength(1);
    expect(failed.map((event) => [event.provider, event.willRetry])).toEqual([
      ['failing', true],
      ['healthy', false],
    ]);
  });

  it('retries direct <provider>/<model> requests too, with backoff, and stops at max attempts', async () => {
    const gateway = await start({ settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 10 } } } });
    failing.setMode({ kind: 'ok' });
    failing.enqueue({ kind: 'error', status: 503 });
    const { response } = await gateway.client.chat.completions.create({ model: 'failing/m', messages }).withResponse();
    expect(response.headers.get('x-tollgate-attempts')).toBe('2');

    failing.enqueue({ kind: 'error', status: 502 }, { kind: 'error', status: 502 }, { kind: 'error', status: 502 });
    const error = await gateway.client.chat.completions.create({ model: 'failing/m', messages }).catch((err: unknown) => err);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(502);
    // The last upstream message as written; the attempt count and provider travel in headers, not in the message.
    expect(apiError.message).toBe('502 The server had an error while processing your request. Sorry about that!');
    expect(apiError.headers?.get('x-tollgate-attempts')).toBe('2');
    expect(apiError.headers?.get('x-tollgate-provider')).toBe('failing');
    expect(failing.calls).toHaveLength(4);
  });
  it("names only the answering attempt's upstream id: none when the last target never answered", async () => {
    const gateway = await start({ routes: { chain: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['resetting/m'], retry: { max_attempts: 2 } } } });
    const error = await gateway.client.chat.completions.create({ model: 'chain', messages }).catch((err: unknown) => err);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(502);
    expect(apiError.headers?.get('x-tollgate-provider')).toBe('resetting');
    // failing's 500 carried its own request id; the connection resetting/m dropped carried none.
    expect(failing.calls).toHaveLength(1);
    expect(apiError.headers?.get('x-upstream-request-id')).toBeNull();
  });
  it('says in provider.failed whether another attempt follows: not after the last one', async () => {
    const gateway = await start({ routes: { twice: { targets: [{ model: 'failing/m', weight: 1 }], retry: { max_attempts: 2, initial_delay_ms: 10 } } } });
    const failed = collect(gateway, 'provider.failed');
    const error = await gateway.client.chat.completions.create({ model: 'twice', messages }).catch((err: unknown) => err);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect(failing.calls).toHaveLength(2);
    expect(failed.map((event) => [event.attempt, event.retryable, event.willRetry])).toEqual([
      [1, true, true],
      [2, true, false],
    ]);
  });
});

describe('request fallbacks', () => {
  it('takes the fallbacks field off the upstream request and uses it in order', async () => {
    const gateway = await start({});
    const completion = await gateway.client.chat.completions.create({
      model: 'failing/m',
      messages,
      // @ts-expect-error tollgate's own request field
      fallbacks: ['resetting/m', 'healthy/m'],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(healthy.calls).toHaveLength(1);
    expect(healthy.calls[0]?.body).not.toHaveProperty('fallbacks');
    expect(failing.calls[0]?.body).not.toHaveProperty('fallbacks');
  });

  it('refuses a malformed or unknown fallback with a 400 naming it', async () => {
    const gateway = await start({});
    for (const [fallbacks, param] of [
      ['healthy/m', 'fallbacks'],
      [['nowhere/m'], 'fallbacks[0]'],
      [['healthy/m', 42], 'fallbacks'],
    ] as const) {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'healthy/m', messages, fallbacks }),
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { param: string; type: string } };
      expect(body.error).toMatchObject({ param, type: 'invalid_request_error' });
    }
    expect(healthy.calls).toHaveLength(0);
  });
});

describe('streaming under failure', () => {
  it('ends a stream that breaks after its first bytes with an error event the client raises, and does not retry it', async () => {
    const gateway = await start({ routes: { flaky: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['healthy/m'] } } });
    failing.setMode({ kind: 'break-after', chunks: 2 });
    const failures = collect(gateway, 'request.failed');
    const stream = await gateway.client.chat.completions.create({ model: 'flaky', messages, stream: true });
    const received: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/failing/);
    expect(received.length).toBeGreaterThan(0);
    expect(healthy.calls).toHaveLength(0);
    expect(failures).toHaveLength(1);
    // The request log records the attempt as failed, not as a completed answer.
    // It is written just after the answer: wait for it.
    let logs = { data: [] as Array<{ status: number; model: string }> };
    for (let i = 0; i < 250 && logs.data.length === 0; i++) {
      if (i > 0) await sleep(20);
      logs = (await (await fetch(`${gateway.url}/api/logs?limit=1`)).json()) as { data: Array<{ status: number; model: string }> };
    }
    expect(logs.data[0]).toMatchObject({ model: 'flaky', status: 502 });
  });

  it('ends a stream that stalls after its first bytes with an error event once the idle timeout passes', async () => {
    const gateway = await start({ routes: { slow: { targets: [{ model: 'stalling/m', weight: 1 }], fallbacks: ['healthy/m'] } } });
    stalling.setMode({ kind: 'stall-after', chunks: 2 });
    const started = Date.now();
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'slow', messages, stream: true }),
    });
    const text = await response.text();
    expect(Date.now() - started).toBeLessThan(3_000);
    const events = text.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toMatch(/^data: \{"error":\{"message":"stalling: The upstream stalled/);
    expect(text).not.toContain('[DONE]');
    expect(JSON.parse((events.at(-1) as string).slice('data: '.length)).error).toMatchObject({ type: 'timeout_error', code: 'upstream_timeout' });
    expect(healthy.calls).toHaveLength(0);
  });

  it('treats a stream that ends at [DONE] without a single event as a failed attempt: fallback, else 502', async () => {
    // Some OpenAI-compatible servers answer a failed generation with an empty stream: 200, then `data: [DONE]`.
    const empty = { kind: 'raw' as const, status: 200, headers: { 'content-type': 'text/event-stream' }, body: 'data: [DONE]\n\n' };
    failing.setMode(empty);
    const gateway = await start({ routes: { hollow: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['healthy/m'] } } });
    const stream = await gateway.client.chat.completions.create({ model: 'hollow', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    expect(healthy.calls).toHaveLength(1);

    // With nowhere else to go, the client gets the upstream's fault as a 502 in its own shape, not a 500 of tollgate's.
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'failing/m', messages, stream: true }),
    });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'invalid_upstream_response',
      message: expect.stringMatching(/^failing: /),
    });
  });

  it('forwards tool-call argument deltas as they arrive, never buffered into a burst', async () => {
    const gateway = await start({ routes: { tools: { targets: [{ model: 'failing/m', weight: 1 }], fallbacks: ['healthy/m'] } } });
    healthy.enqueue({ kind: 'slow-chunks', delayMs: 80 });
    const stream = await gateway.client.chat.completions.create({
      model: 'tools',
      messages,
      stream: true,
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
    });
    const arrivals: Array<{ at: number; piece: string }> = [];
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments;
      if (piece) arrivals.push({ at: Date.now(), piece });
    }
    expect(arrivals.length).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(arrivals.map((arrival) => arrival.piece).join(''))).toEqual({ query: 'hi' });
    // The upstream sends a piece every 80 ms; the client sees them spaced the same way.
    for (let i = 1; i < arrivals.length; i++) {
      expect((arrivals[i] as { at: number }).at - (arrivals[i - 1] as { at: number }).at).toBeGreaterThanOrEqual(50);
    }
  });
});
