import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A breaker_opened rule whose `providers` is narrowed while one of its alerts is open: the README says the alert on
// a subject the rule no longer watches is resolved, through the channel it fired on, as for window rules. It stayed
// open until that breaker closed (for good, once the operator took the provider out of the config).

const hi = [{ role: 'user' as const, content: 'hi' }];

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  tg = await startGateway({
    providers: {
      openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
      backup: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
    },
    // A long breaker cool-down: the breaker stays open for the whole test, so only the rule change can resolve.
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 600_000 } } },
    alerts: {
      channels: { pager: { type: 'webhook', url: receiver.url } },
      rules: [{ name: 'breaker', kind: 'breaker_opened', severity: 'critical', providers: ['openai', 'backup'], cooldown_ms: 0 }],
    },
  });
  admin = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

describe('a breaker alert on a provider its rule stops watching', () => {
  it('is resolved through the channel it fired on, with the same id, while the breaker is still open', async () => {
    upstream.setMode({ kind: 'error', status: 500 });
    for (let i = 0; i < 2; i++) await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).catch(() => undefined);
    upstream.reset();
    const firing = await until('the breaker alert', () => receiver.deliveries.find((d) => d.json.rule === 'breaker' && d.json.status === 'firing'));
    expect(firing.json.subject).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini' });

    const narrowed = await admin.put('/api/alerts/rules/breaker', { kind: 'breaker_opened', severity: 'critical', providers: ['backup'], cooldown_ms: 0 });
    expect(narrowed.status).toBe(200);

    // Rules are evaluated once a second.
    const resolved = await until('the resolved notification', () => receiver.deliveries.find((d) => d.json.status === 'resolved'), 4_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, rule: 'breaker', event: 'breaker.closed', severity: 'critical', subject: firing.json.subject, details: { watched: false } });
    expect((await admin.get('/api/alerts/open')).body.data).toEqual([]);
    // The breaker itself is still open: the next request to the model is refused without reaching the upstream.
    const refused = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }).catch((err: unknown) => err);
    expect(refused).toMatchObject({ status: 503 });
  });
});
