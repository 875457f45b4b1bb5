import { Worker } from 'node:worker_threads';

export interface BuiltIndex {
  /** Vectors in the built index. */
  vectors: number;
  /** The highest entry id the builder saw: entries stored after it are added by the caller. */
  upTo: number;
  /** Ids of the records the builder could not read (damaged), stepped over: the caller removes them. */
  unreadable: number[];
}

/**
 * Builds the semantic index file from LMDB in a worker thread (see index-builder-worker.mjs), so a rebuild of
 * 100,000 vectors (about a minute and a half of CPU) never blocks the event loop; the caller loads the file after.
 */
export function buildIndexInWorker(options: { lmdbPath: string; dimensions: number; embedder: string; outPath: string }): Promise<BuiltIndex> {
  return new Promise((resolve, reject) => {
    // The worker needs none of the parent's Node flags (a test runner's, --input-type) to run plain JavaScript.
    const worker = new Worker(new URL('./index-builder-worker.mjs', import.meta.url), { workerData: options, execArgv: [] });
    let settled = false;
    worker.once('message', (reply: { ok: true; vectors: number; upTo: number; unreadable: number[] } | { ok: false; error: string }) => {
      settled = true;
      if (reply.ok) resolve({ vectors: reply.vectors, upTo: reply.upTo, unreadable: reply.unreadable });
      else reject(new Error(`index builder: ${reply.error}`));
      void worker.terminate();
    });
    worker.once('error', (err) => {
      if (!settled) reject(err);
      settled = true;
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`index builder exited with code ${code} before answering`));
      settled = true;
    });
  });
}
