import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbedderBusy, EmbedderUnavailable } from '../../src/cache/embedding/embedder.js';
import { createUseLiteEmbedder, createWorkerEmbedder, type WorkerEmbedder } from '../../src/cache/embedding/use-lite.js';
import { maxLoopHold } from '../helpers/own-time.js';

function dot(x: Float32Array, y: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * y[i]!;
  return sum;
}

/** A stand-in worker speaking the embedder protocol: 2-dim vectors, exits on "exit", throws on "throw". */
const SCRIPTED_WORKER = new URL(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { parentPort } from 'node:worker_threads';
      parentPort.postMessage({ type: 'ready' });
      parentPort.on('message', ({ id, texts }) => {
        if (texts.includes('exit')) process.exit(3);
        if (texts.includes('throw')) throw new Error('scripted failure');
        parentPort.postMessage({ type: 'embedded', id, vectors: texts.map(() => new Float32Array([1, 0])) });
      });
    `),
);

describe('USE lite embedder (real model, in a worker thread)', () => {
  let embedder: WorkerEmbedder;

  beforeAll(async () => {
    embedder = createUseLiteEmbedder();
    await embedder.ready();
  });
  afterAll(() => embedder.close());

  it('embeds texts into 512-dim unit vectors', async () => {
    const vectors = await embedder.embed(['What is the capital of France?', '']);
    expect(embedder.dimensions).toBe(512);
    expect(vectors).toHaveLength(2);
    for (const vector of vectors) {
      expect(vector).toBeInstanceOf(Float32Array);
      expect(vector).toHaveLength(512);
      expect(Math.sqrt(dot(vector, vector))).toBeCloseTo(1, 5);
    }
  });

  it('puts a paraphrase closer than an unrelated question', async () => {
    const [question, paraphrase, unrelated] = await embedder.embed([
      'What is the capital of France?',
      "Tell me France's capital city",
      'How do I sort an array in JavaScript?',
    ]);
    expect(dot(question!, paraphrase!)).toBeGreaterThan(0.7);
    expect(dot(question!, paraphrase!)).toBeGreaterThan(dot(question!, unrelated!) + 0.3);
  });

  it('embeds a batch of 20 texts, each to its own vector, whether sent at once or as 20 calls', async () => {
    const texts = Array.from({ length: 20 }, (_, i) => `Question number ${i}: how do I configure service ${i}?`);
    const together = await embedder.embed(texts);
    const apart = await Promise.all(texts.map(async (text) => (await embedder.embed([text]))[0]!));
    expect(together).toHaveLength(20);
    together.forEach((vector, i) => expect(dot(vector, apart[i]!)).toBeCloseTo(1, 4));
  });

  it('does not block the event loop while embedding', async () => {
    const texts = Array.from({ length: 96 }, (_, i) => `A longer sentence number ${i} about caching answers from language models.`);
    // Gaps on this thread's own clock: on a busy machine the worker, a neighbour and this thread share the cores,
    // and a gap the scheduler made is not the embedder holding the loop.
    const started = performance.now();
    const { holdMs } = await maxLoopHold(() => embedder.embed(texts));
    expect(performance.now() - started).toBeGreaterThan(20); // it did real work meanwhile
    expect(holdMs).toBeLessThan(40);
  });
});

describe('worker embedder queue and lifecycle', () => {
  it('rejects at once with EmbedderBusy when the queue is full', async () => {
    const embedder = createUseLiteEmbedder({ maxQueue: 2, maxBatch: 1 });
    try {
      // The model is still loading, so these wait in the queue.
      const waiting = embedder.embed(['one', 'two']);
      await expect(embedder.embed(['three'])).rejects.toBeInstanceOf(EmbedderBusy);
      await expect(waiting).resolves.toHaveLength(2);
      await expect(embedder.embed(['three'])).resolves.toHaveLength(1);
    } finally {
      await embedder.close();
    }
  });

  it('rejects pending calls when the worker crashes, and starts a new worker on the next call', async () => {
    const embedder = createWorkerEmbedder({ id: 'scripted', dimensions: 2, workerUrl: SCRIPTED_WORKER });
    try {
      await expect(embedder.embed(['fine'])).resolves.toHaveLength(1);
      await expect(embedder.embed(['exit'])).rejects.toThrow(/scripted: the embedding worker stopped \(exit code 3\)/);
      await expect(embedder.embed(['fine again'])).resolves.toHaveLength(1);
      const error = await embedder.embed(['throw']).catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(EmbedderUnavailable);
      expect((error as Error).message).toMatch(/scripted failure/);
      await expect(embedder.ready()).resolves.toBeUndefined();
    } finally {
      await embedder.close();
    }
  });

  it('close() rejects what is pending, terminates the worker, and refuses later calls', async () => {
    const embedder = createUseLiteEmbedder();
    const pending = embedder.embed(['still loading']).catch((reason: unknown) => reason);
    await embedder.close();
    expect(await pending).toBeInstanceOf(EmbedderUnavailable);
    await expect(embedder.embed(['after close'])).rejects.toThrow(/closed/);
    await expect(embedder.ready()).rejects.toBeInstanceOf(EmbedderUnavailable);
  });
});
