import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, validNotification, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Edges of the alert rules, driven by real requests through a gateway to a scripted upstream, notifications
// received by a webhook receiver started here.

const hi = [{ role: 'user' as const, content: 'hi' }];
const pause = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const failure = (promise: Promise<unknown>): Promise<any> => promise.then(() => null, (err: unknown) => err);

let upstream: ScriptedUpstream;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
});
afterAll(async () => {
  await upstream?.close();
});

describe('error rate and clients that leave', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [{ name: 'errors', kind: 'error_rate', threshold_pct: 50, min_requests: 3, window_ms: 60_000, cooldown_ms: 0 }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('does not count an attempt the client cancelled (a chat UI\'s "stop") as the provider failing', async () => {
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    // Three users give up waiting: the provider did nothing wrong.
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const pending = failure(tg.client.chat.completions.create({ model: 'openai/slow-headers-2000', messages: hi }, { signal: controller.signal }));
      await pause(150);
      controller.abort();
      expect(await pending).toBeTruthy();
    }
    await pause(1_500);
    expect(receiver.deliveries.filter((d) => d.json.rule === 'errors')).toEqual([]);
    // Real failures still count, and the cancelled attempts are in neither figure.
    for (let i = 0; i < 3; i++) await failure(tg.client.chat.completions.create({ model: 'openai/error-502', messages: hi }));
    const firing = await until('the error-rate alert', () => receiver.deliveries.find((d) => d.json.rule === 'errors'), 4_000);
    expect(firing.json).toMatchObject({ status: 'firing', subject: { provider: 'openai' }, details: { attempts: 4, failed: 3, errorRatePct: 75 } });
  });
});

describe('an alert that fires again inside its cooldown and stays', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1, cooldown_ms: 200 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [{ name: 'breaker', kind: 'breaker_opened', severity: 'critical', cooldown_ms: 2_500 }],
      },
    });
  });
  afterAll(async () => {
    upstream.reset();
    await tg?.stop();
    await receiver?.close();
  });

  it('is sent once the cooldown is over, so the channel\'s last word is not "resolved" while the breaker is open', async () => {
    const breaker = (): Array<{ status: string; id: string }> => receiver.deliveries.filter((d) => d.json.rule === 'breaker').map((d) => ({ status: d.json.status, id: d.json.id }));
    upstream.setMode({ kind: 'error', status: 500 });
    expect(await failure(tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }))).toMatchObject({ status: 500 });
    const first = await until('the first firing', () => breaker()[0]);
    // Healed for a moment: the trial call succeeds, the breaker closes, "resolved" goes out.
    upstream.setMode({ kind: 'ok' });
    await pause(250);
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    await until('the resolved notification', () => breaker()[1]);
    // And down again, within the cooldown: not sent now (no flapping), but it stays down.
    upstream.setMode({ kind: 'error', status: 500 });
    expect(await failure(tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }))).toMatchObject({ status: 500 });
    await pause(500);
    expect(breaker()).toEqual([{ status: 'firing', id: first.id }, { status: 'resolved', id: first.id }]);
    const open = tg.gateway.alerts.open().find((alert) => alert.rule === 'breaker');
    expect(open).toMatchObject({ notified: false });
    // The cooldown passes with the breaker still open: the channel is told it is firing again.
    const again = await until('the firing after the cooldown', () => breaker()[2], 5_000);
    expect(again).toEqual({ status: 'firing', id: open!.id });
    expect(tg.gateway.alerts.open().find((alert) => alert.rule === 'breaker')).toMatchObject({ id: open!.id, notified: true });
    // And its resolution is sent too, under the same id.
    upstream.setMode({ kind: 'ok' });
    await pause(250);
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    expect(await until('the second resolution', () => breaker()[3])).toEqual({ status: 'resolved', id: open!.id });
  });
});

describe('route rules after many model names have come and gone', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      routes: { chat: { targets: [{ model: 'openai/error-503' }] } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [{ name: 'five-hundreds', kind: 'server_errors', threshold_pct: 50, min_requests: 2, window_ms: 1_500 }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('still watch a route first seen after a thousand others have left the window', async () => {
    // Requests without a route are grouped by the model they name: a client that puts a counter in the name (or
    // just months of uptime) makes a thousand subjects, all answered fine, all out of the window a moment later.
    for (let batch = 0; batch < 50; batch++) {
      await Promise.all(Array.from({ length: 20 }, (_, i) => tg.client.chat.completions.create({ model: `openai/gpt-4o-mini-${batch * 20 + i}`, messages: hi, max_tokens: 1 })));
    }
    // A window and an evaluation later, none of them is in the window any more.
    await pause(2_700);
    for (let i = 0; i < 2; i++) expect(await failure(tg.client.chat.completions.create({ model: 'chat', messages: hi }))).toMatchObject({ status: 503 });
    const firing = await until('the 5xx alert on the route', () => receiver.deliveries.find((d) => d.json.rule === 'five-hundreds'), 4_000);
    expect(firing.json).toMatchObject({ status: 'firing', subject: { route: 'chat' }, details: { requests: 2, serverErrors: 2 } });
  });
});

describe('an open alert whose rule is gone after a restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-rule-gone-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is resolved through the channel it fired on, with its severity, so the incident it opened is closed', async () => {
    const receiver = await startReceiver();
    const providers = { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } };
    const settings = { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1, cooldown_ms: 60_000 } } };
    const channels = { pager: { type: 'webhook' as const, url: receiver.url } };
    try {
      const first = await startGateway({ providers, settings, alerts: { channels, rules: [{ name: 'budget', kind: 'budget' }, { name: 'breaker', kind: 'breaker_opened', severity: 'critical' }] } }, {}, { dataDir });
      try {
        expect(await failure(first.client.chat.completions.create({ model: 'openai/error-500', messages: hi }))).toMatchObject({ status: 500 });
        await until('the firing', () => receiver.deliveries.find((d) => d.json.rule === 'breaker'));
      } finally {
        await first.stop();
      }
      const firing = receiver.deliveries[0]!.json;
      expect(firing).toMatchObject({ rule: 'breaker', status: 'firing', severity: 'critical' });
      // The rule is taken out of the config while the gateway is down (an edited file, a new deployment).
      const second = await startGateway({ providers, settings, alerts: { channels, rules: [{ name: 'budget', kind: 'budget' }] } }, {}, { dataDir });
      try {
        const resolved = await until('the resolution after the restart', () => receiver.deliveries.find((d) => d.json.status === 'resolved'), 4_000);
        expect(resolved.json).toMatchObject({ id: firing.id, rule: 'breaker', event: 'breaker.opened', severity: 'critical', status: 'resolved', subject: firing.subject });
        expect(resolved.json.summary).toContain('was removed');
        expect(validNotification(resolved.json), JSON.stringify(validNotification.errors)).toBe(true);
        expect(second.gateway.alerts.open()).toEqual([]);
      } finally {
        await second.stop();
      }
    } finally {
      await receiver.close();
    }
  });
});

describe('a budget alert on a threshold its rule stops watching', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  const { createKey, clientFor } = gatewayApi(() => tg.url);
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      // $1 per output token: "echo: hi" (2 tokens) costs $2.
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } } } },
      alerts: { channels: { ops: { type: 'webhook', url: receiver.url } }, rules: [{ name: 'budget', kind: 'budget', thresholds: [50, 80] }] },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('is resolved when the rule no longer lists that threshold (or that account), not left open until the spend falls', async () => {
    const { id, key } = await createKey({ name: 'watched', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const firing = await until('the 50% alert', () => receiver.deliveries.find((d) => d.json.status === 'firing'));
    expect(firing.json).toMatchObject({ rule: 'budget', subject: { key: id }, details: { threshold: 50 } });
    // 50% is too noisy: the operator keeps 80% only. The spend stays where it is for the rest of the period.
    const put = await fetch(`${tg.url}/api/alerts/rules/budget`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'budget', thresholds: [80] }) });
    expect(put.status).toBe(200);
    const resolved = await until('the resolution', () => receiver.deliveries.find((d) => d.json.status === 'resolved'), 4_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, rule: 'budget', subject: { key: id }, details: { threshold: 50, watched: false } });
    expect(resolved.json.summary).toContain('no longer watched');
    expect(tg.gateway.alerts.open()).toEqual([]);
  });
});

describe('an open error-rate alert across a restart, the provider still failing', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-window-restart-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('stays open under its id: no "resolved" for an empty window, and no second page when it fails again', async () => {
    const receiver = await startReceiver();
    const config = {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
      alerts: {
        channels: { pager: { type: 'webhook' as const, url: receiver.url } },
        rules: [{ name: 'errors', kind: 'error_rate' as const, threshold_pct: 50, min_requests: 2, window_ms: 6_000, cooldown_ms: 0 }],
      },
    };
    const notifications = (): Array<{ status: string; id: string }> => receiver.deliveries.map((d) => ({ status: d.json.status, id: d.json.id }));
    try {
      const first = await startGateway(config, {}, { dataDir });
      let id: string;
      try {
        for (let i = 0; i < 2; i++) await failure(first.client.chat.completions.create({ model: 'openai/error-502', messages: hi }));
        id = (await until('the firing', () => notifications()[0], 4_000)).id;
      } finally {
        await first.stop();
      }
      const second = await startGateway(config, {}, { dataDir });
      try {
        // A few evaluations with nothing in the window yet: the alert is not over, it has no news.
        await pause(2_200);
        expect(notifications()).toEqual([{ status: 'firing', id }]);
        expect(second.gateway.alerts.open()).toEqual([expect.objectContaining({ id, rule: 'errors' })]);
        // Still failing: the same alert, not a new page.
        for (let i = 0; i < 2; i++) await failure(second.client.chat.completions.create({ model: 'openai/error-502', messages: hi }));
        await pause(1_200);
        expect(notifications()).toEqual([{ status: 'firing', id }]);
        // Healed: resolved under the id it fired with.
        for (let i = 0; i < 6; i++) await second.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
        expect(await until('the resolution', () => notifications()[1], 4_000)).toEqual({ status: 'resolved', id });
      } finally {
        await second.stop();
      }
    } finally {
      await receiver.close();
    }
  });
});

describe('"fallbacks exhausted" and a stream that breaks after it started', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    const provider = { type: 'openai' as const, base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' };
    tg = await startGateway({
      providers: { primary: provider, backup: provider },
      routes: {
        chat: { targets: [{ model: 'primary/break-after-2' }], fallbacks: ['backup/gpt-4o-mini'] },
        dead: { targets: [{ model: 'primary/error-500' }], fallbacks: ['backup/error-503'] },
      },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [{ name: 'route-down', kind: 'fallbacks_exhausted', routes: ['chat', 'dead'], window_ms: 60_000, severity: 'critical' }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('does not page "every target failed" when the primary broke mid-answer and the fallback was never tried', async () => {
    const stream = await tg.client.chat.completions.create({ model: 'chat', messages: hi, stream: true });
    const error = await (async () => {
      for await (const _chunk of stream) void _chunk;
    })().then(() => null, (err: unknown) => err);
    expect(String(error)).toContain('primary');
    expect(upstream.calls.filter((call) => call.body.model === 'gpt-4o-mini' && call.body.stream === true)).toEqual([]);
    await pause(1_500);
    expect(receiver.deliveries).toEqual([]);
    // A route whose primary and fallback both failed does page.
    expect((await failure(tg.client.chat.completions.create({ model: 'dead', messages: hi })))?.status).toBeGreaterThanOrEqual(500);
    const firing = await until('the alert on the dead route', () => receiver.deliveries[0], 4_000);
    expect(firing.json).toMatchObject({ rule: 'route-down', subject: { route: 'dead' }, details: { failures: 1 } });
    await pause(1_200);
    expect(receiver.deliveries.map((d) => d.json.subject.route)).toEqual(['dead']);
  });
});

describe('a latency alert while the answers thin out', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [{ name: 'slow', kind: 'latency_p95', threshold_ms: 150, window_ms: 3_000, for_ms: 0, min_requests: 3, cooldown_ms: 0 }],
      },
    });
  });
  afterAll(async () => {
    upstream.reset();
    await tg?.stop();
    await receiver?.close();
  });

  it('stays open while the fewer answers there are stay slow, and resolves "back under" only when they are fast again', async () => {
    const slow = (): Array<{ status: string; summary: string; details: Record<string, unknown> }> =>
      receiver.deliveries.filter((d) => d.json.rule === 'slow').map((d) => ({ status: d.json.status, summary: d.json.summary, details: d.json.details }));
    upstream.setMode({ kind: 'slow-headers', delayMs: 300 });
    await Promise.all([1, 2, 3].map(() => tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi })));
    await until('the latency alert', () => slow()[0], 4_000);
    // Most clients give up (or the provider times out for them): one answer in 1.6 s gets through, as slow as
    // before, so the window holds fewer than min_requests answers, every one over the threshold.
    for (let i = 0; i < 4; i++) {
      await pause(1_300);
      await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    }
    expect(slow().map((d) => d.status)).toEqual(['firing']);
    // Fast again: the alert resolves once the slow answers have left the window, saying so with the figure.
    upstream.setMode({ kind: 'ok' });
    for (const end = Date.now() + 8_000; !slow()[1] && Date.now() < end; await pause(200)) {
      await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    }
    const resolved = slow()[1];
    expect(resolved?.status).toBe('resolved');
    expect(resolved?.summary).toBe('openai: p95 latency back under 150 ms');
    expect(resolved?.details.p95Ms).toBeLessThan(150);
  });
});

describe('route rules while a thousand model names are in the window', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      routes: { chat: { targets: [{ model: 'openai/error-503' }] } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [
          { name: 'five-hundreds', kind: 'server_errors', threshold_pct: 50, min_requests: 2, window_ms: 60_000 },
          { name: 'chat-down', kind: 'fallbacks_exhausted', routes: ['chat'], window_ms: 60_000 },
        ],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('still watch a configured route: client-made model names cannot crowd it out of the subjects kept', async () => {
    // A client numbering its model names (or a gateway serving hundreds of models by name, without routes) fills
    // the thousand subjects kept for names that are not routes, all still in the window.
    for (let batch = 0; batch < 55; batch++) {
      await Promise.all(Array.from({ length: 20 }, (_, i) => tg.client.chat.completions.create({ model: `openai/gpt-4o-mini-${batch * 20 + i}`, messages: hi, max_tokens: 1 })));
    }
    for (let i = 0; i < 2; i++) expect(await failure(tg.client.chat.completions.create({ model: 'chat', messages: hi }))).toMatchObject({ status: 503 });
    const five = await until('the 5xx alert on the route', () => receiver.deliveries.find((d) => d.json.rule === 'five-hundreds'), 4_000);
    expect(five.json).toMatchObject({ status: 'firing', subject: { route: 'chat' }, details: { requests: 2, serverErrors: 2 } });
    const down = await until('the route-down alert', () => receiver.deliveries.find((d) => d.json.rule === 'chat-down'), 4_000);
    expect(down.json).toMatchObject({ status: 'firing', subject: { route: 'chat' }, details: { failures: 2 } });
  });
});

describe('per-model error-rate rules while a thousand model names are in the window', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      // error-503 is a model the config names (its `models`), as an operator lists a deployment the catalogue lacks.
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', models: ['error-503'] } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [{ name: 'model-errors', kind: 'error_rate', per: 'model', threshold_pct: 50, min_requests: 2, window_ms: 60_000 }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('still watch a model the config names: client-made model names cannot crowd it out', async () => {
    for (let batch = 0; batch < 55; batch++) {
      await Promise.all(Array.from({ length: 20 }, (_, i) => tg.client.chat.completions.create({ model: `openai/made-up-${batch * 20 + i}`, messages: hi, max_tokens: 1 })));
    }
    for (let i = 0; i < 2; i++) expect(await failure(tg.client.chat.completions.create({ model: 'openai/error-503', messages: hi }))).toMatchObject({ status: 503 });
    const fired = await until('the per-model alert', () => receiver.deliveries.find((d) => d.json.rule === 'model-errors'), 4_000);
    expect(fired.json).toMatchObject({ status: 'firing' });
    expect(JSON.stringify(fired.json.subject)).toContain('error-503');
  });
});

describe('error-rate and 5xx alerts while the traffic thins out', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      routes: { chat: { targets: [{ model: 'openai/gpt-4o-mini' }] } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [
          { name: 'errors', kind: 'error_rate', threshold_pct: 50, min_requests: 4, window_ms: 3_000, cooldown_ms: 0 },
          { name: 'five', kind: 'server_errors', threshold_pct: 50, min_requests: 4, window_ms: 3_000, cooldown_ms: 0 },
        ],
      },
    });
  });
  afterAll(async () => {
    upstream.reset();
    await tg?.stop();
    await receiver?.close();
  });

  it('stay open while the fewer requests there are still fail, and resolve "back to" only when they succeed again', async () => {
    const of = (rule: string): Array<{ status: string; summary: string; details: Record<string, number> }> =>
      receiver.deliveries.filter((d) => d.json.rule === rule).map((d) => ({ status: d.json.status, summary: d.json.summary, details: d.json.details }));
    upstream.setMode({ kind: 'error', status: 502 });
    for (let i = 0; i < 4; i++) await failure(tg.client.chat.completions.create({ model: 'chat', messages: hi }));
    await until('both firings', () => of('errors')[0] && of('five')[0], 4_000);
    // Clients back off (retry-after, their own breakers): one request in 1.6 s, every one still failing, so the
    // window holds fewer than min_requests.
    for (let i = 0; i < 4; i++) {
      await pause(1_300);
      await failure(tg.client.chat.completions.create({ model: 'chat', messages: hi }));
    }
    expect(of('errors').map((d) => d.status)).toEqual(['firing']);
    expect(of('five').map((d) => d.status)).toEqual(['firing']);
    // Healthy again: both resolve once the failures have left the window, at a rate under the threshold.
    upstream.setMode({ kind: 'ok' });
    for (const end = Date.now() + 8_000; !(of('errors')[1] && of('five')[1]) && Date.now() < end; await pause(200)) {
      await tg.client.chat.completions.create({ model: 'chat', messages: hi });
    }
    const [errors, five] = [of('errors')[1], of('five')[1]];
    expect(errors).toMatchObject({ status: 'resolved', summary: expect.stringMatching(/^openai: error rate back to [\d.]+% \(\d+ attempts in the window\)$/) });
    expect(errors?.details.errorRatePct).toBeLessThanOrEqual(50);
    expect(five).toMatchObject({ status: 'resolved', summary: expect.stringMatching(/^chat: 5xx rate back to [\d.]+% \(\d+ requests in the window\)$/) });
    expect(five?.details.serverErrorPct).toBeLessThanOrEqual(50);
  });
});

describe('window rules across a step of the wall clock', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  /** How far the gateway's wall clock is from the real time: NTP steps it. */
  let offset = 0;
  beforeAll(async () => {
    receiver = await startReceiver();
    tg = await startGateway(
      {
        providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
        settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
        alerts: {
          channels: { ops: { type: 'webhook', url: receiver.url } },
          rules: [{ name: 'errors', kind: 'error_rate', threshold_pct: 50, min_requests: 3, window_ms: 60_000, cooldown_ms: 0 }],
        },
      },
      {},
      { clock: () => Date.now() + offset },
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('keep the samples of the last window_ms of real time when NTP steps the clock forward or back', async () => {
    const statuses = (): string[] => receiver.deliveries.filter((d) => d.json.rule === 'errors').map((d) => d.json.status);
    for (let i = 0; i < 3; i++) await failure(tg.client.chat.completions.create({ model: 'openai/error-502', messages: hi }));
    const firing = await until('the error-rate alert', () => receiver.deliveries.find((d) => d.json.rule === 'errors'), 4_000);
    // The clock was 10 minutes slow and is stepped: the failures of a moment ago are not 10 minutes old.
    offset = 600_000;
    await pause(2_500);
    expect(statuses()).toEqual(['firing']);
    // And an hour back (a clock that ran fast): they are not an hour in the future, and new attempts still count.
    offset = -3_600_000;
    await failure(tg.client.chat.completions.create({ model: 'openai/error-502', messages: hi }));
    await pause(2_500);
    expect(statuses()).toEqual(['firing']);
    expect(tg.gateway.alerts.open()).toEqual([expect.objectContaining({ id: firing.json.id, rule: 'errors' })]);
    // The notifications still carry the wall clock's time.
    expect(Math.abs(Date.parse(firing.json.at) - Date.now())).toBeLessThan(30_000);
  });
});
