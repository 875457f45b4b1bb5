/**
 * Runs an ONNX sentence-embedding model from a local models folder (all-MiniLM-L6-v2, bge-small, ...) with
 * @xenova/transformers in a worker thread, so that tokenizing and inference never block the gateway's event loop.
 *
 * Plain JavaScript on purpose, like use-lite-worker.mjs: it loads the same way under tsx, vitest and a plain-node build.
 *
 * Protocol (see use-lite-worker.mjs and use-lite.ts): posts `{ type: 'ready' }` or `{ type: 'load-failed', message }`
 * once the model has loaded; answers each `{ type: 'embed', id, texts }` with `{ type: 'embedded', id, vectors }`
 * (unit-length Float32Arrays, buffers transferred) or `{ type: 'embed-failed', id, message }`.
 *
 * The model runs on onnxruntime-web (WebAssembly, one thread), not onnxruntime-node, although transformers.js picks
 * the native one under Node: the native addon (1.14) is not context-aware, so it loads in only one thread per process,
 * ever. A second embedder, or the fresh worker that replaces a crashed or closed one, would fail with "Module did not
 * self-register". One WebAssembly thread also leaves the gateway's other core free, as the USE lite worker does.
 *
 * Settings `{ modelsDir, model, quantized, dimensions }` arrive either as `workerData.onnxEmbedder`, or, because
 * createWorkerEmbedder cannot pass workerData yet, through `startOnnxEmbeddingWorker(settings)` called by the tiny
 * bootstrap module onnx.ts starts the worker with.
 */
import { register } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

if (!parentPort) throw new Error('onnx-worker.mjs must run in a worker thread');
const parent = parentPort;

let started = false;

export function startOnnxEmbeddingWorker(settings) {
  if (started) return;
  started = true;
  const loading = loadModel(settings);
  loading.then(
    () => parent.postMessage({ type: 'ready' }),
    (error) => parent.postMessage({ type: 'load-failed', message: messageOf(error) }),
  );
  parent.on('message', async (request) => {
    if (request?.type !== 'embed') return;
    try {
      const vectors = await embed(await loading, request.texts, settings.dimensions);
      parent.postMessage({ type: 'embedded', id: request.id, vectors }, vectors.map((vector) => vector.buffer));
    } catch (error) {
      parent.postMessage({ type: 'embed-failed', id: request.id, message: messageOf(error) });
    }
  });
}

async function loadModel({ modelsDir, model, quantized, dimensions }) {
  forbidNetwork();
  useWebAssemblyRuntime();
  // Imported here rather than at the top so that a broken install (say, no onnxruntime-node binary for this
  // platform) is reported as 'load-failed' with its reason instead of killing the worker before it can say why.
  const { env, pipeline } = await import('@xenova/transformers');
  env.allowLocalModels = true;
  env.allowRemoteModels = false;
  env.localModelPath = modelsDir;
  // The file cache (node_modules/@xenova/transformers/.cache) is consulted before the models folder: a stale copy
  // there under the same name would silently win over the operator's files.
  env.useFSCache = false;
  env.useBrowserCache = false;
  // One thread: batching, not parallelism, keeps up under load (see use-lite.ts), and the gateway keeps a core.
  env.backends.onnx.wasm.numThreads = 1;
  const extractor = await pipeline('feature-extraction', model, { quantized, local_files_only: true });
  // The cache sized its vector index from config.json before the model loaded; a model whose output disagrees
  // (a projection head, a wrong config) must fail now rather than fill the index with vectors of another size.
  await embed(extractor, ['dimension probe'], dimensions);
  return extractor;
}

/**
 * Local files are read from disk without fetch, and the settings above forbid the hub; should some code path still
 * try the network, it fails at once and says so rather than waiting on a connection that cannot succeed. This only
 * replaces fetch inside this worker thread, which does nothing but run the model.
 */
function forbidNetwork() {
  globalThis.fetch = async (url) => {
    throw new Error(`the ONNX embedder never downloads, but something asked for ${String(url)}`);
  };
}

/** Makes transformers.js' `import 'onnxruntime-node'` load onnxruntime-web instead, in this worker only. */
function useWebAssemblyRuntime() {
  const hooks = `export async function resolve(specifier, context, next) {
    return next(specifier === 'onnxruntime-node' ? 'onnxruntime-web' : specifier, context);
  }`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}

async function embed(extractor, texts, dimensions) {
  const output = await extractor(texts, { pooling: 'mean', normalize: true });
  const [rows, columns] = output.dims;
  if (rows !== texts.length) throw new Error(`model returned ${rows} vectors for ${texts.length} texts`);
  if (columns !== dimensions) {
    throw new Error(`model returns ${columns}-dimensional vectors, but its config.json says ${dimensions}`);
  }
  // slice(), not subarray(): each vector gets a buffer of its own, to transfer to the parent.
  return Array.from({ length: rows }, (_, row) => output.data.slice(row * columns, (row + 1) * columns));
}

function messageOf(error) {
  return String(error?.message ?? error);
}

if (workerData?.onnxEmbedder) startOnnxEmbeddingWorker(workerData.onnxEmbedder);
