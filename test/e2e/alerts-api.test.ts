import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALERT_NOTIFICATION_SCHEMA } from '../../src/telemetry/alerts/notification-schema.js';
import { AdminClient } from '../helpers/admin.js';
import { documentedVerify, startReceiver, until, validNotification, type Receiver, type Verify } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// /api/alerts against a running gateway: what it shows (secrets masked), what it writes (live, audited), the test
// delivery, the delivery log, and secrets kept through read-modify-write round trips.

const FILE_SECRET = 'whsec-from-the-environment-0001';
const API_SECRET = 'whsec-set-through-the-api-9876';
/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };
const hi = [{ role: 'user' as const, content: 'hi' }];


let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;
let admin: AdminClient;
let verify: Verify;
const { createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  verify = await documentedVerify();
  tg = await startGateway(
    {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url, secret: 'env:HOOK_SECRET', retry: { initial_delay_ms: 50 } } },
        rules: [{ name: 'breaker', kind: 'breaker_opened', severity: 'critical' }],
      },
    },
    { HOOK_SECRET: FILE_SECRET },
  );
  admin = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

describe('/api/alerts', () => {
  it("shows the file's section with its secret reference, never the secret", async () => {
    const view = await admin.get('/api/alerts');
    expect(view.status).toBe(200);
    expect(view.body).toEqual({
      source: 'file',
      channels: [{ name: 'ops', type: 'webhook', url: receiver.url, secret: 'env:HOOK_SECRET', retry: { initial_delay_ms: 50 } }],
      rules: [{ name: 'breaker', kind: 'breaker_opened', severity: 'critical' }],
      max_queue: 10_000,
      open: [],
      queued: 0,
    });
    const schema = await admin.get('/api/alerts/schema');
    expect(schema.headers.get('content-type')).toContain('application/schema+json');
    expect(schema.body).toEqual(ALERT_NOTIFICATION_SCHEMA);
  });

  it('refuses to copy a file section that reads env: references into the API layer, item by item', async () => {
    const refused = await admin.put('/api/alerts/rules/budget-half', { kind: 'budget', thresholds: [50] });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'conflict' });
    expect(refused.body.error.message).toContain('PUT /api/alerts');
  });

  it('replaces the section as a whole, shows the new secret masked, and applies it to the next notification', async () => {
    const replaced = await admin.put('/api/alerts', {
      channels: { ops: { type: 'webhook', url: receiver.url, secret: API_SECRET, retry: { initial_delay_ms: 50 } } },
      rules: [],
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ source: 'api', channels: [{ name: 'ops', secret: `****${API_SECRET.slice(-4)}` }], rules: [] });

    const created = await admin.put('/api/alerts/rules/budget-half', { kind: 'budget', thresholds: [50], cooldown_ms: 0 });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/api/alerts/rules/budget-half');
    expect(created.body).toEqual({ name: 'budget-half', kind: 'budget', thresholds: [50], cooldown_ms: 0 });

    const { id, key } = await createKey({ name: 'watched', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const firing = await until('the budget notification', () => receiver.deliveries.find((d) => d.json.rule === 'budget-half'));
    expect(firing.json).toMatchObject({ status: 'firing', subject: { key: id } });
    expect(verify(API_SECRET, firing.headers, firing.body)).toBe(true);
    expect(validNotification(firing.json)).toBe(true);

    const open = await admin.get('/api/alerts/open');
    expect(open.body).toEqual({ object: 'list', data: [expect.objectContaining({ id: firing.json.id, rule: 'budget-half', kind: 'budget', subject: { key: id }, notified: true })] });
    expect((await admin.get('/api/alerts')).body.open).toEqual(open.body.data);
  });

  it('sends a test notification on demand, signed, recorded in the delivery log', async () => {
    const before = receiver.deliveries.length;
    const tested = await admin.post('/api/alerts/channels/ops/test');
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ channel: 'ops', rule: 'test', status: 'firing', attempt: 1, outcome: 'delivered', httpStatus: 200, error: null });
    const delivery = receiver.deliveries[before];
    expect(delivery?.json).toMatchObject({ rule: 'test', event: 'test', severity: 'info', status: 'firing', subject: {} });
    expect(validNotification(delivery?.json)).toBe(true);
    expect(verify(API_SECRET, delivery?.headers ?? {}, delivery?.body ?? '')).toBe(true);

    const log = await admin.get('/api/alerts/deliveries?channel=ops&rule=test&limit=5');
    expect(log.body.data).toEqual([expect.objectContaining({ alertId: tested.body.alertId, rule: 'test', outcome: 'delivered', attempt: 1 })]);
    expect((await admin.get('/api/alerts/deliveries?limit=1')).body.data).toHaveLength(1);
    expect((await admin.get('/api/alerts/deliveries?limit=0')).status).toBe(400);

    const missing = await admin.post('/api/alerts/channels/nowhere/test');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: 'alert_channel_not_found', param: 'name' });
  });

  it('keeps stored secrets when a client writes back what it read (here and through /api/config), and refuses a masked value that stands for nothing', async () => {
    const read = await admin.get('/api/alerts');
    const { channels, rules, max_queue } = read.body;
    expect((await admin.put('/api/alerts', { channels, rules, max_queue })).status).toBe(200);
    const layer = await admin.get('/api/config?layer=api');
    expect(layer.body.alerts.channels.ops.secret).toBe(`****${API_SECRET.slice(-4)}`);
    expect((await admin.put('/api/config', layer.body)).status).toBe(200);
    const channel = await admin.get('/api/alerts/channels/ops');
    expect((await admin.put('/api/alerts/channels/ops', channel.body)).status).toBe(200);

    const before = receiver.deliveries.length;
    expect((await admin.post('/api/alerts/channels/ops/test')).body.outcome).toBe('delivered');
    const delivery = receiver.deliveries[before];
    expect(verify(API_SECRET, delivery?.headers ?? {}, delivery?.body ?? '')).toBe(true);

    const forged = await admin.put('/api/alerts/channels/ops', { ...channel.body, secret: '****zzzz' });
    expect(forged.status).toBe(400);
    expect(forged.body.error).toMatchObject({ code: 'masked_secret', param: 'alerts.channels.ops.secret' });
  });

  it("masks a webhook URL's user, password and query values, and keeps them when the URL is written back as read", async () => {
    const url = receiver.url.replace('http://', 'http://alice:pa55word-xyz@') + '?token=hook-token-123&team=ops';
    expect((await admin.put('/api/alerts/channels/tokened', { type: 'webhook', url })).status).toBeLessThan(300);
    const read = await admin.get('/api/alerts/channels/tokened');
    expect(read.body.url).toBe(receiver.url.replace('http://', 'http://****@') + '?token=****&team=****');
    for (const path of ['/api/alerts', '/api/config?layer=api', '/api/audit?limit=5']) {
      const text = (await admin.get(path)).text;
      expect(text).not.toContain('hook-token-123');
      expect(text).not.toContain('pa55word-xyz');
    }
    expect((await admin.put('/api/alerts/channels/tokened', read.body)).status).toBe(200);
    expect(tg.gateway.configService.current().alerts.channels.get('tokened')).toMatchObject({ url });
    const forged = await admin.put('/api/alerts/channels/tokened', { ...read.body, url: `${receiver.url}?token=****` });
    expect(forged.status).toBe(400);
    expect(forged.body.error).toMatchObject({ code: 'masked_secret', param: 'alerts.channels.tokened.url' });
    expect((await admin.delete('/api/alerts/channels/tokened')).status).toBe(204);
  });

  it('validates rules, names what is wrong, and checks channels exist', async () => {
    const bad = await admin.put('/api/alerts/rules/too-much', { kind: 'error_rate', threshold_pct: 200 });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_config' });
    expect(bad.body.error.message).toContain('threshold_pct');
    // No rate is over 100%, so a rule at 100 could never fire: refused for both rate rules, saying why.
    for (const kind of ['error_rate', 'server_errors']) {
      const never = await admin.put('/api/alerts/rules/never', { kind, threshold_pct: 100 });
      expect(never.status).toBe(400);
      expect(never.body.error.message).toMatch(/threshold_pct.*below 100/);
    }
    expect((await admin.put('/api/alerts/rules/nearly', { kind: 'server_errors', threshold_pct: 99.5 })).status).toBe(201);
    expect((await admin.delete('/api/alerts/rules/nearly')).status).toBe(204);
    const noChannel = await admin.put('/api/alerts/rules/lost', { kind: 'breaker_opened', channels: ['pager'] });
    expect(noChannel.status).toBe(400);
    expect(noChannel.body.error.message).toContain('"pager" is not a channel');
    // A rule body naming another rule than the URL is refused like a channel's, not stored under the URL's name.
    const renamed = await admin.put('/api/alerts/rules/copy', { name: 'budget-half', kind: 'breaker_opened' });
    expect(renamed.status).toBe(400);
    expect(renamed.body.error).toMatchObject({ code: 'invalid_config', param: 'name' });
    expect((await admin.get('/api/alerts/rules/copy')).status).toBe(404);
    const unknownKind = await admin.put('/api/alerts/rules/odd', { kind: 'moon_phase' });
    expect(unknownKind.status).toBe(400);
    // A whole-section write with a field the section does not have is refused, not silently dropped.
    const unknownField = await admin.put('/api/alerts', { rules: [], channles: {} });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.message).toContain('channles');
    // Channels written as the GET view lists them each need their own name: none was filed as "undefined", a
    // repeated one replaced the first, and an item that is not an object was dropped, all answered 200.
    const hook = { type: 'webhook', url: 'https://hooks.example.com/x' };
    const before = (await admin.get('/api/alerts')).body;
    const nameless = await admin.put('/api/alerts', { channels: [hook], rules: [] });
    expect(nameless.status).toBe(400);
    expect(nameless.body.error).toMatchObject({ code: 'invalid_config', param: 'alerts.channels.0.name' });
    const twice = await admin.put('/api/alerts', { channels: [{ name: 'a', ...hook }, { name: 'a', ...hook, url: 'https://hooks.example.com/y' }], rules: [] });
    expect(twice.status).toBe(400);
    expect(twice.body.error).toMatchObject({ code: 'invalid_config', param: 'alerts.channels.1.name' });
    const stray = await admin.put('/api/alerts', { channels: [{ name: 'a', ...hook }, 'b'], rules: [] });
    expect(stray.status).toBe(400);
    expect(stray.body.error).toMatchObject({ code: 'invalid_config', param: 'alerts.channels.1' });
    expect((await admin.get('/api/alerts')).body).toEqual(before);
    expect((await admin.get('/api/alerts/rules/nope')).body.error).toMatchObject({ code: 'alert_rule_not_found' });
    expect((await admin.delete('/api/alerts/rules/nope')).status).toBe(404);
  });

  it('adds, replaces in place and deletes rules and channels, each change audited and live at once', async () => {
    await admin.put('/api/alerts/rules/slow', { kind: 'latency_p95', threshold_ms: 5000 });
    await admin.put('/api/alerts/rules/errors', { kind: 'error_rate', threshold_pct: 20 });
    const replaced = await admin.put('/api/alerts/rules/slow', { kind: 'ttft_p95', threshold_ms: 900 });
    expect(replaced.status).toBe(200);
    expect((await admin.get('/api/alerts/rules')).body.data.map((rule: { name: string; kind: string }) => `${rule.name}:${rule.kind}`)).toEqual([
      'budget-half:budget',
      'slow:ttft_p95',
      'errors:error_rate',
    ]);
    expect(tg.gateway.configService.current().alerts.rules.map((rule) => rule.name)).toEqual(['budget-half', 'slow', 'errors']);
    expect((await admin.delete('/api/alerts/rules/errors')).status).toBe(204);

    expect((await admin.put('/api/alerts/channels/spare', { type: 'webhook', url: 'https://hooks.example.com/spare' })).status).toBe(201);
    expect((await admin.delete('/api/alerts/channels/spare')).status).toBe(204);
    expect((await admin.get('/api/alerts/channels/spare')).status).toBe(404);

    const audit = await admin.get('/api/audit?limit=20');
    const actions = audit.body.data.map((entry: { action: string; target: string }) => `${entry.action} ${entry.target}`);
    expect(actions).toEqual(expect.arrayContaining(['alert_rule.created alerts.rules.slow', 'alert_rule.replaced alerts.rules.slow', 'alert_rule.deleted alerts.rules.errors', 'alert_channel.deleted alerts.channels.spare']));
  });

  it("goes back to the file's section when the API's is deleted", async () => {
    expect((await admin.delete('/api/alerts')).body).toMatchObject({ source: 'file', rules: [{ name: 'breaker' }] });
    expect(tg.gateway.configService.current().alerts.channels.get('ops')).toMatchObject({ type: 'webhook', secret: FILE_SECRET });
  });

  it('never answers a secret', () => {
    expect(admin.seen.length).toBeGreaterThan(20);
    for (const response of admin.seen) {
      expect(response.text).not.toContain(FILE_SECRET);
      expect(response.text).not.toContain(API_SECRET);
    }
  });
});
