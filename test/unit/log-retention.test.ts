import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { GovernanceStore, type RequestLogInput } from '../../src/governance/governance-store.js';
import { startLogSweeper } from '../../src/governance/log-retention.js';
import { createLog } from '../../src/log.js';

const DAY = 24 * 60 * 60_000;
const NOW = Date.parse('2025-06-30T12:00:00.000Z');

let dir: string;
let root: RootDatabase;
let clock: number;
let store: GovernanceStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-retention-'));
  root = open({ path: join(dir, 'test.lmdb'), maxDbs: 16, compression: false });
  clock = NOW;
  store = new GovernanceStore(root, new EventBus(), () => new Date(clock));
});
afterEach(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

function entry(keyId: string | null, cost: number): RequestLogInput {
  return {
    at: new Date(clock).toISOString(),
    key_id: keyId,
    team_id: null,
    model: 'openai/gpt-4o-mini',
    provider: 'openai',
    upstream_model: 'gpt-4o-mini',
    status: 200,
    stream: false,
    cancelled: false,
    prompt_tokens: 10,
    completion_tokens: 5,
    cost_usd: cost,
    priced: true,
    duration_ms: 12,
  };
}

/** Records one entry per age (days before NOW), for the key when given. */
async function recordAt(ages: number[], keyId: string | null, cost = 0.5): Promise<void> {
  for (const age of ages) {
    clock = NOW - age * DAY;
    if (keyId) await store.recordSpend(keyId, null, cost);
    await store.recordRequest(entry(keyId, cost));
  }
  clock = NOW;
}

const ageOf = (at: string): number => Math.round((NOW - Date.parse(at)) / DAY);

describe('request-log retention', () => {
  it('deletes entries older than the retention, keeps recent ones, and leaves spend alone', async () => {
    const { record: key } = await store.createKey({ name: 'k', budget: 100, budget_period: 'total' });
    await recordAt([45, 40, 31, 29, 10, 0], key.id);
    await recordAt([60, 1], null);
    const spendBefore = store.getKey(key.id);
    expect(spendBefore.total_requests).toBe(6);

    const deleted = await store.trimRequestLog({ olderThan: new Date(NOW - 30 * DAY), maxEntries: null, batch: 2 });
    expect(deleted).toBe(4);
    expect(store.requestLog({ limit: 100 }).map((e) => ageOf(e.at))).toEqual([0, 1, 10, 29]);
    // The per-key index holds no row for a deleted entry either.
    expect(store.requestLog({ key_id: key.id, limit: 100 }).map((e) => ageOf(e.at))).toEqual([0, 10, 29]);

    const spendAfter = store.getKey(key.id);
    expect(spendAfter.total_spend).toBe(spendBefore.total_spend);
    expect(spendAfter.total_requests).toBe(6);
    expect(spendAfter.spend).toBe(spendBefore.spend);
    expect(spendAfter.spend).toBe(3);

    // Nothing left to delete: a second sweep is a no-op.
    expect(await store.trimRequestLog({ olderThan: new Date(NOW - 30 * DAY), maxEntries: null })).toBe(0);
  });

  it('keeps at most max_entries, deleting the oldest', async () => {
    await recordAt([5, 4, 3, 2, 1], null);
    expect(await store.trimRequestLog({ olderThan: null, maxEntries: 2, batch: 1 })).toBe(3);
    expect(store.requestLog().map((e) => ageOf(e.at))).toEqual([1, 2]);
    expect(await store.trimRequestLog({ olderThan: null, maxEntries: 2 })).toBe(0);
  });

  it('deletes a large backlog in batches, letting other work run between them', async () => {
    clock = NOW - 100 * DAY;
    await Promise.all(Array.from({ length: 3_000 }, () => store.recordRequest(entry(null, 0))));
    clock = NOW;
    await store.recordRequest(entry(null, 0));
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      const deleted = await store.trimRequestLog({ olderThan: new Date(NOW - DAY), maxEntries: null, batch: 500 });
      expect(deleted).toBe(3_000);
    } finally {
      clearInterval(ticker);
    }
    // Six batches with a yield between each: timers got their turns while the trim ran.
    expect(turns).toBeGreaterThan(0);
    expect(store.requestLog({ limit: 10 })).toHaveLength(1);
  });

  it('the sweeper reads the retention at each sweep and stops cleanly', async () => {
    await recordAt([20, 8, 2], null);
    let retention = { days: 30, maxEntries: null as number | null, maxBytes: null as number | null };
    const sweeper = startLogSweeper(store, () => retention, createLog('silent'), 60_000, () => NOW);
    try {
      expect(await sweeper.sweep()).toBe(0);
      retention = { days: 7, maxEntries: null, maxBytes: null };
      expect(await sweeper.sweep()).toBe(2);
      expect(store.requestLog().map((e) => ageOf(e.at))).toEqual([2]);
    } finally {
      await sweeper.stop();
    }
    expect(await sweeper.sweep()).toBe(0);
  });

  it('by size: deletes the oldest entries until the log and its indexes fit, whatever their bodies weigh, and leaves spend alone', async () => {
    // Entries with kept bodies of 20 KB (log_bodies on): 100 of them are 2 MB, a count limit would not bound that.
    const { record: key } = await store.createKey({ name: 'k', budget: 100, budget_period: 'total' });
    for (let i = 0; i < 100; i++) {
      clock = NOW - (100 - i) * 60_000;
      await store.recordSpend(key.id, null, 0.01);
      await store.recordRequest({ ...entry(key.id, 0.01), request_body: `${i} ${'b'.repeat(20_000)}` });
    }
    clock = NOW;
    const before = store.requestLogBytes();
    expect(before).toBeGreaterThan(2_000_000);
    const spend = store.getKey(key.id).total_spend;
    const deleted = await store.trimRequestLog({ olderThan: null, maxEntries: null, maxBytes: 1_000_000 });
    expect(deleted).toBeGreaterThan(40);
    expect(store.requestLogBytes()).toBeLessThanOrEqual(1_000_000);
    // The newest are kept, in order, none in between lost.
    const kept = store.requestLog({ limit: 200 }).map((e) => Number(e.request_body?.split(' ')[0]));
    expect(kept).toEqual(Array.from({ length: 100 - deleted }, (_, i) => 99 - i));
    expect(store.getKey(key.id).total_spend).toBe(spend);
    // Within the limit: nothing more goes.
    expect(await store.trimRequestLog({ olderThan: null, maxEntries: null, maxBytes: 1_000_000 })).toBe(0);
  });
});
