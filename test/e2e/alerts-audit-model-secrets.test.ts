import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startReceiver, until, validNotification, type Receiver } from '../helpers/alert-receiver.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A client may paste a key into the model name (`openai/<its virtual key>`, arguments swapped): the request log, the
// metrics and the traces show such a name with the key redacted (core/redact-secrets.ts), and so do the route rules'
// alerts. The alerts keyed by the upstream model, `error_rate` with `per: model` and `breaker_opened` (whose target is
// `<provider>/<model>#<key id>`), put the name as it came in their subject, summary and details: in every
// notification sent (a webhook, Slack, PagerDuty) and in GET /api/alerts.

describe("a key pasted into a failing model's name", () => {
  let upstream: ScriptedUpstream;
  let receiver: Receiver;
  let tg: RunningGateway;
  const { api, createKey, clientFor } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
    receiver = await startReceiver();
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 300 } } },
      alerts: {
        channels: { ops: { type: 'webhook', url: receiver.url } },
        rules: [
          { name: 'model-errors', kind: 'error_rate', per: 'model', threshold_pct: 10, min_requests: 2 },
          { name: 'breaker', kind: 'breaker_opened', severity: 'critical' },
        ],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
    await upstream?.close();
  });

  it('is redacted in the notifications and in GET /api/alerts, and the alert still resolves', async () => {
    const { key } = await createKey({ name: 'pasted', rate_limit: null, models: [] });
    const model = `openai/${key}`;
    upstream.setMode({ kind: 'error', status: 500, message: 'upstream broke' });
    for (let i = 0; i < 2; i++) {
      const failed = await clientFor(key)
        .chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
        .catch((err: unknown) => err);
      expect(failed).toMatchObject({ status: 500 });
    }
    const firing = await until('both firing notifications', () => {
      const found = ['model-errors', 'breaker'].map((rule) => receiver.deliveries.find((d) => d.json.rule === rule && d.json.status === 'firing'));
      return found.every(Boolean) ? found : null;
    });
    const breaker = firing[1]!;
    expect(firing[0]!.json).toMatchObject({ event: 'provider.attempted', subject: { provider: 'openai', model: '[REDACTED]' }, details: { attempts: 2, failed: 2 } });
    expect(breaker.json).toMatchObject({ event: 'breaker.opened', subject: { provider: 'openai', model: '[REDACTED]', target: expect.stringMatching(/^openai\/\[REDACTED\]#/) } });
    for (const delivery of firing) expect(validNotification(delivery!.json), JSON.stringify(validNotification.errors)).toBe(true);
    const view = await api('GET', '/api/alerts');
    expect(view.body.open).toHaveLength(2);
    expect(JSON.stringify(view.body)).not.toContain(key);

    // The breaker closes after a successful trial call: its alert resolves under the same id.
    upstream.setMode({ kind: 'ok' });
    await new Promise((done) => setTimeout(done, 400));
    await clientFor(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    const resolved = await until('the breaker resolved', () => receiver.deliveries.find((d) => d.json.rule === 'breaker' && d.json.status === 'resolved'));
    expect(resolved.json.id).toBe(breaker.json.id);
    expect(resolved.json.subject).toEqual(breaker.json.subject);

    for (const delivery of receiver.deliveries) expect(delivery.body).not.toContain(key);
    expect(JSON.stringify((await api('GET', '/api/alerts/open')).body)).not.toContain(key);
  });
});
