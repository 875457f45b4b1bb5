// Fills a data directory's response cache the way a long-running gateway leaves it: `entries` answers with USE-lite
// sized vectors in LMDB and the semantic index saved beside the store, as bench/startup.ts and the start-up test
// need it. The index is built with a small efConstruction: its graph quality does not matter for loading it, and a
// default-quality build of 100,000 vectors takes about 90 s of CPU.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { semanticIndexPath } from '../src/cache/cache-service.js';
import { CacheStore, type CacheEntry } from '../src/cache/cache-store.js';
import { USE_LITE_DIMENSIONS, USE_LITE_ID } from '../src/cache/embedding/use-lite.js';
import { VectorIndex } from '../src/cache/vector-index.js';
import { Store } from '../src/store/store.js';
import { VERSION } from '../src/version.js';
import { normalise, randomSource } from './synthetic-vectors.js';

const BATCH = 5_000;

export async function fillCache(dataDir: string, entries: number, options: { efConstruction?: number } = {}): Promise<void> {
  const store = await Store.open(dataDir, VERSION);
  try {
    const cache = new CacheStore(store.root);
    const index = new VectorIndex(USE_LITE_DIMENSIONS, { initialCapacity: Math.max(1024, entries), efConstruction: options.efConstruction ?? 16 });
    const { gaussian } = randomSource(7);
    const now = Date.now();
    for (let done = 0; done < entries; done += BATCH) {
      const puts: Promise<unknown>[] = [];
      for (let i = done; i < Math.min(entries, done + BATCH); i++) {
        const vector = normalise(Float32Array.from({ length: USE_LITE_DIMENSIONS }, gaussian));
        const entry: CacheEntry = {
          id: cache.newId(),
          exactKey: `bench-exact-${i}`,
          semanticScope: 'bench',
          question: `bench question ${i}`,
          vector: new Uint8Array(vector.buffer.slice(0)),
          embedder: USE_LITE_ID,
          model: 'openai/gpt-4o-mini',
          keyId: null,
          teamId: null,
          answer: { id: `chatcmpl-${i}`, object: 'chat.completion', created: Math.floor(now / 1000), model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: `answer ${i}` }, finish_reason: 'stop' }] } as CacheEntry['answer'],
          provider: 'openai',
          upstreamModel: 'gpt-4o-mini',
          costUsd: 0.0001,
          createdAt: now,
          expiresAt: now + 30 * 86_400_000,
          usedAt: now,
          hits: 0,
        };
        puts.push(cache.put(entry));
        index.add(entry.id, vector);
      }
      await Promise.all(puts);
    }
    mkdirSync(resolve(store.path, 'cache'), { recursive: true });
    await index.save(semanticIndexPath(resolve(store.path, 'cache'), USE_LITE_ID));
  } finally {
    await store.close();
  }
}
