import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A latency rule fires when the p95 "stays over threshold_ms for for_ms". A breach that began, then ended because no
// answered request was left in the window (the README: an empty window resolves, it is not "over"), must start over:
// its start was kept when the provider left the windows, so one slow answer after a quiet spell fired at once, timed
// from a breach long over, though the p95 had never stayed over for for_ms.

const hi = [{ role: 'user' as const, content: 'hi' }];
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    alerts: {
      channels: { ops: { type: 'webhook', url: receiver.url } },
      rules: [{ name: 'slow', kind: 'latency_p95', threshold_ms: 100, window_ms: 2_000, for_ms: 4_000, min_requests: 1, cooldown_ms: 0 }],
    },
  });
  upstream.setMode({ kind: 'slow-headers', delayMs: 250 });
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

const slowAnswer = () => tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });

describe('a latency breach that ended with its window emptying', () => {
  it('starts over: one slow answer after a quiet spell longer than for_ms does not fire at once', async () => {
    await slowAnswer();
    // The breach is seen (rules are evaluated once a second), then the 2 s window empties: nothing left to be slow.
    await sleep(5_000);
    expect(tg.gateway.alerts.open()).toEqual([]);
    await slowAnswer();
    // Fired at once on the breach from 5 s ago before the fix; now the breach starts here, and the window empties
    // again before for_ms (4 s) has passed.
    await sleep(3_500);
    expect(receiver.deliveries.filter((d) => d.json.rule === 'slow')).toEqual([]);
    expect(tg.gateway.alerts.open()).toEqual([]);
  });

  it('still fires when the p95 does stay over for for_ms', async () => {
    await until('no open alert', () => tg.gateway.alerts.open().length === 0, 5_000);
    receiver.deliveries.length = 0;
    const end = Date.now() + 6_000;
    const firing = (async () => {
      while (Date.now() < end && !receiver.deliveries.some((d) => d.json.rule === 'slow')) {
        await slowAnswer();
        await sleep(300);
      }
    })();
    const fired = await until('the latency alert', () => receiver.deliveries.find((d) => d.json.rule === 'slow'), 8_000);
    await firing;
    expect(fired.json).toMatchObject({ status: 'firing', subject: { provider: 'openai' }, details: { thresholdMs: 100, forMs: 4_000 } });
  });
});
