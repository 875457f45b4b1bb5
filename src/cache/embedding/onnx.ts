import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { EmbedderUnavailable } from './embedder.js';
import { createWorkerEmbedder, type WorkerEmbedder, type WorkerEmbedderLimits } from './use-lite.js';

export interface OnnxEmbedderOptions extends WorkerEmbedderLimits {
  /** The folder holding one sub-folder per model, in the layout @xenova/transformers reads. */
  modelsDir: string;
  /** The model's folder under modelsDir: `all-MiniLM-L6-v2`, or `Xenova/bge-small-en-v1.5` as on the hub. */
  model: string;
  /**
   * true loads onnx/model_quantized.onnx, false onnx/model.onnx. By default the quantized file when there is one
   * (a quarter of the size, faster, and what transformers.js itself prefers), else model.onnx.
   */
  quantized?: boolean;
}

/** What the worker needs; see onnx-worker.mjs. */
interface OnnxWorkerSettings {
  modelsDir: string;
  model: string;
  quantized: boolean;
  dimensions: number;
}

const REQUIRED_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];
const EXPECTED_LAYOUT =
  '<modelsDir>/<model>/ with config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx or onnx/model_quantized.onnx';

/**
 * A sentence-embedding model the operator placed in a models folder, run by @xenova/transformers on onnxruntime-web
 * (WebAssembly, one thread; onnx-worker.mjs says why not the native runtime) in a worker thread, with mean pooling and
 * L2 normalisation. Nothing is ever downloaded.
 *
 * Everything the cache needs before the model loads is settled here, synchronously, from the files: `dimensions` is
 * config.json's `hidden_size` (the worker checks it against the model's real output when it loads), and `id` names
 * the weights file by size and modification time, so vectors of a replaced model are never compared with the old
 * ones. A missing folder or file throws EmbedderUnavailable naming the path. The worker starts, and loads the model,
 * on the first `embed` or `ready` call.
 */
export function createOnnxEmbedder(options: OnnxEmbedderOptions): WorkerEmbedder {
  const modelsDir = resolve(options.modelsDir);
  const folder = modelFolder(modelsDir, options.model);
  for (const file of REQUIRED_FILES) requireFile(join(folder, file));
  const weights = chooseWeights(folder, options.quantized);
  const dimensions = readDimensions(join(folder, 'config.json'));
  const { size, mtimeMs } = statSync(weights.path);
  const settings: OnnxWorkerSettings = { modelsDir, model: options.model, quantized: weights.quantized, dimensions };
  return createWorkerEmbedder({
    maxQueue: options.maxQueue,
    maxBatch: options.maxBatch,
    id: `onnx:${options.model}/${weights.fileName}@${size}-${Math.trunc(mtimeMs)}`,
    dimensions,
    workerUrl: bootstrapUrl(settings),
  });
}

/** The model's folder, refusing names that would leave modelsDir or that transformers.js would treat as a URL. */
function modelFolder(modelsDir: string, model: string): string {
  const folder = resolve(modelsDir, model);
  const inside = relative(modelsDir, folder);
  if (!model || model.includes('://') || model.includes('\\') || !inside || inside.startsWith('..') || isAbsolute(inside)) {
    throw new EmbedderUnavailable(`onnx embedder: "${model}" is not a model folder name under ${modelsDir}`);
  }
  if (!existsSync(folder)) throw new EmbedderUnavailable(`onnx embedder: no model folder at ${folder} (expected ${EXPECTED_LAYOUT})`);
  return folder;
}

function requireFile(path: string): void {
  if (!existsSync(path)) throw new EmbedderUnavailable(`onnx embedder: missing ${path} (expected ${EXPECTED_LAYOUT})`);
}

function chooseWeights(folder: string, quantized: boolean | undefined): { path: string; fileName: string; quantized: boolean } {
  const candidates = quantized === undefined ? [true, false] : [quantized];
  for (const candidate of candidates) {
    const fileName = candidate ? 'model_quantized.onnx' : 'model.onnx';
    const path = join(folder, 'onnx', fileName);
    if (existsSync(path)) return { path, fileName, quantized: candidate };
  }
  const wanted = candidates.map((candidate) => join(folder, 'onnx', candidate ? 'model_quantized.onnx' : 'model.onnx'));
  throw new EmbedderUnavailable(`onnx embedder: missing ${wanted.join(' or ')} (expected ${EXPECTED_LAYOUT})`);
}

/**
 * Mean pooling keeps the transformer's width, so the vector size is the config's hidden size (`dim` in DistilBERT
 * configs, `d_model` in some others).
 */
function readDimensions(configPath: string): number {
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new EmbedderUnavailable(`onnx embedder: cannot read ${configPath}: ${(error as Error).message}`, { cause: error });
  }
  const dimensions = config.hidden_size ?? config.dim ?? config.d_model;
  if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions <= 0) {
    throw new EmbedderUnavailable(`onnx embedder: ${configPath} has no positive integer hidden_size`);
  }
  return dimensions;
}

/**
 * createWorkerEmbedder starts the worker from a URL and passes no workerData, so the settings travel in a two-line
 * module that imports the real worker (by its file URL: a data: module has no folder to resolve packages from) and
 * hands them over.
 */
function bootstrapUrl(settings: OnnxWorkerSettings): URL {
  const worker = new URL('./onnx-worker.mjs', import.meta.url);
  const source =
    `import { startOnnxEmbeddingWorker } from ${JSON.stringify(worker.href)};\n` +
    `startOnnxEmbeddingWorker(${JSON.stringify(settings)});\n`;
  return new URL(`data:text/javascript,${encodeURIComponent(source)}`);
}
