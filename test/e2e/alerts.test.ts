import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { documentedVerify, startReceiver, until, type Behaviour, type Receiver, type Verify } from '../helpers/alert-receiver.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Alerts end to end: real requests through a gateway make the events, the rules turn them into notifications,
// and a webhook receiver started here gets them, signed, over HTTP.

const SECRET = 'whsec-alerts-test';
/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };
const hi = [{ role: 'user' as const, content: 'hi' }];

function config(upstream: ScriptedUpstream, receiverUrl: string, alerts: Partial<NonNullable<ConfigInput['alerts']>> & { retry?: Record<string, number> } = {}): ConfigInput {
  const { retry, ...rest } = alerts;
  return {
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
    alerts: {
      channels: { ops: { type: 'webhook', url: receiverUrl, secret: SECRET, retry: { initial_delay_ms: 50, max_delay_ms: 200, ...retry } } },
      rules: [{ name: 'budget-half', kind: 'budget', thresholds: [50], severity: 'warning', cooldown_ms: 600_000 }],
      ...rest,
    },
  };
}

let upstream: ScriptedUpstream;
let verify: Verify;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  verify = await documentedVerify();
});
afterAll(async () => {
  await upstream?.close();
});

describe('budget alerts to a signed webhook', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  const { api, createKey, clientFor } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway(config(upstream, receiver.url));
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('delivers a crossing once, signed by the documented check; "resolved" when the budget is raised; silent inside the cooldown', async () => {
    const { id, key } = await createKey({ name: 'alerted', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const firing = await until('the firing notification', () => receiver.deliveries[0]);
    expect(firing.json).toEqual({
      id: expect.any(String),
      rule: 'budget-half',
      event: 'budget.threshold',
      severity: 'warning',
      status: 'firing',
      summary: expect.stringContaining('50%'),
      subject: { key: id },
      details: { account: 'key', id, threshold: 50, budget: 4, spend: 2 },
      at: expect.any(String),
    });
    expect(new Date(firing.json.at).toISOString()).toBe(firing.json.at);
    expect(firing.headers['content-type']).toBe('application/json');
    expect(firing.headers['x-tollgate-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(Number(firing.headers['x-tollgate-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
    // The documented check accepts the delivery as sent, and refuses it with the body, the time or the secret changed.
    expect(verify(SECRET, firing.headers, firing.body)).toBe(true);
    expect(verify(SECRET, firing.headers, firing.body.replace('"spend":2', '"spend":0'))).toBe(false);
    expect(verify(SECRET, { ...firing.headers, 'x-tollgate-timestamp': String(Number(firing.headers['x-tollgate-timestamp']) - 1) }, firing.body)).toBe(false);
    expect(verify('another-secret', firing.headers, firing.body)).toBe(false);
    expect(tg.gateway.alerts.open()).toEqual([expect.objectContaining({ id: firing.json.id, rule: 'budget-half', notified: true })]);

    // The condition clears (a larger budget): one "resolved" notification with the same alert id.
    expect((await api('PATCH', `/api/keys/${id}`, { budget: 100 })).status).toBe(200);
    const resolved = await until('the resolved notification', () => receiver.deliveries[1]);
    expect(resolved.json).toMatchObject({ id: firing.json.id, rule: 'budget-half', status: 'resolved', subject: { key: id }, details: { threshold: 50, budget: 100, spend: 2 } });
    expect(verify(SECRET, resolved.headers, resolved.body)).toBe(true);
    expect(tg.gateway.alerts.open()).toEqual([]);

    // Crossing again within the cooldown opens the alert again but notifies nobody (nor does its resolution).
    expect((await api('PATCH', `/api/keys/${id}`, { budget: 5 })).status).toBe(200);
    const fired: unknown[] = [];
    const stop = tg.gateway.bus.on('alert.fired', (event) => fired.push(event));
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    stop();
    expect(fired).toEqual([expect.objectContaining({ rule: 'budget-half', notified: false, subject: { key: id } })]);
    expect(tg.gateway.alerts.open()).toEqual([expect.objectContaining({ rule: 'budget-half', notified: false })]);
    await new Promise((done) => setTimeout(done, 1_300));
    expect(receiver.deliveries).toHaveLength(2);
    expect(tg.gateway.alerts.deliveries().map((line) => [line.status, line.outcome, line.attempt])).toEqual([
      ['resolved', 'delivered', 1],
      ['firing', 'delivered', 1],
    ]);
  });

  it('fires when an operator lowers a budget below what was spent, as a charge crossing the line would', async () => {
    const { id, key } = await createKey({ name: 'lowered', budget: 10, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const before = receiver.deliveries.length;
    // 2 spent of 10 is under half; of 3, over it.
    expect((await api('PATCH', `/api/keys/${id}`, { budget: 3 })).status).toBe(200);
    const firing = await until('the firing notification', () => receiver.deliveries.slice(before).find((d) => d.json.subject?.key === id));
    expect(firing.json).toMatchObject({ rule: 'budget-half', status: 'firing', details: { account: 'key', id, threshold: 50, budget: 3, spend: 2 } });
    // Raising it again past the spend resolves it.
    expect((await api('PATCH', `/api/keys/${id}`, { budget: 50 })).status).toBe(200);
    const resolved = await until('the resolved notification', () => receiver.deliveries.find((d) => d.json.id === firing.json.id && d.json.status === 'resolved'));
    expect(resolved.json.details).toMatchObject({ budget: 50, spend: 2 });
  });
});

describe('delivery retries', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  const { createKey, clientFor } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    receiver = await startReceiver(['500', 'reset']);
    tg = await startGateway(config(upstream, receiver.url));
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('delivers after a 500 and a connection reset, the same signed body each time, every attempt in the delivery log', async () => {
    const { key } = await createKey({ name: 'retried', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    await until('three attempts', () => receiver.deliveries.length >= 3);
    await until('the delivery log', () => tg.gateway.alerts.deliveries().some((line) => line.outcome === 'delivered'));
    expect(receiver.deliveries.map((d) => d.answered)).toEqual(['500', 'reset', 'ok']);
    expect(receiver.deliveries.map((d) => d.headers['x-tollgate-attempt'])).toEqual(['1', '2', '3']);
    expect(new Set(receiver.deliveries.map((d) => d.body)).size).toBe(1);
    for (const delivery of receiver.deliveries) expect(verify(SECRET, delivery.headers, delivery.body)).toBe(true);
    const log = tg.gateway.alerts.deliveries().reverse();
    expect(log.map((line) => [line.attempt, line.outcome, line.httpStatus])).toEqual([
      [1, 'retrying', 500],
      [2, 'retrying', null],
      [3, 'delivered', 200],
    ]);
    expect(log[0]?.error).toBe('receiver broke');
    expect(log[1]?.error).toMatch(/ECONNRESET|socket|closed/i);
    expect(tg.gateway.alerts.queued()).toBe(0);
    await new Promise((done) => setTimeout(done, 300));
    expect(receiver.deliveries).toHaveLength(3);
  });
});

describe("a webhook channel's own headers", () => {
  let receiver: Receiver;
  let tg: RunningGateway;

  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      alerts: {
        channels: {
          ops: {
            type: 'webhook',
            url: receiver.url,
            secret: SECRET,
            // Spelled as people write them: the ones tollgate sets itself differ from its own only by case.
            headers: { Authorization: 'Bearer receiver-token', 'Content-Type': 'application/json; charset=utf-8', 'X-Tollgate-Timestamp': '0' },
          },
        },
        rules: [],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it("are sent, but never beside tollgate's own: one content type, one timestamp, and the signature verifies", async () => {
    expect((await tg.gateway.alerts.testChannel('ops')).outcome).toBe('delivered');
    const [delivery] = receiver.deliveries;
    expect(delivery?.headers.authorization).toBe('Bearer receiver-token');
    // Both spellings went out and the receiver joined them: 'application/json; charset=utf-8, application/json'.
    expect(delivery?.headers['content-type']).toBe('application/json');
    expect(delivery?.headers['x-tollgate-timestamp']).toMatch(/^\d+$/);
    expect(verify(SECRET, delivery!.headers, delivery!.body)).toBe(true);
  });
});

describe('delivery to a receiver that hangs or redirects', () => {
  let hanging: Receiver;
  let redirecting: Receiver;
  let fast: Receiver;
  let tg: RunningGateway;

  beforeAll(async () => {
    hanging = await startReceiver(Array<Behaviour>(20).fill('hang'));
    redirecting = await startReceiver(Array<Behaviour>(20).fill('307'));
    fast = await startReceiver();
    const retry = { max_attempts: 3, initial_delay_ms: 50, max_delay_ms: 100 };
    tg = await startGateway({
      alerts: {
        channels: {
          hanging: { type: 'webhook', url: hanging.url, timeout_ms: 2_000, retry },
          redirecting: { type: 'webhook', url: redirecting.url, retry },
          fast: { type: 'webhook', url: fast.url },
        },
        rules: [{ name: 'breakers', kind: 'breaker_opened', channels: ['hanging', 'redirecting', 'fast'], cooldown_ms: 0 }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    for (const receiver of [hanging, redirecting, fast]) await receiver?.close();
  });

  it("does not let a hanging channel hold the others' notifications, and gives up on a redirect at once", async () => {
    for (let i = 0; i < 8; i++) tg.gateway.bus.emit('breaker.opened', { target: `openai/m${i}#0`, label: `openai/m${i}`, reason: 'test', cooldownMs: 60_000 } as never);
    await until('eight deliveries to the fast channel', () => fast.deliveries.length >= 8, 5_000);
    // All of them before the hanging channel's first attempt gave up (its 2 s timeout): none waited for a slot it held.
    expect(tg.gateway.alerts.deliveries(500).filter((line) => line.channel === 'hanging')).toEqual([]);
    await until('the redirects in the delivery log', () => tg.gateway.alerts.deliveries(500).filter((line) => line.channel === 'redirecting').length >= 8, 5_000);
    const redirects = tg.gateway.alerts.deliveries(500).filter((line) => line.channel === 'redirecting');
    // One attempt each, failed: a redirect is not followed and not retried.
    expect(redirects.every((line) => line.outcome === 'failed' && line.attempt === 1 && line.httpStatus === 307)).toBe(true);
    expect(redirects[0]?.error).toContain('redirects are not followed');
    expect(redirecting.deliveries).toHaveLength(8);
  });
});

describe('an alert whose rule is removed', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({ alerts: { channels: { ops: { type: 'webhook', url: receiver.url } }, rules: [] } });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('is resolved through the channels it fired on, so an incident it opened is closed', async () => {
    const put = await fetch(`${tg.url}/api/alerts/rules/breakers`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'breaker_opened', severity: 'critical' }) });
    expect(put.status).toBeLessThan(300);
    // The engine sees the rule on its next evaluation; then a breaker opens.
    await new Promise((done) => setTimeout(done, 1_200));
    tg.gateway.bus.emit('breaker.opened', { target: 'openai/gone#0', label: 'openai/gone', reason: 'test', cooldownMs: 60_000 } as never);
    const firing = await until('the firing notification', () => receiver.deliveries.find((d) => d.json.status === 'firing'), 4_000);
    expect((await fetch(`${tg.url}/api/alerts/rules/breakers`, { method: 'DELETE' })).status).toBe(204);
    const resolved = await until('the resolved notification', () => receiver.deliveries.find((d) => d.json.status === 'resolved'), 4_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, rule: 'breakers', severity: 'critical', subject: firing.json.subject });
    expect(resolved.json.summary).toContain('was removed');
    expect(tg.gateway.alerts.open()).toEqual([]);
  });
});

describe('an alert whose rule moves to another channel', () => {
  let pager: Receiver;
  let chat: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    pager = await startReceiver();
    chat = await startReceiver();
    tg = await startGateway({
      alerts: {
        channels: { pager: { type: 'webhook', url: pager.url }, chat: { type: 'webhook', url: chat.url } },
        rules: [{ name: 'breakers', kind: 'breaker_opened', channels: ['pager'] }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await pager?.close();
    await chat?.close();
  });

  it('is resolved through the channel it fired on, not the one the rule names now', async () => {
    const target = { target: 'openai/moved#0', label: 'openai/moved' };
    tg.gateway.bus.emit('breaker.opened', { ...target, reason: 'test', cooldownMs: 60_000 } as never);
    const firing = await until('the firing notification', () => pager.deliveries.find((d) => d.json.status === 'firing'), 4_000);
    const put = await fetch(`${tg.url}/api/alerts`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channels: { pager: { type: 'webhook', url: pager.url }, chat: { type: 'webhook', url: chat.url } }, rules: [{ name: 'breakers', kind: 'breaker_opened', channels: ['chat'] }] }),
    });
    expect(put.status).toBe(200);
    tg.gateway.bus.emit('breaker.closed', target as never);
    // The pager opened an incident for the firing: only a resolve sent to it closes that incident. It went to the
    // rule's new channel, which never saw the firing.
    const resolved = await until('the resolved notification', () => pager.deliveries.find((d) => d.json.status === 'resolved'), 4_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, rule: 'breakers', subject: firing.json.subject });
    expect(chat.deliveries).toEqual([]);
    expect(tg.gateway.alerts.open()).toEqual([]);
  });
});

describe('failure alerts', () => {
  let receiver: Receiver;
  let tg: RunningGateway;

  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      ...config(upstream, receiver.url, {
        rules: [
          { name: 'breaker', kind: 'breaker_opened', severity: 'critical', cooldown_ms: 0 },
          { name: 'errors', kind: 'error_rate', threshold_pct: 50, min_requests: 2, window_ms: 60_000 },
        ],
      }),
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 300 } } },
    });
  });
  afterAll(async () => {
    upstream.reset();
    await tg?.stop();
    await receiver?.close();
  });

  it('a failing provider opens a breaker: a critical alert, an error-rate alert, and "resolved" once the breaker closes', async () => {
    upstream.setMode({ kind: 'error', status: 500 });
    for (let i = 0; i < 2; i++) {
      const error = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).catch((err: unknown) => err);
      expect(error).toMatchObject({ status: 500 });
    }
    const breaker = await until('the breaker alert', () => receiver.deliveries.find((d) => d.json.rule === 'breaker'));
    expect(breaker.json).toMatchObject({
      rule: 'breaker',
      event: 'breaker.opened',
      severity: 'critical',
      status: 'firing',
      subject: { provider: 'openai', model: 'gpt-4o-mini', target: expect.stringMatching(/^openai\/gpt-4o-mini#/) },
      details: { label: 'openai/gpt-4o-mini', cooldownMs: 300 },
    });
    expect(verify(SECRET, breaker.headers, breaker.body)).toBe(true);
    // The error rate is evaluated once a second: 2 of 2 attempts failed, over 50%.
    const errors = await until('the error-rate alert', () => receiver.deliveries.find((d) => d.json.rule === 'errors'), 4_000);
    expect(errors.json).toMatchObject({ event: 'provider.attempted', status: 'firing', severity: 'warning', subject: { provider: 'openai' }, details: { attempts: 2, failed: 2, errorRatePct: 100 } });

    // Healed: after the breaker's cool-down a trial call succeeds, the breaker closes, the alert resolves.
    upstream.setMode({ kind: 'ok' });
    await new Promise((done) => setTimeout(done, 350));
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    const resolved = await until('the resolved breaker alert', () => receiver.deliveries.find((d) => d.json.rule === 'breaker' && d.json.status === 'resolved'));
    expect(resolved.json).toMatchObject({ id: breaker.json.id, event: 'breaker.closed', severity: 'critical', subject: breaker.json.subject });
    expect(tg.gateway.alerts.open().map((alert) => alert.rule)).toEqual(['errors']);
  });
});

describe('latency alerts', () => {
  let receiver: Receiver;
  let tg: RunningGateway;

  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway(
      config(upstream, receiver.url, { rules: [{ name: 'slow', kind: 'latency_p95', threshold_ms: 150, window_ms: 60_000, for_ms: 0, min_requests: 3, cooldown_ms: 0 }] }),
    );
  });
  afterAll(async () => {
    upstream.reset();
    await tg?.stop();
    await receiver?.close();
  });

  it('slow answers fire a latency alert naming the provider and its p95', async () => {
    upstream.setMode({ kind: 'slow-headers', delayMs: 250 });
    await Promise.all([1, 2, 3].map(() => tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi })));
    const slow = await until('the latency alert', () => receiver.deliveries.find((d) => d.json.rule === 'slow'), 4_000);
    expect(slow.json).toMatchObject({ event: 'request.completed', status: 'firing', subject: { provider: 'openai' }, details: { thresholdMs: 150, requests: 3 } });
    expect(slow.json.details.p95Ms).toBeGreaterThanOrEqual(250);
    expect(verify(SECRET, slow.headers, slow.body)).toBe(true);
  });
});

describe('a restart with an undelivered alert', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-restart-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('delivers it after the restart, with the same id and body, and resolves the alert it left open', async () => {
    // The receiver is down: its port refuses connections.
    const gone = await startReceiver();
    await gone.close();
    const first = await startGateway(config(upstream, gone.url, { retry: { initial_delay_ms: 60_000, max_delay_ms: 60_000 } }), {}, { dataDir });
    const { createKey, clientFor } = gatewayApi(() => first.url);
    const { id, key } = await createKey({ name: 'restarted', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const failed = await until('a failed attempt', () => first.gateway.alerts.deliveries().find((line) => line.outcome === 'retrying'));
    expect(failed).toMatchObject({ attempt: 1, httpStatus: null, error: expect.stringMatching(/ECONNREFUSED/) });
    expect(first.gateway.alerts.queued()).toBe(1);
    await first.stop();
    // The first gateway is gone: its port refuses connections too.
    await expect(fetch(`${first.url}/health`)).rejects.toThrow();

    const receiver = await startReceiver();
    const second = await startGateway(config(upstream, receiver.url), {}, { dataDir });
    try {
      const delivery = await until('the delivery after the restart', () => receiver.deliveries[0]);
      expect(delivery.json).toMatchObject({ id: failed.alertId, rule: 'budget-half', status: 'firing', subject: { key: id } });
      expect(delivery.headers['x-tollgate-attempt']).toBe('2');
      expect(verify(SECRET, delivery.headers, delivery.body)).toBe(true);
      await until('the delivery log', () => second.gateway.alerts.deliveries().some((line) => line.outcome === 'delivered'));
      expect(second.gateway.alerts.deliveries().map((line) => [line.attempt, line.outcome])).toEqual([
        [2, 'delivered'],
        [1, 'retrying'],
      ]);
      expect(second.gateway.alerts.queued()).toBe(0);
      // The alert is still open after the restart, under its id, and resolves with a notification when its condition clears.
      expect(second.gateway.alerts.open()).toEqual([expect.objectContaining({ id: failed.alertId, rule: 'budget-half', subject: { key: id } })]);
      expect((await gatewayApi(() => second.url).api('PATCH', `/api/keys/${id}`, { budget: 100 })).status).toBe(200);
      const resolved = await until('the resolved notification after the restart', () => receiver.deliveries.find((d) => d.json.status === 'resolved'));
      expect(resolved.json).toMatchObject({ id: failed.alertId, rule: 'budget-half', status: 'resolved', details: { budget: 100 } });
      expect(second.gateway.alerts.open()).toEqual([]);
    } finally {
      await second.stop();
      await receiver.close();
    }
  });
});

describe('a restart while a receiver asked to wait', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-retry-after-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps the receiver’s Retry-After: the notification is not sent at once after the restart', async () => {
    const receiver = await startReceiver(['429']);
    const first = await startGateway(config(upstream, receiver.url, { retry: { initial_delay_ms: 50, max_delay_ms: 60_000 } }), {}, { dataDir });
    const { createKey, clientFor } = gatewayApi(() => first.url);
    const { key } = await createKey({ name: 'asked-to-wait', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const told = await until('the refused attempt', () => first.gateway.alerts.deliveries().find((line) => line.outcome === 'retrying'));
    expect(told).toMatchObject({ attempt: 1, httpStatus: 429 });
    // Told to come back in 30 s, not in the 50 ms of the backoff.
    expect(Date.parse(told.nextAt as string) - Date.now()).toBeGreaterThan(25_000);
    await first.stop();
    await expect(fetch(`${first.url}/health`)).rejects.toThrow();
    const second = await startGateway(config(upstream, receiver.url, { retry: { initial_delay_ms: 50, max_delay_ms: 60_000 } }), {}, { dataDir });
    try {
      expect(second.gateway.alerts.queued()).toBe(1);
      await new Promise((done) => setTimeout(done, 1_500));
      // Only the first, refused, attempt reached the receiver: the restart did not cut the wait it asked for.
      expect(receiver.deliveries).toHaveLength(1);
    } finally {
      await second.stop();
      await receiver.close();
    }
  });
});

describe('a stop while a delivery is in flight', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-stop-inflight-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('waits for the receiver that has the notification to answer, so the next start does not page it again', async () => {
    const receiver = await startReceiver(['slow']);
    try {
      const first = await startGateway(config(upstream, receiver.url), {}, { dataDir });
      const { createKey, clientFor } = gatewayApi(() => first.url);
      try {
        const { key } = await createKey({ name: 'stopped', budget: 4, rate_limit: null, models: [] });
        await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
        // The receiver has the notification; its answer comes half a second later.
        await until('the delivery', () => receiver.deliveries[0]);
      } finally {
        await first.stop();
      }
      const second = await startGateway(config(upstream, receiver.url), {}, { dataDir });
      try {
        // The first gateway recorded the answer before it stopped.
        expect(second.gateway.alerts.deliveries().map((line) => [line.attempt, line.outcome])).toEqual([[1, 'delivered']]);
        expect(second.gateway.alerts.queued()).toBe(0);
        await new Promise((done) => setTimeout(done, 1_000));
        expect(receiver.deliveries.map((d) => d.json.status)).toEqual(['firing']);
      } finally {
        await second.stop();
      }
    } finally {
      await receiver.close();
    }
  });
});
