// Record databases keep their records' field names once (src/store/records.ts). These tests open a data directory
// written the way earlier versions wrote it (every record carrying its own field names) and check that everything in
// it still reads, that new records are written smaller, that nothing iterating or counting a database sees the
// shapes entry, and that it all reads again after a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type Key, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { CacheStore, type CacheEntry } from '../../src/cache/cache-store.js';
import { GovernanceStore, type RequestLogInput } from '../../src/governance/governance-store.js';
import { RECORD_SHAPES_KEY, recordCount } from '../../src/store/records.js';

let dir: string;
let path: string;
const opened: RootDatabase[] = [];

function openRoot(fsync = false): RootDatabase {
  const root = open({ path, maxDbs: 32, compression: false, noSync: !fsync });
  opened.push(root);
  return root;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-shapes-'));
  path = join(dir, 'tollgate.lmdb');
});
afterEach(async () => {
  for (const root of opened.splice(0)) await root.close();
  rmSync(dir, { recursive: true, force: true });
});

function logEntry(n: number, extra: Partial<RequestLogInput> = {}): RequestLogInput {
  return {
    id: `${String(1_700_000_000_000 + n).padStart(15, '0')}-000001`,
    at: new Date(1_700_000_000_000 + n).toISOString(),
    key_id: 'key_1',
    team_id: null,
    model: 'openai/gpt-4o-mini',
    provider: 'openai',
    upstream_model: 'gpt-4o-mini',
    status: 200,
    stream: n % 2 === 0,
    cancelled: false,
    prompt_tokens: 10 + n,
    completion_tokens: 5,
    cost_usd: 0.001 * n,
    priced: true,
    duration_ms: 12,
    ...extra,
  };
}

function cacheEntry(id: number, keyId: string | null = null): CacheEntry {
  return {
    id,
    exactKey: `exact-${id}`,
    semanticScope: '',
    question: `question ${id}`,
    vector: null,
    embedder: null,
    model: 'openai/gpt-4o-mini',
    keyId,
    teamId: null,
    answer: {
      id: `chatcmpl-${id}`,
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: `answer ${id}` }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    } as CacheEntry['answer'],
    provider: 'openai',
    upstreamModel: 'gpt-4o-mini',
    costUsd: 0.001,
    createdAt: 1,
    expiresAt: Date.now() + 60_000,
    usedAt: 1,
    hits: 0,
  };
}

/** Writes log entries as earlier versions did: a database opened without a shapes key. */
async function writeOldStyle(count: number): Promise<void> {
  const root = openRoot();
  const log = root.openDB<unknown, Key>({ name: 'request-log' });
  const byKey = root.openDB<null, [string, string]>({ name: 'request-log-by-key' });
  await root.transaction(() => {
    for (let n = 0; n < count; n++) {
      const entry = { ...logEntry(n, { metadata: { shape: `old-${n % 40}`, [`field${n % 40}`]: String(n) } }) };
      void log.put(entry.id as string, entry);
      void byKey.put(['key_1', entry.id as string], null);
    }
  });
  expect(log.doesExist(RECORD_SHAPES_KEY)).toBe(false);
  await root.close();
  opened.pop();
}

describe('record databases keep their records’ shapes once', () => {
  it('reads a log written without shapes, writes new entries smaller, and reads both after a restart', async () => {
    // 40 distinct metadata shapes: more than the 32 a database shares, so the old records' inline shapes and new ones interleave.
    await writeOldStyle(60);
    let root = openRoot();
    let store = new GovernanceStore(root, new EventBus());
    expect(store.requestLogEntry(logEntry(7).id as string)?.metadata).toEqual({ shape: 'old-7', field7: '7' });
    for (let n = 60; n < 120; n++) await store.recordRequest(logEntry(n, { metadata: { shape: `new-${n % 40}`, [`field${n % 40}`]: String(n) } }));

    const check = (s: GovernanceStore): void => {
      const all = s.requestLog({ limit: 500 });
      expect(all).toHaveLength(120);
      // Newest first, every one whole: the shapes entry is never among them.
      expect(all.map((entry) => entry.prompt_tokens)).toEqual(Array.from({ length: 120 }, (_, i) => 10 + 119 - i));
      for (const entry of all) {
        const n = entry.prompt_tokens - 10;
        expect(entry.metadata).toEqual({ shape: `${n < 60 ? 'old' : 'new'}-${n % 40}`, [`field${n % 40}`]: String(n) });
        expect(entry.stream).toBe(n % 2 === 0);
      }
      expect(s.requestLog({ key_id: 'key_1', limit: 500 })).toHaveLength(120);
    };
    check(store);

    // The same entry is stored in fewer bytes now that its field names are kept once.
    const raw = root.openDB<unknown, Key>({ name: 'request-log' });
    const oldBytes = raw.getBinary(logEntry(1).id as string)?.length ?? 0;
    const newBytes = raw.getBinary(logEntry(61).id as string)?.length ?? 0;
    expect(raw.doesExist(RECORD_SHAPES_KEY)).toBe(true);
    expect(newBytes).toBeGreaterThan(0);
    expect(newBytes).toBeLessThan(oldBytes * 0.7);

    await root.close();
    opened.pop();
    root = openRoot();
    store = new GovernanceStore(root, new EventBus());
    check(store);

    // Retention by size counts records, not the shapes entry: trimming to 100 removes exactly the 20 oldest.
    expect(await store.trimRequestLog({ olderThan: null, maxEntries: 100 })).toBe(20);
    expect(store.requestLog({ limit: 500 })).toHaveLength(100);
    expect(recordCount(root.openDB<unknown, Key>({ name: 'request-log', sharedStructuresKey: RECORD_SHAPES_KEY }))).toBe(100);
  });

  it('keeps keys, their spend and the cache’s entries across a restart, and counts the cache without its shapes entry', async () => {
    let root = openRoot();
    let governance = new GovernanceStore(root, new EventBus());
    const { record } = await governance.createKey({ name: 'shapes', budget: 10, budget_period: 'monthly' });
    for (let i = 0; i < 5; i++) await governance.recordSpend(record.id, null, 0.25);
    let cache = new CacheStore(root);
    for (let i = 0; i < 4; i++) await cache.put(cacheEntry(cache.newId(), record.id));
    expect(cache.count).toBe(4);

    await root.close();
    opened.pop();
    root = openRoot();
    governance = new GovernanceStore(root, new EventBus());
    cache = new CacheStore(root);
    const key = governance.getKeyRecord(record.id);
    expect(key?.name).toBe('shapes');
    expect(key?.requests).toBe(5);
    expect(key?.spend).toBeCloseTo(1.25, 10);
    expect(cache.count).toBe(4);
    expect(JSON.stringify(cache.byExactKey('exact-3')?.answer.choices)).toContain('"content":"answer 3"');
    expect([...cache.ids()]).toEqual([1, 2, 3, 4]);
  });

  it('keeps shapes through asynchronous commits too (TOLLGATE_FSYNC=true)', async () => {
    let root = openRoot(true);
    let store = new GovernanceStore(root, new EventBus());
    const { record } = await store.createKey({ name: 'durable', budget: 5, budget_period: 'monthly' });
    for (let n = 0; n < 30; n++) {
      await Promise.all([store.recordRequest(logEntry(n, { metadata: { turn: String(n) } })), store.recordSpend(record.id, null, 0.01)]);
    }
    await root.close();
    opened.pop();
    root = openRoot(true);
    store = new GovernanceStore(root, new EventBus());
    expect(store.getKeyRecord(record.id)?.requests).toBe(30);
    const all = store.requestLog({ limit: 100 });
    expect(all.map((entry) => entry.metadata?.turn)).toEqual(Array.from({ length: 30 }, (_, i) => String(29 - i)));
    expect(root.openDB<unknown, Key>({ name: 'request-log', sharedStructuresKey: RECORD_SHAPES_KEY }).doesExist(RECORD_SHAPES_KEY)).toBe(true);
  });

  it('clears the cache in order with the writes around it, so what is stored after a clear reads after a restart', async () => {
    let root = openRoot();
    let cache = new CacheStore(root);
    const kept: number[] = [];
    for (let round = 0; round < 5; round++) {
      const before = cache.newId();
      const storing = cache.put(cacheEntry(before));
      // Not awaited in between: an entry queued before the clear goes with it, one queued after it stays.
      const clearing = cache.clear();
      const after = cache.newId();
      kept.push(after);
      await Promise.all([storing, clearing, cache.put(cacheEntry(after))]);
      if (round < 4) kept.pop();
    }
    expect(cache.count).toBe(1);
    await root.close();
    opened.pop();
    root = openRoot();
    cache = new CacheStore(root);
    expect([...cache.ids()]).toEqual(kept);
    expect(cache.count).toBe(1);
    expect(cache.get(kept[0] as number)?.answer.model).toBe('gpt-4o-mini');
  });
});
