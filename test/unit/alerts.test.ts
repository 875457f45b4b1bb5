import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { describe, expect, it } from 'vitest';
import { maskDocument } from '../../src/config/present.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema, type ConfigInput } from '../../src/config/schema.js';
import type { AlertChannelRuntime, AlertRuleRuntime, WebhookChannelRuntime } from '../../src/core/config.js';
import type { GatewayEvents, RequestSummary } from '../../src/core/events.js';
import { createLog } from '../../src/log.js';
import { backoff, DeliveryQueue, signature } from '../../src/telemetry/alerts/delivery.js';
import { AlertEngine, p95, type AlertNotification } from '../../src/telemetry/alerts/rules.js';
import { OutboundNetwork } from '../../src/network/outbound-network.js';

function runtime(document: ConfigInput, env: Record<string, string> = {}) {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(document) }, env, 1);
}

const HOOK = { type: 'webhook' as const, url: 'https://hooks.example.com/t', secret: 'env:HOOK_SECRET' };

describe('alerts config', () => {
  it('resolves channels (secret references, retry defaults) and rules (severity, cooldown, every channel by default)', () => {
    const { alerts } = runtime({ alerts: { channels: { ops: HOOK }, rules: [{ name: 'b', kind: 'budget' }] } }, { HOOK_SECRET: 's3cret' });
    expect(alerts.channels.get('ops')).toMatchObject({ url: HOOK.url, secret: 's3cret', maxAttempts: 8, initialDelayMs: 1000, maxDelayMs: 300_000, timeoutMs: 10_000 });
    expect(alerts.rules).toEqual([{ name: 'b', kind: 'budget', severity: 'warning', cooldownMs: 600_000, channels: ['ops'] }]);
    expect(alerts.maxQueue).toBe(10_000);
    expect(runtime({}).alerts).toEqual({ channels: new Map(), rules: [], maxQueue: 10_000 });
  });

  it('refuses a rule naming an unknown channel or provider, a rule with no channel, duplicate names, and a bad kind', () => {
    const env = { HOOK_SECRET: 'x' };
    expect(() => runtime({ alerts: { channels: { ops: HOOK }, rules: [{ name: 'b', kind: 'budget', channels: ['pager'] }] } }, env)).toThrow(/alerts\.rules\.0\.channels\.0: "pager" is not a channel/);
    expect(() => runtime({ alerts: { channels: { ops: HOOK }, rules: [{ name: 'e', kind: 'error_rate', threshold_pct: 5, providers: ['nope'] }] } }, env)).toThrow(/alerts\.rules\.0\.providers\.0/);
    expect(() => runtime({ alerts: { rules: [{ name: 'b', kind: 'budget' }] } })).toThrow(/no channel to deliver to/);
    expect(() => runtime({ alerts: { channels: { ops: HOOK } } })).toThrow(/HOOK_SECRET is not set/);
    expect(configFileSchema.safeParse({ alerts: { rules: [{ name: 'a', kind: 'budget' }, { name: 'a', kind: 'breaker_opened' }] } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { rules: [{ name: 'a', kind: 'cpu' }] } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { rules: [{ name: 'a', kind: 'budget', thresholds: [70] }] } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { channels: { ops: { ...HOOK, url: 'ftp://x' } } } }).success).toBe(false);
  });

  it('masks channel secrets and header values in a document shown by the API', () => {
    const masked = maskDocument({ alerts: { channels: { ops: { ...HOOK, secret: 'whsec-very-long-secret-value', headers: { authorization: 'Bearer abcdefghijklmnop' } } } } });
    const text = JSON.stringify(masked);
    expect(text).not.toContain('whsec-very-long-secret-value');
    expect(text).not.toContain('abcdefghijklmnop');
  });
});

describe('delivery helpers', () => {
  it('signs timestamp + "." + body with HMAC-SHA256', () => {
    // echo -n '1700000000.{}' | openssl dgst -sha256 -hmac k
    expect(signature('k', '1700000000', '{}')).toBe('c6ef4734033cee2367414a0939385eca0397754aa7a59716da7463a9298b5146');
    expect(signature('k', '1700000000', '{}')).not.toBe(signature('k', '1700000001', '{}'));
  });

  it('backs off exponentially up to the cap', () => {
    const channel = { initialDelayMs: 100, maxDelayMs: 1_000 };
    for (const [attempt, base] of [[1, 100], [2, 200], [3, 400], [4, 800], [5, 1_000], [40, 1_000]] as const) {
      const delay = backoff(channel, attempt);
      expect(delay).toBeGreaterThanOrEqual(base * 0.8);
      expect(delay).toBeLessThanOrEqual(base);
    }
  });
});

/** An engine on a hand-moved clock, with every notification collected. */
function engine(rules: AlertRuleRuntime[], budget: { spend: number; budget: number } | null = null) {
  let now = 1_700_000_000_000;
  const sent: AlertNotification[] = [];
  const fired: Array<{ rule: string; status: string; notified: boolean }> = [];
  const usage = { current: budget };
  const e = new AlertEngine({
    rules: () => rules,
    budgetUsage: () => usage.current,
    now: () => now,
    windowNow: () => now,
    publish: ({ alert, status, notification }) => {
      fired.push({ rule: alert.rule, status, notified: notification !== null });
      if (notification) sent.push(notification);
    },
  });
  return { e, sent, fired, usage, advance: (ms: number) => (now += ms) };
}

const base = { severity: 'warning' as const, channels: ['ops'] };
const attempt = (provider: string, ok: boolean): GatewayEvents['provider.attempted'] => ({ requestId: 'r', provider, model: 'm', attempt: 1, ok, status: ok ? 200 : 500, durationMs: 5 });
const completed = (provider: string, durationMs: number): GatewayEvents['request.completed'] =>
  ({ provider, durationMs, status: 200, cancelled: false, attempts: 1 }) as RequestSummary & { cancelled: boolean };

describe('the rule engine', () => {
  it("a request cut by the gateway's own shutdown is no route failure (no 5xx, no exhausted plan)", () => {
    const rules: AlertRuleRuntime[] = [
      { ...base, name: 'five', kind: 'server_errors', threshold_pct: 10, min_requests: 1, cooldownMs: 0 },
      { ...base, name: 'down', kind: 'fallbacks_exhausted', min_count: 1, cooldownMs: 0 },
    ];
    const { e, sent } = engine(rules);
    const cut = { requestId: 'r', route: 'chat', model: 'chat', provider: 'openai', status: 503, attempts: 1, firstTokenMs: null, type: 'unavailable', code: 'shutting_down', message: 'cut' };
    e.requestFailed(cut as unknown as GatewayEvents['request.failed']);
    e.tick();
    expect(sent).toEqual([]);
    // The same failure from the upstream pages both.
    e.requestFailed({ ...cut, code: 'upstream_error' } as unknown as GatewayEvents['request.failed']);
    e.tick();
    expect(sent.map((n) => n.rule).sort()).toEqual(['down', 'five']);
  });

  it('budget: one open alert per subject and threshold, cooldown after a resolve, resolved when spend is under the line', () => {
    const { e, sent, fired, usage, advance } = engine([{ ...base, name: 'b', kind: 'budget', cooldownMs: 60_000 }], { spend: 5, budget: 10 });
    const crossing = { account: 'key' as const, id: 'k1', threshold: 50 as const, budget: 10, spend: 5 };
    e.budgetThreshold(crossing);
    e.budgetThreshold(crossing);
    e.budgetThreshold({ ...crossing, threshold: 80, spend: 8 });
    expect(sent.map((n) => [n.status, n.details.threshold])).toEqual([['firing', 50], ['firing', 80]]);
    // 50% still holds, 80% no longer does.
    e.tick();
    expect(sent.map((n) => [n.status, n.details.threshold])).toEqual([['firing', 50], ['firing', 80], ['resolved', 80]]);
    usage.current = { spend: 0, budget: 10 };
    e.tick();
    expect(sent.at(-1)).toMatchObject({ status: 'resolved', details: { threshold: 50 } });
    expect(sent.at(-1)?.id).toBe(sent[0]?.id);
    // Inside the cooldown: opened, not sent; its resolution is not sent either. After it: sent again.
    e.budgetThreshold(crossing);
    usage.current = { spend: 0, budget: 10 };
    e.tick();
    expect(fired.slice(-2)).toEqual([{ rule: 'b', status: 'firing', notified: false }, { rule: 'b', status: 'resolved', notified: false }]);
    advance(60_000);
    e.budgetThreshold(crossing);
    expect(sent.at(-1)).toMatchObject({ status: 'firing', details: { threshold: 50 } });
    expect(sent).toHaveLength(5);
  });

  it('budget: filters by account and threshold', () => {
    const { e, sent } = engine([{ ...base, name: 'teams', kind: 'budget', account: 'team', thresholds: [100], cooldownMs: 0 }], { spend: 10, budget: 10 });
    e.budgetThreshold({ account: 'key', id: 'k', threshold: 100, budget: 1, spend: 1 });
    e.budgetThreshold({ account: 'team', id: 't', threshold: 80, budget: 1, spend: 0.8 });
    e.budgetThreshold({ account: 'team', id: 't', threshold: 100, budget: 1, spend: 1 });
    expect(sent.map((n) => n.subject)).toEqual([{ team: 't' }]);
  });

  it('error_rate: fires over the threshold with enough attempts, resolves when failures age out of the window', () => {
    const { e, sent, advance } = engine([{ ...base, name: 'err', kind: 'error_rate', threshold_pct: 50, window_ms: 10_000, min_requests: 4, cooldownMs: 0 }]);
    e.providerAttempted(attempt('openai', false));
    e.providerAttempted(attempt('openai', false));
    e.providerAttempted(attempt('openai', false));
    e.tick();
    expect(sent).toEqual([]); // 3 attempts: too few to count
    e.providerAttempted(attempt('openai', true));
    e.providerAttempted(attempt('anthropic', true));
    e.tick();
    expect(sent).toEqual([expect.objectContaining({ status: 'firing', subject: { provider: 'openai' }, details: expect.objectContaining({ attempts: 4, failed: 3, errorRatePct: 75 }) })]);
    e.tick();
    expect(sent).toHaveLength(1);
    advance(11_000);
    e.tick();
    expect(sent.at(-1)).toMatchObject({ status: 'resolved', id: sent[0]?.id, summary: 'openai: no upstream attempt left in the last 10 s to judge the error rate by' });
  });

  it('latency_p95: fires only after the p95 stayed over the threshold for for_ms, resolves when it drops', () => {
    const { e, sent, advance } = engine([{ ...base, name: 'slow', kind: 'latency_p95', threshold_ms: 1_000, window_ms: 60_000, for_ms: 5_000, min_requests: 5, cooldownMs: 0 }]);
    for (let i = 0; i < 10; i++) e.requestCompleted(completed('openai', 2_000));
    e.requestCompleted({ ...completed('openai', 9_000), cancelled: true });
    e.tick();
    advance(3_000);
    e.tick();
    expect(sent).toEqual([]);
    advance(2_000);
    e.tick();
    expect(sent).toEqual([expect.objectContaining({ status: 'firing', event: 'request.completed', details: expect.objectContaining({ p95Ms: 2_000, requests: 10 }) })]);
    advance(61_000);
    for (let i = 0; i < 10; i++) e.requestCompleted(completed('openai', 100));
    e.tick();
    expect(sent.at(-1)).toMatchObject({ status: 'resolved', details: { p95Ms: 100 } });
  });

  it('latency_p95: an open alert is judged on fewer answers than min_requests, and one with none left resolves saying so', () => {
    const { e, sent, advance } = engine([{ ...base, name: 'slow', kind: 'latency_p95', threshold_ms: 1_000, window_ms: 60_000, for_ms: 0, min_requests: 5, cooldownMs: 0 }]);
    // Two slow answers alone page nobody.
    for (let i = 0; i < 2; i++) e.requestCompleted(completed('openai', 2_000));
    e.tick();
    expect(sent).toEqual([]);
    for (let i = 0; i < 3; i++) e.requestCompleted(completed('openai', 2_000));
    e.tick();
    expect(sent).toEqual([expect.objectContaining({ status: 'firing' })]);
    // The window then holds two answers, both slow: still firing, not "back under".
    advance(61_000);
    for (let i = 0; i < 2; i++) e.requestCompleted(completed('openai', 3_000));
    e.tick();
    expect(sent).toHaveLength(1);
    // None left: resolved, saying there is nothing to measure (p95 null), not that it is fast.
    advance(61_000);
    e.tick();
    expect(sent.at(-1)).toMatchObject({ status: 'resolved', summary: 'openai: no answered request left in the last 60 s to measure the p95 latency by', details: { p95Ms: null, requests: 0 } });
  });

  it('latency_p95: a rule removed mid-breach and put back waits its for_ms again', () => {
    const slow: AlertRuleRuntime = { ...base, name: 'slow', kind: 'latency_p95', threshold_ms: 1_000, window_ms: 600_000, for_ms: 60_000, min_requests: 5, cooldownMs: 0 };
    const rules: AlertRuleRuntime[] = [slow];
    const { e, sent, advance } = engine(rules);
    for (let i = 0; i < 10; i++) e.requestCompleted(completed('openai', 2_000));
    e.tick(); // the breach starts
    rules.length = 0;
    e.tick(); // the rule is taken out
    advance(120_000);
    rules.push(slow);
    e.tick(); // back: its window starts empty
    for (let i = 0; i < 10; i++) e.requestCompleted(completed('openai', 2_000));
    e.tick(); // back and breached again: timed from now, not from before the rule was removed
    expect(sent).toEqual([]);
    advance(60_000);
    e.tick();
    expect(sent).toEqual([expect.objectContaining({ status: 'firing' })]);
  });

  it('breaker_opened: deduplicates a breaker that re-opens, resolves on close, filters providers', () => {
    const { e, sent } = engine([{ ...base, name: 'br', kind: 'breaker_opened', providers: ['openai'], cooldownMs: 0 }]);
    const opened = { target: 'openai/gpt-4o#k1', label: 'openai/gpt-4o', reason: 'failures', cooldownMs: 30_000 };
    e.breakerOpened(opened);
    e.breakerOpened(opened);
    e.breakerOpened({ ...opened, target: 'groq/llama#k', label: 'groq/llama' });
    e.breakerClosed({ target: opened.target, label: opened.label });
    e.breakerClosed({ target: opened.target, label: opened.label });
    expect(sent.map((n) => [n.status, n.event, n.subject])).toEqual([
      ['firing', 'breaker.opened', { provider: 'openai', model: 'gpt-4o', target: 'openai/gpt-4o#k1' }],
      ['resolved', 'breaker.closed', { provider: 'openai', model: 'gpt-4o', target: 'openai/gpt-4o#k1' }],
    ]);
  });

  it('keeps recording at a steady cost however many requests a busy provider sends (events come on the request path)', () => {
    const { e, sent, advance } = engine([{ ...base, name: 'err', kind: 'error_rate', threshold_pct: 50, window_ms: 300_000, min_requests: 10, cooldownMs: 0 }]);
    // Raw samples filled 20,000 a subject within a 5-minute window at a few hundred requests a second; each event
    // after that dropped the oldest by moving the whole list (some 20 µs per list, per event).
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) {
      e.providerAttempted(attempt('openai', i < 50_000));
      if (i % 1_000 === 0) advance(1);
    }
    const elapsedMs = performance.now() - started;
    expect(elapsedMs).toBeLessThan(1_000);
    // Every attempt of the window counts (the newest 20,000 alone were all failures): 50%, not over it.
    e.tick();
    expect(sent).toEqual([]);
    e.providerAttempted(attempt('openai', false));
    e.tick();
    expect(sent).toEqual([expect.objectContaining({ status: 'firing', details: expect.objectContaining({ attempts: 100_001, failed: 50_001 }) })]);
  });

  it('p95 is the nearest-rank 95th percentile', () => {
    expect(p95([5])).toBe(5);
    expect(p95(Array.from({ length: 100 }, (_, i) => i + 1))).toBe(95);
    expect(p95(Array.from({ length: 20 }, (_, i) => 20 - i))).toBe(19);
  });
});

describe('the delivery queue', () => {
  const channel = (url: string, extra: Partial<WebhookChannelRuntime> = {}): AlertChannelRuntime => ({
    name: 'ops', type: 'webhook', url, secret: null, headers: {}, timeoutMs: 2_000, maxAttempts: 3, initialDelayMs: 30, maxDelayMs: 60, ...extra,
  });
  const note = (id: string): AlertNotification => ({ id, rule: 'r', event: 'breaker.opened', severity: 'critical', status: 'firing', summary: 's', subject: { provider: 'p' }, details: {}, at: new Date().toISOString() });

  async function withQueue(
    answer: (n: number) => number,
    options: { maxQueue?: number; channel?: Partial<WebhookChannelRuntime> },
    body: (q: DeliveryQueue, hits: () => number, received: Array<{ status: number; notification: AlertNotification }>) => Promise<void>,
  ): Promise<void> {
    let hits = 0;
    const received: Array<{ status: number; notification: AlertNotification }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const status = answer(++hits);
        received.push({ status, notification: JSON.parse(Buffer.concat(chunks).toString('utf8')) as AlertNotification });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-alert-queue-'));
    const root = open({ path: join(dir, 'db'), maxDbs: 4 });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const q = new DeliveryQueue({ root, log: createLog('silent'), channel: () => channel(url, options.channel), maxQueue: () => options.maxQueue ?? 100, userAgent: 't', outbound: new OutboundNetwork() });
    try {
      await body(q, () => hits, received);
    } finally {
      await q.close();
      await root.close();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('gives up on a 4xx at once, and after max_attempts on 5xx, each attempt in the log', async () => {
    await withQueue((n) => (n === 1 ? 400 : 503), {}, async (q, hits) => {
      q.enqueue('ops', note('a'));
      await until(() => q.log().length === 1);
      expect(q.log()[0]).toMatchObject({ alertId: 'a', attempt: 1, outcome: 'failed', httpStatus: 400 });
      q.enqueue('ops', note('b'));
      await until(() => q.log().length === 4);
      expect(q.log().slice(0, 3).map((line) => [line.alertId, line.attempt, line.outcome, line.httpStatus])).toEqual([
        ['b', 3, 'failed', 503],
        ['b', 2, 'retrying', 503],
        ['b', 1, 'retrying', 503],
      ]);
      expect(hits()).toBe(4);
      expect(q.size()).toBe(0);
    });
  });

  it("sends an alert's resolved notification only after its firing one left the queue, as PagerDuty needs", async () => {
    // PagerDuty drops a resolve whose dedup_key has no open incident, and a trigger after it opens one that nothing
    // resolves: the firing notification, still being retried, must reach a channel before its resolution does.
    await withQueue((n) => (n === 1 ? 503 : 202), { channel: { maxAttempts: 3, initialDelayMs: 400, maxDelayMs: 400 } }, async (q, _hits, received) => {
      q.enqueue('ops', note('a'));
      await until(() => q.log().some((line) => line.outcome === 'retrying'));
      q.enqueue('ops', { ...note('a'), status: 'resolved', event: 'breaker.closed' });
      await until(() => q.size() === 0 && received.length >= 3);
      expect(received.map((hit) => [hit.notification.status, hit.status])).toEqual([
        ['firing', 503],
        ['firing', 202],
        ['resolved', 202],
      ]);
    });
  });

  it('records a notification past max_queue as failed (queue_full) without sending it', async () => {
    await withQueue(() => 503, { maxQueue: 1, channel: { maxAttempts: 50, initialDelayMs: 60_000, maxDelayMs: 60_000 } }, async (q) => {
      q.enqueue('ops', note('kept'));
      q.enqueue('ops', note('dropped'));
      await until(() => q.log().length === 2);
      expect(q.log().map((line) => [line.alertId, line.outcome, line.error])).toEqual(expect.arrayContaining([
        ['dropped', 'failed', 'queue_full'],
        ['kept', 'retrying', 'HTTP 503'],
      ]));
      expect(q.size()).toBe(1);
    });
  });
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((done) => setTimeout(done, 10));
  }
}
