import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
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
