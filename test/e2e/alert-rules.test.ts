import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALERT_NOTIFICATION_SCHEMA } from '../../src/telemetry/alerts/notification-schema.js';
import { startReceiver, until, validNotification, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The rule kinds over request outcomes (5xx rate, plans exhausted, time to first token, error rate per model),
// driven by real requests whose model names script the upstream (`error-500`, `slow-headers-300`).

const hi = [{ role: 'user' as const, content: 'hi' }];

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  const provider = { type: 'openai' as const, base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' };
  tg = await startGateway({
    providers: { primary: provider, backup: provider },
    routes: {
      doomed: { targets: [{ model: 'primary/error-500' }], fallbacks: ['backup/error-503'], retry: { max_attempts: 2, initial_delay_ms: 0 } },
      flaky: { targets: [{ model: 'primary/gpt-4o-mini' }] },
    },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1_000 } } },
    alerts: {
      channels: { ops: { type: 'webhook', url: receiver.url, secret: 'whsec-rules', retry: { initial_delay_ms: 50 } } },
      rules: [
        { name: 'exhausted', kind: 'fallbacks_exhausted', routes: ['doomed'], window_ms: 1_500, cooldown_ms: 0 },
        { name: 'five-hundreds', kind: 'server_errors', threshold_pct: 50, min_requests: 4, window_ms: 60_000, routes: ['flaky'] },
        { name: 'slow-first-token', kind: 'ttft_p95', threshold_ms: 150, for_ms: 0, min_requests: 2, window_ms: 60_000, providers: ['backup'] },
        { name: 'model-errors', kind: 'error_rate', per: 'model', threshold_pct: 60, min_requests: 2, window_ms: 60_000, providers: ['backup'] },
      ],
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

const failure = (promise: Promise<unknown>): Promise<any> => promise.then(() => null, (err: unknown) => err);

describe('alert rules over request outcomes', () => {
  it('fires "fallbacks exhausted" for a route whose primary and fallback both failed, and resolves it once a window passes clean', async () => {
    const error = await failure(tg.client.chat.completions.create({ model: 'doomed', messages: hi }));
    expect(error?.status, String(error?.message)).toBeGreaterThanOrEqual(500);
    expect(upstream.calls.map((call) => call.body.model)).toEqual(['error-500', 'error-503']);
    const firing = await until('the exhausted alert', () => receiver.deliveries.find((d) => d.json.rule === 'exhausted'), 4_000);
    expect(firing.json).toMatchObject({ event: 'request.failed', status: 'firing', subject: { route: 'doomed' }, details: { route: 'doomed', failures: 1, minCount: 1 } });
    expect(firing.json.summary).toContain('every target');
    const resolved = await until('the resolved exhausted alert', () => receiver.deliveries.find((d) => d.json.rule === 'exhausted' && d.json.status === 'resolved'), 5_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, subject: { route: 'doomed' }, details: { failures: 0 } });
  });

  it('fires "server errors" when over half of a route\'s requests end 5xx, not before the minimum count', async () => {
    await tg.client.chat.completions.create({ model: 'flaky', messages: hi });
    upstream.setMode({ kind: 'error', status: 500 });
    try {
      expect(await failure(tg.client.chat.completions.create({ model: 'flaky', messages: hi }))).toMatchObject({ status: 500 });
      expect(await failure(tg.client.chat.completions.create({ model: 'flaky', messages: hi }))).toMatchObject({ status: 500 });
      // Three requests, two 5xx: over 50%, but under min_requests (4).
      await new Promise((done) => setTimeout(done, 1_200));
      expect(receiver.deliveries.some((d) => d.json.rule === 'five-hundreds')).toBe(false);
      expect(await failure(tg.client.chat.completions.create({ model: 'flaky', messages: hi }))).toMatchObject({ status: 500 });
    } finally {
      upstream.setMode({ kind: 'ok' });
    }
    const firing = await until('the 5xx alert', () => receiver.deliveries.find((d) => d.json.rule === 'five-hundreds'), 4_000);
    expect(firing.json).toMatchObject({ event: 'request.failed', subject: { route: 'flaky' }, details: { requests: 4, serverErrors: 3, serverErrorPct: 75, thresholdPct: 50 } });
  });

  it('fires "ttft p95" on slow first tokens of streams only, naming the provider', async () => {
    // A slow non-streamed answer says nothing of the first token.
    await tg.client.chat.completions.create({ model: 'backup/slow-headers-300', messages: hi });
    for (let i = 0; i < 2; i++) {
      const stream = await tg.client.chat.completions.create({ model: 'backup/slow-headers-300', messages: hi, stream: true });
      for await (const _chunk of stream) void _chunk;
    }
    const firing = await until('the ttft alert', () => receiver.deliveries.find((d) => d.json.rule === 'slow-first-token'), 4_000);
    expect(firing.json).toMatchObject({ event: 'request.completed', subject: { provider: 'backup' }, details: { requests: 2, thresholdMs: 150 } });
    expect(firing.json.details.p95Ms).toBeGreaterThanOrEqual(300);
    expect(firing.json.summary).toContain('time to first token');
  });

  it('fires "error rate" per model: the failing model alone, not its healthy sibling', async () => {
    for (let i = 0; i < 2; i++) await failure(tg.client.chat.completions.create({ model: 'backup/error-502', messages: hi }));
    for (let i = 0; i < 3; i++) await tg.client.chat.completions.create({ model: 'backup/gpt-4o-mini', messages: hi });
    const firing = await until('the per-model error alert', () => receiver.deliveries.find((d) => d.json.rule === 'model-errors'), 4_000);
    expect(firing.json).toMatchObject({ subject: { provider: 'backup', model: 'error-502' }, details: { attempts: 2, failed: 2 } });
    await new Promise((done) => setTimeout(done, 1_200));
    expect(receiver.deliveries.filter((d) => d.json.rule === 'model-errors').map((d) => d.json.subject.model)).toEqual(['error-502']);
  });

  it('resolves an open alert whose provider the rule stops watching, through the channel it fired on', async () => {
    const rule = { kind: 'error_rate', threshold_pct: 50, min_requests: 2, window_ms: 60_000, cooldown_ms: 0 };
    expect((await fetch(`${tg.url}/api/alerts/rules/watched`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...rule, providers: ['primary', 'backup'] }) })).status).toBe(201);
    for (let i = 0; i < 2; i++) await failure(tg.client.chat.completions.create({ model: 'primary/error-502', messages: hi }));
    const isPrimary = (d: { json: any }): boolean => d.json.rule === 'watched' && d.json.subject.provider === 'primary';
    const firing = await until('the error-rate alert on primary', () => receiver.deliveries.find((d) => isPrimary(d) && d.json.status === 'firing'), 4_000);
    // The rule is narrowed to the other provider: the alert on primary is over (it was never evaluated again, so it
    // stayed open, and its incident with it).
    expect((await fetch(`${tg.url}/api/alerts/rules/watched`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...rule, providers: ['backup'] }) })).status).toBe(200);
    const resolved = await until('the resolved alert on primary', () => receiver.deliveries.find((d) => isPrimary(d) && d.json.status === 'resolved'), 4_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, subject: { provider: 'primary' }, details: { watched: false } });
    expect(resolved.json.summary).toContain('no longer watched');
    expect(tg.gateway.alerts.open().filter((alert) => alert.rule === 'watched' && alert.subject.provider === 'primary')).toEqual([]);
  });

  it('every notification delivered validates against the published JSON Schema, which the README carries verbatim', async () => {
    expect(receiver.deliveries.length).toBeGreaterThanOrEqual(5);
    for (const delivery of receiver.deliveries) {
      expect(validNotification(delivery.json), JSON.stringify(validNotification.errors)).toBe(true);
    }
    const readme = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Notification schema'));
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block, 'README.md has a ```json block under "### Notification schema"').toBeDefined();
    expect(JSON.parse(block ?? 'null')).toEqual(ALERT_NOTIFICATION_SCHEMA);
    // And the schema refuses what is not a notification.
    expect(validNotification({ ...receiver.deliveries[0]?.json, status: 'pending' })).toBe(false);
    expect(validNotification({ ...receiver.deliveries[0]?.json, extra: 1 })).toBe(false);
  });
});

describe('alert rules over a model requested without a route', () => {
  let gateway: RunningGateway;
  let hook: Receiver;
  beforeAll(async () => {
    hook = await startReceiver();
    gateway = await startGateway({
      providers: { primary: { type: 'openai' as const, base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 60_000 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: hook.url, secret: 'whsec-model', retry: { initial_delay_ms: 50 } } },
        rules: [
          { name: 'dead-model', kind: 'fallbacks_exhausted', min_count: 3, window_ms: 60_000 },
          { name: 'dead-5xx', kind: 'server_errors', threshold_pct: 50, min_requests: 3, window_ms: 60_000 },
        ],
      },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await hook?.close();
  });

  it('counts the requests its open breaker refused (no provider reached): both rules fire for the model', async () => {
    const codes: Array<string | null> = [];
    for (let i = 0; i < 5; i++) {
      const error = await failure(gateway.client.chat.completions.create({ model: 'primary/error-500', messages: hi }));
      codes.push(error?.code ?? error?.error?.code ?? null);
    }
    // Two upstream 500s open the breaker; the three after it never reach a provider.
    expect(codes.slice(2)).toEqual(['all_targets_unavailable', 'all_targets_unavailable', 'all_targets_unavailable']);
    const exhausted = await until('the exhausted alert', () => hook.deliveries.find((d) => d.json.rule === 'dead-model'), 4_000);
    expect(exhausted.json).toMatchObject({ status: 'firing', subject: { route: 'primary/error-500' } });
    const errors = await until('the 5xx alert', () => hook.deliveries.find((d) => d.json.rule === 'dead-5xx'), 4_000);
    expect(errors.json).toMatchObject({ status: 'firing', subject: { route: 'primary/error-500' } });
  });
});
