import { lastValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import type { ResponseEvent } from '../../src/core/canonical.js';
import { createRequestContext } from '../../src/core/context.js';
import type { GatewayEvents } from '../../src/core/events.js';
import type { VirtualKeyRecord } from '../../src/core/identity.js';
import type { Stage } from '../../src/core/stage.js';
import { SlidingWindowLimiter } from '../../src/governance/rate-limiter.js';
import rateLimit from '../../src/stages/rate-limit.js';
import { BUS, LIMITER, ServiceRegistry } from '../../src/services.js';

const config = resolveRuntimeConfig({ api: {}, file: {} }, {}, 1);

const ANSWER: ResponseEvent = {
  kind: 'completion',
  completion: { id: 'c', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] },
};

function keyWithLimit(rate_limit: number): VirtualKeyRecord {
  return { id: 'k1', name: 'one-a-minute', rate_limit, models: [], team: null } as unknown as VirtualKeyRecord;
}

async function send(stage: Stage, key: VirtualKeyRecord): Promise<void> {
  const ctx = createRequestContext({ dialect: 'openai', config, request: { model: 'chat', messages: [{ role: 'user', content: 'hi' }] } });
  ctx.identity = { key, team: null } as unknown as NonNullable<typeof ctx.identity>;
  await lastValueFrom(stage.run(ctx, () => of(ANSWER)).pipe(toArray()));
}

describe('the rate-limit stage names the scope that refused', () => {
  it("a key's own limit, not its key+model window, even when the clock ticks between windows", async () => {
    // A clock that moves a millisecond every time it is read during the first request (windows taken one after
    // another would then differ), and stands still for the second.
    let clock = 1_000_000;
    let ticking = true;
    const limiter = new SlidingWindowLimiter(60_000, () => (ticking ? clock++ : clock));
    const bus = new EventBus();
    const refusals: GatewayEvents['ratelimit.exceeded'][] = [];
    bus.on('ratelimit.exceeded', (event: GatewayEvents['ratelimit.exceeded']) => refusals.push(event));
    const stage = rateLimit.create({}, config, new ServiceRegistry().set(BUS, bus).set(LIMITER, limiter).scoped('rate-limit', [BUS, LIMITER])) as Stage;
    const key = keyWithLimit(1);

    await send(stage, key);
    ticking = false;
    await expect(send(stage, key)).rejects.toMatchObject({ status: 429 });
    expect(refusals.map((event) => [event.scope, event.unit, event.limit])).toEqual([['key', 'requests', 1]]);
  });
});
