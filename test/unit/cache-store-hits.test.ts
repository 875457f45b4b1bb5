import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { CacheStore, type CacheEntry } from '../../src/cache/cache-store.js';

/**
 * A hit is recorded for eviction (least recently used first) without the entry's record being read or written
 * again: a long answer's record is megabytes, and each hit used to decode and re-encode it.
 */
const dir = mkdtempSync(join(tmpdir(), 'tollgate-cache-hits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let store: Store;
let cache: CacheStore;
let n = 0;
beforeEach(async () => {
  store = await Store.open(join(dir, String(++n)), 'test');
  cache = new CacheStore(store.root);
});
afterEach(async () => {
  await store.close();
});

function entry(key: string, usedAt: number, content = 'answer'): CacheEntry {
  return {
    id: cache.newId(),
    exactKey: key,
    semanticScope: 's',
    question: 'q',
    model: 'm',
    keyId: null,
    teamId: null,
    vector: null,
    embedder: null,
    answer: { id: 'x', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] },
    provider: 'p',
    upstreamModel: 'm',
    costUsd: 0,
    createdAt: usedAt,
    expiresAt: Date.now() + 60_000,
    usedAt,
    hits: 0,
  } as CacheEntry;
}

describe('a cache hit', () => {
  it('moves the entry to the back of the eviction order, and a removal takes its row along', async () => {
    const a = entry('a', 1);
    const b = entry('b', 2);
    const c = entry('c', 3);
    for (const stored of [a, b, c]) await cache.put(stored);
    expect(cache.leastRecentlyUsed(3)).toEqual([a.id, b.id, c.id]);
    cache.touch(a, 10);
    await cache.touchesSettled();
    expect(cache.leastRecentlyUsed(3)).toEqual([b.id, c.id, a.id]);
    // Touched again from the record the lookup read (its usedAt is still the stored one): the row of the first hit goes.
    cache.touch(a, 20);
    cache.touch(b, 15);
    await cache.touchesSettled();
    expect(cache.leastRecentlyUsed(5)).toEqual([c.id, b.id, a.id]);
    await cache.remove([a.id, c.id]);
    expect(cache.leastRecentlyUsed(5)).toEqual([b.id]);
    await cache.clear();
    expect(cache.leastRecentlyUsed(5)).toEqual([]);
  });

  it('leaves a long answer’s record as it was stored', async () => {
    const long = entry('long', 1, 'x'.repeat(4 << 20));
    await cache.put(long);
    for (let at = 2; at < 6; at++) cache.touch(long, at);
    await cache.touchesSettled();
    // The record still says what was stored; the hits live beside it.
    expect(cache.get(long.id)).toMatchObject({ usedAt: 1, hits: 0 });
    expect(cache.leastRecentlyUsed(2)).toEqual([long.id]);
  });

  it('of an entry deleted since its lookup records nothing', async () => {
    const gone = entry('gone', 1);
    const kept = entry('kept', 2);
    await cache.put(gone);
    await cache.put(kept);
    await cache.remove([gone.id]);
    cache.touch(gone, 9);
    await cache.touchesSettled();
    expect(cache.leastRecentlyUsed(5)).toEqual([kept.id]);
  });
});
