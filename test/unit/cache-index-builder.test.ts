import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { CacheStore } from '../../src/cache/cache-store.js';
import { buildIndexInWorker } from '../../src/cache/index-builder.js';
import { VectorIndex } from '../../src/cache/vector-index.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-index-builder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function unit(seed: number): Float32Array {
  const v = new Float32Array(16).map((_, i) => Math.sin(seed * 7 + i));
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

describe('the index builder worker', () => {
  it('builds the index of the vectors of one embedder from the live store, without blocking this thread', async () => {
    const store = await Store.open(dir, 'test');
    try {
      const cache = new CacheStore(store.root);
      const base = { semanticScope: 's', question: 'q', model: 'm', keyId: null, teamId: null, answer: { id: 'x', object: 'chat.completion' as const, model: 'm', choices: [] }, provider: 'p', upstreamModel: 'm', costUsd: 0, createdAt: 0, expiresAt: Date.now() + 60_000, usedAt: 0, hits: 0 };
      for (let id = 1; id <= 30; id++) {
        const vector = unit(id);
        await cache.put({ ...base, id: cache.newId(), exactKey: `k${id}`, vector: new Uint8Array(vector.buffer), embedder: id <= 25 ? 'e1' : 'e2' });
      }
      const outPath = join(dir, 'built.hnsw');
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 1);
      const built = await buildIndexInWorker({ lmdbPath: resolve(dir, 'tollgate.lmdb'), dimensions: 16, embedder: 'e1', outPath });
      clearInterval(ticker);
      expect(built).toEqual({ vectors: 25, upTo: 30, unreadable: [] });
      expect(ticks).toBeGreaterThan(0);
      const index = await VectorIndex.load(outPath, 16);
      expect(index.size).toBe(25);
      expect(index.search(unit(7), 1)[0]?.label).toBe(7);
      expect(index.has(26)).toBe(false);
    } finally {
      await store.close();
    }
  });
});
