// Builds the semantic cache's HNSW index from the vectors LMDB holds, in a worker thread: adding a vector costs
// about a millisecond of CPU at 100,000 entries, so a rebuild on the main thread would stall requests for minutes.
// It reads the cache's entries itself (lmdb-js lets threads of one process share an environment), builds with the
// same VectorIndex class the gateway uses, saves it (index file and checked sidecar) and reports back.
//
// workerData: { lmdbPath, dimensions, embedder, outPath }
// reply: { ok: true, vectors, upTo } (upTo: the highest entry id seen) or { ok: false, error }
import { parentPort, workerData } from 'node:worker_threads';
import { open } from 'lmdb';

/** The VectorIndex module: compiled beside this file, or the TypeScript source through tsx when running from source. */
async function vectorIndexModule() {
  try {
    return await import('./vector-index.js');
  } catch {
    const { register } = await import('tsx/esm/api');
    register();
    return await import('./vector-index.ts');
  }
}

/**
 * Every entry in id order, stepping over a record that cannot be read (damaged; its id pushed to `unreadable`, for the
 * gateway to remove: this thread's store is read-only), as CacheStore.all does: one bad record must not leave the
 * semantic tier without an index.
 */
function* readableEntries(entries, unreadable) {
  let start;
  for (;;) {
    try {
      for (const entry of entries.getRange(start === undefined ? {} : { start })) {
        start = entry.key + 1;
        yield entry;
      }
      return;
    } catch (err) {
      let bad;
      for (const key of entries.getKeys(start === undefined ? { limit: 1 } : { start, limit: 1 })) bad = key;
      if (bad === undefined) throw err;
      unreadable.push(bad);
      start = bad + 1;
    }
  }
}

async function build() {
  const { VectorIndex } = await vectorIndexModule();
  const { lmdbPath, dimensions, embedder, outPath } = workerData;
  // Not closed here: the environment is shared with the gateway's thread, and closing it from this one while the
  // other writes is not safe; lmdb-js releases this thread's handle when the worker exits.
  const root = open({ path: lmdbPath, maxDbs: 32, compression: false, readOnly: true });
  {
    // The shapes key the gateway opens it with (src/store/records.ts): its entries keep their field names there.
    const entries = root.openDB({ name: 'cache-entries', sharedStructuresKey: Symbol.for('structures') });
    const index = new VectorIndex(dimensions, { initialCapacity: Math.max(1024, entries.getCount()) });
    let upTo = 0;
    const unreadable = [];
    for (const { key, value } of readableEntries(entries, unreadable)) {
      upTo = Math.max(upTo, key);
      if (!value.vector || value.embedder !== embedder) continue;
      const bytes = new Uint8Array(value.vector);
      const vector = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
      if (vector.length === dimensions) index.add(key, vector);
    }
    for (const key of unreadable) upTo = Math.max(upTo, key);
    await index.save(outPath);
    return { ok: true, vectors: index.size, upTo, unreadable };
  }
}

build().then(
  (result) => parentPort.postMessage(result),
  (err) => parentPort.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) }),
);
