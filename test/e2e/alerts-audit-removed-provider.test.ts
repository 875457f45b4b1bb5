import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A provider whose breaker is open, taken out of the config: nothing calls it any more, so its breaker never closed
// and the alert about it stayed open (its incident too) until the gateway restarted. Now the breaker is forgotten
// with the provider and reported closed, and the alert resolves.

const hi = [{ role: 'user' as const, content: 'hi' }];

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    // A long cool-down: only the provider's removal can close the breaker within the test.
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 600_000 } } },
    alerts: {
      channels: { pager: { type: 'webhook', url: receiver.url } },
      rules: [{ name: 'breaker', kind: 'breaker_opened', severity: 'critical', cooldown_ms: 0 }],
    },
  });
  admin = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

describe('a provider with an open breaker, removed from the config', () => {
  it('has its breaker alert resolved, and starts afresh when put back', async () => {
    const added = await admin.put('/api/providers/spare', { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' });
    expect(added.status).toBeLessThan(300);
    upstream.setMode({ kind: 'error', status: 500 });
    for (let i = 0; i < 2; i++) await tg.client.chat.completions.create({ model: 'spare/gpt-4o-mini', messages: hi }).catch(() => undefined);
    upstream.reset();
    const firing = await until('the breaker alert', () => receiver.deliveries.find((d) => d.json.rule === 'breaker' && d.json.status === 'firing'));
    expect(firing.json.subject).toMatchObject({ provider: 'spare', model: 'gpt-4o-mini' });
    // Open: the next request is refused without reaching the upstream.
    expect(await tg.client.chat.completions.create({ model: 'spare/gpt-4o-mini', messages: hi }).catch((err: unknown) => err)).toMatchObject({ status: 503 });

    expect((await admin.delete('/api/providers/spare')).status).toBeLessThan(300);
    const resolved = await until('the resolved notification', () => receiver.deliveries.find((d) => d.json.status === 'resolved'), 4_000);
    expect(resolved.json).toMatchObject({ id: firing.json.id, rule: 'breaker', event: 'breaker.closed', subject: firing.json.subject });
    expect((await admin.get('/api/alerts/open')).body.data).toEqual([]);

    // Put back, it is called again at once (no breaker left over from before).
    expect((await admin.put('/api/providers/spare', { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' })).status).toBeLessThan(300);
    const answer = await tg.client.chat.completions.create({ model: 'spare/gpt-4o-mini', messages: hi });
    expect(answer.choices[0]?.message.role).toBe('assistant');
  });
});
