import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { newRequestId } from '../../src/core/request-id.js';
import { GovernanceStore } from '../../src/governance/governance-store.js';
import { MAX_SCANNED_PER_PAGE } from '../../src/governance/request-log-query.js';
import type { RequestLogEntry } from '../../src/governance/types.js';

let dir: string;
let root: RootDatabase;
let store: GovernanceStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-errindex-'));
  // As the gateway opens it (no fsync: the request path commits synchronously).
  root = open({ path: join(dir, 'db.lmdb'), maxDbs: 32, noSync: true });
  store = new GovernanceStore(root, new EventBus());
});
afterEach(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

function entry(at: number, status: number, message?: string): RequestLogEntry {
  return {
    id: newRequestId(at),
    at: new Date(at).toISOString(),
    key_id: null,
    team_id: null,
    model: 'm',
    provider: 'p',
    upstream_model: 'm',
    status,
    stream: false,
    cancelled: false,
    prompt_tokens: 1,
    completion_tokens: 1,
    cost_usd: 0,
    priced: true,
    duration_ms: 1,
    ...(message ? { error_type: 'api_error', error_code: 'x', error_message: message } : {}),
  };
}

describe('the request log error index', () => {
  it('finds failed requests by status class, exact status and message text, newest first', async () => {
    const t = Date.now() - 10_000;
    await store.recordRequest(entry(t, 200));
    await store.recordRequest(entry(t + 1, 502, 'Upstream Broke Down'));
    await store.recordRequest(entry(t + 2, 429, 'Rate limit reached'));
    await store.recordRequest(entry(t + 3, 200));
    await store.recordRequest(entry(t + 4, 500, 'upstream broke again'));
    expect(store.requestLog({ status_class: 5 }).map((e) => e.status)).toEqual([500, 502]);
    expect(store.requestLog({ status: 429 }).map((e) => e.error_message)).toEqual(['Rate limit reached']);
    expect(store.requestLog({ q: 'BROKE' }).map((e) => e.status)).toEqual([500, 502]);
    expect(store.requestLog({ q: 'broke', status: 502 }).map((e) => e.status)).toEqual([502]);
    expect(store.requestLog({ status_class: 2 })).toHaveLength(2);
  });

  it('is built for entries written before it existed, and trimmed with the log', async () => {
    const t = Date.now() - 10_000;
    // Written straight into the log, as an earlier version did (no index rows).
    const log = root.openDB<RequestLogEntry, string>({ name: 'request-log' });
    for (let i = 0; i < 12_000; i++) await log.put(newRequestId(t + i), entry(t, i % 1000 === 0 ? 503 : 200, i % 1000 === 0 ? `old failure ${i}` : undefined));
    expect(store.requestLog({ status: 503 })).toEqual([]);
    expect(await store.backfillErrorIndex()).toBe(12);
    expect(store.requestLog({ status: 503, limit: 100 })).toHaveLength(12);
    expect(store.requestLog({ q: 'old failure 11000' })).toHaveLength(1);
    // A second run finds the marker and does nothing.
    expect(await store.backfillErrorIndex()).toBe(0);
    await store.trimRequestLog({ olderThan: new Date(Date.now() + 1_000), maxEntries: null });
    expect(store.requestLog({ status: 503 })).toEqual([]);
    const errors = root.openDB<string, string>({ name: 'request-log-errors' });
    expect([...errors.getKeys()]).toEqual(['\uffff']);
  });

  it('a rare filter reads at most one page budget of index rows and answers with a cursor', async () => {
    const t = Date.now() - 100_000;
    // Handed over together, as the log subscriber hands them: they commit in batches, not one commit each.
    await Promise.all(Array.from({ length: MAX_SCANNED_PER_PAGE + 10 }, (_, i) => store.recordRequest(entry(t + i, 500, 'common'))));
    const page = store.requestLogPage({ q: 'nowhere' });
    expect(page.data).toEqual([]);
    expect(page.next_before).not.toBeNull();
    const next = store.requestLogPage({ q: 'nowhere', before: page.next_before as string });
    expect(next).toEqual({ data: [], next_before: null });
  });
});
