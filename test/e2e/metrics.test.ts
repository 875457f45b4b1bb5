import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let primary: ScriptedUpstream;
let backup: ScriptedUpstream;
let tg: RunningGateway;

/** $1 per million input tokens, $2 per million output tokens. */
const PRICES = { m: { input_per_mtok: 1, output_per_mtok: 2 } };

beforeAll(async () => {
  primary = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
  backup = await startOpenAIUpstream({ apiKey: 'sk-b', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${primary.url}/v1`, api_key: 'sk-a', prices: PRICES },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-b', prices: PRICES },
    },
    routes: { chat: { targets: [{ model: 'openai/m' }], fallbacks: ['backup/m'], retry: { max_attempts: 2, initial_delay_ms: 0 } } },
  });
});
afterAll(async () => {
  await tg.stop();
  await primary.close();
  await backup.close();
});

async function scrape(headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${tg.url}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The value of one series (exact label set, in any order), or undefined when absent. */
function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) found[pair[1] as string] = pair[2] as string;
    if (Object.keys(found).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

/** Waits until the terminal events of the traffic just sent were counted (they follow the answer by a tick). */
async function scrapeWhen(check: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const { text } = await scrape();
    if (check(text)) return text;
    if (Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('GET /metrics after scripted traffic', () => {
  let text = '';

  beforeAll(async () => {
    const client = tg.client;
    // 1. A plain success.
    await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    // 2. A stream.
    const stream = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hello there' }], stream: true });
    for await (const _ of stream) void _;
    // 3. The primary fails with a 500: the fallback answers.
    primary.enqueue({ kind: 'error', status: 500 });
    await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'again' }] });
    // 4. A 429 from a virtual key's rate limit.
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'one-a-minute', rate_limit: 1 });
    const limited = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0 });
    await limited.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'first' }] });
    await expect(limited.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'second' }] })).rejects.toMatchObject({ status: 429 });
    // 5. An unknown virtual key.
    const stranger = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'tg-unknown', maxRetries: 0 });
    await expect(stranger.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 401 });
    text = await scrapeWhen((t) => value(t, 'tollgate_auth_rejections_total', { reason: 'unknown_key' }) === 1 && (value(t, 'tollgate_inflight_requests') ?? 1) === 0);
  });

  it('is Prometheus text format', async () => {
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text).toContain('# TYPE tollgate_requests_total counter');
    expect(text).toContain('# TYPE tollgate_request_duration_seconds histogram');
  });

  it('counts requests by provider, model and status', () => {
    // Success, stream and the rate-limited key's first request on the primary; the failed-over one on the backup.
    expect(value(text, 'tollgate_requests_total', { provider: 'openai', model: 'm', status: '200' })).toBe(3);
    expect(value(text, 'tollgate_requests_total', { provider: 'backup', model: 'm', status: '200' })).toBe(1);
    // Refusals never reached an upstream: provider "none", the model as requested.
    expect(value(text, 'tollgate_requests_total', { provider: 'none', model: 'chat', status: '429' })).toBe(1);
    expect(value(text, 'tollgate_requests_total', { provider: 'none', model: 'chat', status: '401' })).toBe(1);
    expect(value(text, 'tollgate_inflight_requests')).toBe(0);
  });

  it('records latency, time to first token (streams only) and gateway overhead', () => {
    expect(value(text, 'tollgate_request_duration_seconds_count', { provider: 'openai', model: 'm' })).toBe(3);
    expect(value(text, 'tollgate_time_to_first_token_seconds_count', { provider: 'openai', model: 'm' })).toBe(1);
    expect(value(text, 'tollgate_gateway_overhead_seconds_count', { provider: 'openai', model: 'm' })).toBe(3);
    const total = value(text, 'tollgate_request_duration_seconds_sum', { provider: 'openai', model: 'm' }) as number;
    const overhead = value(text, 'tollgate_gateway_overhead_seconds_sum', { provider: 'openai', model: 'm' }) as number;
    expect(overhead).toBeGreaterThan(0);
    expect(overhead).toBeLessThan(total);
  });

  it('counts upstream attempts, the fallback, tokens and cost', () => {
    expect(value(text, 'tollgate_upstream_attempts_total', { provider: 'openai', model: 'm', outcome: 'error' })).toBe(1);
    expect(value(text, 'tollgate_upstream_attempts_total', { provider: 'openai', model: 'm', outcome: 'success' })).toBe(3);
    expect(value(text, 'tollgate_upstream_attempts_total', { provider: 'backup', model: 'm', outcome: 'success' })).toBe(1);
    expect(value(text, 'tollgate_fallbacks_total')).toBe(1);
    expect(value(text, 'tollgate_retries_total')).toBe(0);
    const input = value(text, 'tollgate_tokens_total', { provider: 'openai', model: 'm', direction: 'input' }) as number;
    const output = value(text, 'tollgate_tokens_total', { provider: 'openai', model: 'm', direction: 'output' }) as number;
    expect(input).toBeGreaterThan(0);
    expect(output).toBeGreaterThan(0);
    expect(value(text, 'tollgate_cost_usd_total', { provider: 'openai', model: 'm' })).toBeCloseTo((input * 1 + output * 2) / 1e6, 12);
  });

  it('counts refusals by kind', () => {
    expect(value(text, 'tollgate_ratelimit_rejections_total', { scope: 'key', unit: 'requests' })).toBe(1);
    expect(value(text, 'tollgate_auth_rejections_total', { reason: 'unknown_key' })).toBe(1);
  });

  it('reads breaker state, provider health, key spend and store size at scrape time', () => {
    expect(value(text, 'tollgate_breaker_state', { provider: 'openai', model: 'm' })).toBe(0);
    expect(value(text, 'tollgate_provider_healthy', { provider: 'openai' })).toBe(1);
    expect(value(text, 'tollgate_provider_healthy', { provider: 'backup' })).toBe(1);
    expect(value(text, 'tollgate_store_bytes')).toBeGreaterThan(0);
    expect(text).toMatch(/^tollgate_key_spend_usd\{key="[^"]+",team="none"\} [0-9.e-]+$/m);
  });

  it("carries prom-client's process metrics", () => {
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    expect(text).toContain('nodejs_gc_duration_seconds');
  });

  it('serves every series the shipped Grafana dashboard queries', () => {
    const dashboard = readFileSync(new URL('../../dashboard/grafana/tollgate.json', import.meta.url), 'utf8');
    const queried = new Set([...dashboard.matchAll(/\b((?:tollgate|process|nodejs)_[a-z0-9_]+)/g)].map((m) => (m[1] as string).replace(/_(bucket|sum|count)$/, '')));
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    expect(queried.size).toBeGreaterThan(15);
    expect([...queried].filter((name) => !served.has(name))).toEqual([]);
  });

  it("names every tollgate series it serves in the README's table, with its type and labels", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const documented = new Map(
      [...readme.matchAll(/^\| `(tollgate_[a-z_]+)` \| (counter|gauge|histogram) \|([a-z_, ]*)\|/gm)].map((m) => [m[1], { type: m[2], labels: (m[3] as string).split(',').map((l) => l.trim()).filter(Boolean).sort() }]),
    );
    const served = [...text.matchAll(/^# TYPE (tollgate_\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string] as const);
    expect(served.length).toBeGreaterThan(15);
    for (const [name, type] of served) {
      expect(documented.get(name)?.type, name).toBe(type);
      // The labels of one of its series (a histogram's bucket lines add `le`), where it has one yet.
      const sample = new RegExp(`^${name}(?:_bucket|_sum|_count)?(?:\\{([^}]*)\\})? `, 'm').exec(text);
      if (!sample) continue;
      const labels = [...(sample[1] ?? '').matchAll(/([a-z_]+)="/g)].map((m) => m[1]).filter((l) => l !== 'le').sort();
      expect(labels, name).toEqual(documented.get(name)?.labels);
    }
  });

  it('folds invented model names into "other" past the cap', async () => {
    // A client may name any model of a configured provider: past 200 distinct names the label reads "other".
    await Promise.all(
      Array.from({ length: 230 }, (_, i) => tg.client.chat.completions.create({ model: `openai/invented-${i}`, messages: [{ role: 'user', content: 'x' }] }).catch(() => null)),
    );
    const after = await scrapeWhen((t) => (value(t, 'tollgate_inflight_requests') ?? 1) === 0 && /model="other"/.test(t));
    const models = new Set([...after.matchAll(/^tollgate_requests_total\{[^}]*model="([^"]*)"/gm)].map((m) => m[1]));
    // The configured model and route keep their labels beside at most 200 invented names.
    expect([...models].filter((model) => model?.startsWith('invented-')).length).toBeLessThanOrEqual(200);
    expect(models.has('other')).toBe(true);
  });
});

describe('/metrics with a bearer token', () => {
  let guarded: RunningGateway;
  beforeAll(async () => {
    guarded = await startGateway({ settings: { metrics: { bearer_token: 'env:METRICS_TOKEN' } } }, { METRICS_TOKEN: 'scrape-secret-1' });
  });
  afterAll(() => guarded.stop());

  it('refuses a scrape without the token and serves one with it', async () => {
    const without = await fetch(`${guarded.url}/metrics`);
    expect(without.status).toBe(401);
    expect(without.headers.get('www-authenticate')).toContain('Bearer');
    expect(((await without.json()) as { error: { code: string } }).error.code).toBe('invalid_metrics_token');
    expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret-1' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('tollgate_inflight_requests');
  });

  it('never shows the token in the settings the API answers', async () => {
    const res = await jsonRequest(guarded.url, 'GET', '/api/config');
    expect(JSON.stringify(res.body)).not.toContain('scrape-secret-1');
  });
});

describe('/metrics turned off', () => {
  it('answers 404', async () => {
    const off = await startGateway({ settings: { metrics: { enabled: false } } });
    try {
      expect((await fetch(`${off.url}/metrics`)).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});

describe('tollgate_fallbacks_total and tollgate_retries_total', () => {
  let a: ScriptedUpstream;
  let b: ScriptedUpstream;
  let gw: RunningGateway;
  const fallbackEvents: Array<[string, string, string]> = [];

  beforeAll(async () => {
    a = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    b = await startOpenAIUpstream({ apiKey: 'sk-b', chunkDelayMs: 0 });
    gw = await startGateway({
      providers: { pa: { type: 'openai', base_url: `${a.url}/v1`, api_key: 'sk-a' }, pb: { type: 'openai', base_url: `${b.url}/v1`, api_key: 'sk-b' } },
      routes: {
        // One group of two targets: moving from one to the other is a retry within the route, not a fallback.
        pair: { targets: [{ model: 'pa/m', weight: 1 }, { model: 'pb/m', weight: 1 }], retry: { max_attempts: 3, initial_delay_ms: 0 } },
        // A route and its fallback: going back to the route's own target on the retry pass is no fallback either.
        chain: { targets: [{ model: 'pa/m' }], fallbacks: ['pb/m'], retry: { max_attempts: 3, initial_delay_ms: 0 } },
        // Two failures open pa's breaker under this route: the next requests go straight to the fallback.
        tripped: { targets: [{ model: 'pa/m' }], fallbacks: ['pb/m'], retry: { max_attempts: 2, initial_delay_ms: 0 }, breaker: { consecutive_failures: 2, cooldown_ms: 60_000 } },
      },
    });
    gw.gateway.bus.on('fallback.used', (event) => fallbackEvents.push([event.from, event.to, event.reason]));
  });
  afterAll(async () => {
    await gw.stop();
    await a.close();
    await b.close();
  });

  async function counters(): Promise<{ fallbacks: number | undefined; retries: number | undefined }> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    return { fallbacks: value(text, 'tollgate_fallbacks_total'), retries: value(text, 'tollgate_retries_total') };
  }

  it('counts a move to the other target of the same group as a retry', async () => {
    // Whichever target is picked first fails, then the other one fails, then the third attempt (a retry pass) answers.
    a.enqueue({ kind: 'error', status: 500 });
    b.enqueue({ kind: 'error', status: 500 });
    const { response } = await gw.client.chat.completions.create({ model: 'pair', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(response.headers.get('x-tollgate-attempts')).toBe('3');
    expect(response.headers.get('x-tollgate-fallback')).toBe('false');
    expect(await counters()).toEqual({ fallbacks: 0, retries: 2 });
    expect(fallbackEvents).toEqual([]);
  });

  it('counts the move to the fallback once, and the way back to the route on the retry pass as a retry', async () => {
    // pa fails, pb (the fallback) fails, pa is retried and answers.
    a.enqueue({ kind: 'error', status: 500 });
    b.enqueue({ kind: 'error', status: 500 });
    const { response } = await gw.client.chat.completions.create({ model: 'chain', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(response.headers.get('x-tollgate-attempts')).toBe('3');
    expect(response.headers.get('x-tollgate-provider')).toBe('pa');
    expect(await counters()).toEqual({ fallbacks: 1, retries: 3 });
    expect(fallbackEvents).toEqual([['pa/m', 'pb/m', '500']]);
  });

  it("counts a request sent straight to the fallback because the route's breaker is open", async () => {
    fallbackEvents.length = 0;
    const before = await counters();
    // pa fails twice, its breaker under this route opens; the fallback answers both requests (two fallbacks).
    for (let i = 0; i < 2; i++) {
      a.enqueue({ kind: 'error', status: 500 });
      const first = await gw.client.chat.completions.create({ model: 'tripped', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      expect(first.response.headers.get('x-tollgate-provider')).toBe('pb');
    }
    // The next request never calls pa: it goes to the fallback at once, says so, and is counted as a fallback.
    const callsToA = a.calls.length;
    const second = await gw.client.chat.completions.create({ model: 'tripped', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(a.calls.length).toBe(callsToA);
    expect(second.response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(second.response.headers.get('x-tollgate-attempts')).toBe('1');
    const after = await counters();
    expect((after.fallbacks ?? 0) - (before.fallbacks ?? 0)).toBe(3);
    expect(fallbackEvents).toEqual([
      ['pa/m', 'pb/m', '500'],
      ['pa/m', 'pb/m', '500'],
      ['tripped', 'pb/m', 'circuit_open'],
    ]);
    // Straight to the fallback, which fails once and answers the second call: one fallback, then one retry.
    b.enqueue({ kind: 'error', status: 500 });
    const third = await gw.client.chat.completions.create({ model: 'tripped', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(third.response.headers.get('x-tollgate-attempts')).toBe('2');
    expect(a.calls.length).toBe(callsToA);
    const last = await counters();
    expect((last.fallbacks ?? 0) - (after.fallbacks ?? 0)).toBe(1);
    expect((last.retries ?? 0) - (after.retries ?? 0)).toBe(1);
  });
});

describe('the model label cap', () => {
  it('keeps the models the config and the catalogue name out of "other", however many names clients invented first', async () => {
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gw = await startGateway({
      providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a', models: ['listed-model'], prices: { 'priced-model': { input_per_mtok: 1, output_per_mtok: 1 } } } },
      routes: { fresh: { targets: [{ model: 'openai/routed-model' }], fallbacks: ['openai/fallback-model'] } },
    });
    try {
      // Clients make up 230 model names of a configured provider: each costs them nothing (the provider answers 404).
      for (let batch = 0; batch < 230; batch += 23) {
        await Promise.all(
          Array.from({ length: 23 }, (_, i) =>
            gw.client.chat.completions.create({ model: `openai/typo-${batch + i}:error-404`, messages: [{ role: 'user', content: 'x' }] }).catch((err: { status?: number }) => err.status),
          ),
        );
      }
      // Then the models the operator routes to, lists, prices, and one the catalogue knows, are used for the first time.
      up.enqueue({ kind: 'error', status: 500 });
      await gw.client.chat.completions.create({ model: 'fresh', messages: [{ role: 'user', content: 'x' }] });
      for (const model of ['openai/listed-model', 'openai/priced-model', 'openai/gpt-4o-mini']) await gw.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] });
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const typos = new Set([...text.matchAll(/^tollgate_requests_total\{[^}]*model="(typo-[^"]*)"/gm)].map((m) => m[1]));
      expect(typos.size).toBeLessThanOrEqual(200);
      expect(value(text, 'tollgate_requests_total', { provider: 'openai', model: 'other', status: '404' })).toBeGreaterThan(0);
      expect(value(text, 'tollgate_requests_total', { provider: 'openai', model: 'fallback-model', status: '200' })).toBe(1);
      expect(value(text, 'tollgate_upstream_attempts_total', { provider: 'openai', model: 'routed-model', outcome: 'error' })).toBe(1);
      expect(value(text, 'tollgate_breaker_state', { provider: 'openai', model: 'routed-model' })).toBe(0);
      for (const model of ['listed-model', 'priced-model', 'gpt-4o-mini']) {
        expect(value(text, 'tollgate_requests_total', { provider: 'openai', model, status: '200' })).toBe(1);
        expect(value(text, 'tollgate_tokens_total', { provider: 'openai', model, direction: 'input' })).toBeGreaterThan(0);
      }
    } finally {
      await gw.stop();
      await up.close();
    }
  });
});

describe('tollgate_upstream_attempts_total', () => {
  it('counts an attempt its client left as cancelled, not as an upstream error', async () => {
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gw = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } });
    try {
      // A user stops a streamed answer midway, another gives up waiting for a whole one.
      up.enqueue({ kind: 'stall-after', chunks: 2 });
      const stopped = new AbortController();
      const stream = await gw.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }], stream: true }, { signal: stopped.signal });
      for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) break;
      stopped.abort();
      up.enqueue({ kind: 'slow-headers', delayMs: 2_000 });
      await expect(gw.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] }, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
      // And one attempt really fails.
      up.enqueue({ kind: 'error', status: 400 });
      await expect(gw.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 400 });
      const deadline = Date.now() + 5_000;
      let text = '';
      do text = await (await fetch(`${gw.url}/metrics`)).text();
      while (value(text, 'tollgate_requests_total', { provider: 'openai', model: 'm', status: '499' }) !== 2 && Date.now() < deadline);
      expect(value(text, 'tollgate_upstream_attempts_total', { provider: 'openai', model: 'm', outcome: 'cancelled' })).toBe(2);
      expect(value(text, 'tollgate_upstream_attempts_total', { provider: 'openai', model: 'm', outcome: 'error' })).toBe(1);
    } finally {
      await gw.stop();
      await up.close();
    }
  });
});

describe("the Grafana dashboard's error ratio", () => {
  /** The series of `text` a PromQL selector's label matchers pick (dashboard variables read as "All"). */
  function selected(text: string, selector: string): number {
    const [, name, body] = /^([a-z_]+)\{(.*)\}$/.exec(selector) as RegExpExecArray;
    const matchers = [...(body as string).matchAll(/([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map(([, label, op, raw]) => ({
      label: label as string,
      op: op as string,
      pattern: new RegExp(`^(?:${(raw as string).replace(/\$[a-z_]+/g, '.*')})$`),
    }));
    let sum = 0;
    for (const line of text.split('\n')) {
      const m = new RegExp(`^${name}\\{(.*)\\} (\\S+)$`).exec(line);
      if (!m) continue;
      const labels = Object.fromEntries([...(m[1] as string).matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1], pair[2]]));
      const picked = matchers.every(({ label, op, pattern }) => {
        const value = (labels[label] as string | undefined) ?? '';
        const matches = pattern.test(value);
        return op === '=' || op === '=~' ? matches : !matches;
      });
      if (picked) sum += Number(m[2]);
    }
    return sum;
  }

  it('counts a stream its client left (499) as no error, and a failed answer as one', async () => {
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gw = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } });
    try {
      await gw.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      up.enqueue({ kind: 'stall-after', chunks: 2 });
      const stopped = new AbortController();
      const stream = await gw.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }], stream: true }, { signal: stopped.signal });
      for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) break;
      stopped.abort();
      up.enqueue({ kind: 'error', status: 500 }, { kind: 'error', status: 500 }, { kind: 'error', status: 500 });
      await expect(gw.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 500 });
      const deadline = Date.now() + 5_000;
      let text = '';
      do text = await (await fetch(`${gw.url}/metrics`)).text();
      while (value(text, 'tollgate_requests_total', { provider: 'openai', model: 'm', status: '499' }) !== 1 && Date.now() < deadline);
      const dashboard = JSON.parse(readFileSync(new URL('../../dashboard/grafana/tollgate.json', import.meta.url), 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
      const expr = dashboard.panels.find((panel) => panel.title === 'Error ratio')?.targets?.[0]?.expr as string;
      const [errors, all] = [...expr.matchAll(/rate\((tollgate_requests_total\{[^}]*\})\[5m\]\)/g)].map((m) => selected(text, m[1] as string));
      // Three requests: one answered, one its client left, one failed.
      expect(all).toBe(3);
      expect(errors).toBe(1);
    } finally {
      await gw.stop();
      await up.close();
    }
  });
});
