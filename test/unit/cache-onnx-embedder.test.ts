import { mkdtempSync, readFileSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EmbedderUnavailable } from '../../src/cache/embedding/embedder.js';
import { createOnnxEmbedder } from '../../src/cache/embedding/onnx.js';
import type { WorkerEmbedder } from '../../src/cache/embedding/use-lite.js';
import { writeTinySentenceModel } from '../helpers/tiny-onnx-model.js';

function dot(x: Float32Array, y: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * y[i]!;
  return sum;
}

let modelsDir: string;
let dimensions: number;

beforeAll(() => {
  modelsDir = mkdtempSync(join(tmpdir(), 'tollgate-onnx-'));
  ({ dimensions } = writeTinySentenceModel(modelsDir, 'tiny'));
});
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

describe('ONNX embedder (tiny generated model, in a worker thread)', () => {
  let embedder: WorkerEmbedder;

  beforeAll(async () => {
    embedder = createOnnxEmbedder({ modelsDir, model: 'tiny' });
    await embedder.ready();
  });
  afterAll(() => embedder.close());

  it("embeds texts into unit vectors of the model's dimension", async () => {
    const vectors = await embedder.embed(['What is the capital of France?', '']);
    expect(embedder.dimensions).toBe(dimensions);
    expect(vectors).toHaveLength(2);
    for (const vector of vectors) {
      expect(vector).toBeInstanceOf(Float32Array);
      expect(vector).toHaveLength(dimensions);
      expect(Math.sqrt(dot(vector, vector))).toBeCloseTo(1, 5);
    }
  });

  it('puts texts that share words closer than texts that share none', async () => {
    const [question, rephrased, unrelated] = await embedder.embed([
      'What is the capital of France?',
      'Tell me the capital of France, please',
      'Sort an array in JavaScript fast',
    ]);
    expect(dot(question!, rephrased!)).toBeGreaterThan(0.6);
    expect(dot(question!, rephrased!)).toBeGreaterThan(dot(question!, unrelated!) + 0.3);
  });

  it('embeds a batch, each text to the vector it gets alone', async () => {
    const texts = Array.from({ length: 20 }, (_, i) => `${i % 2 ? 'the cat sat on the mat' : 'rain in london'} ${'today '.repeat(i % 5)}`);
    const together = await embedder.embed(texts);
    const apart = await Promise.all(texts.map(async (text) => (await embedder.embed([text]))[0]!));
    expect(together).toHaveLength(20);
    together.forEach((vector, i) => expect(dot(vector, apart[i]!)).toBeCloseTo(1, 5));
  });

  it('names the model and its weights file, by size and modification time', () => {
    expect(embedder.id).toMatch(/^onnx:tiny\/model\.onnx@\d+-\d+$/);
  });
});

describe('ONNX embedder set-up', () => {
  it('knows its dimensions at creation, before any worker starts', () => {
    const spawned = vi.spyOn(Worker.prototype, 'postMessage');
    try {
      expect(createOnnxEmbedder({ modelsDir, model: 'tiny' }).dimensions).toBe(dimensions);
      expect(spawned).not.toHaveBeenCalled();
    } finally {
      spawned.mockRestore();
    }
  });

  it('changes its id when the model file is replaced', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-onnx-'));
    try {
      writeTinySentenceModel(dir, 'tiny');
      const before = createOnnxEmbedder({ modelsDir: dir, model: 'tiny' }).id;
      utimesSync(join(dir, 'tiny', 'onnx', 'model.onnx'), new Date(), new Date(Date.now() + 60_000));
      expect(createOnnxEmbedder({ modelsDir: dir, model: 'tiny' }).id).not.toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses, naming the path, a missing model folder, file or weights', () => {
    expect(() => createOnnxEmbedder({ modelsDir, model: 'absent' })).toThrow(
      new RegExp(`no model folder at ${escape(join(modelsDir, 'absent'))}`),
    );
    expect(() => createOnnxEmbedder({ modelsDir, model: 'tiny', quantized: true })).toThrow(
      new RegExp(`missing ${escape(join(modelsDir, 'tiny', 'onnx', 'model_quantized.onnx'))}`),
    );
    expect(() => createOnnxEmbedder({ modelsDir, model: '../elsewhere' })).toThrow(EmbedderUnavailable);
    expect(() => createOnnxEmbedder({ modelsDir, model: 'https://huggingface.co/Xenova/all-MiniLM-L6-v2' })).toThrow(
      /not a model folder name/,
    );

    const dir = mkdtempSync(join(tmpdir(), 'tollgate-onnx-'));
    try {
      writeTinySentenceModel(dir, 'tiny');
      unlinkSync(join(dir, 'tiny', 'tokenizer.json'));
      expect(() => createOnnxEmbedder({ modelsDir: dir, model: 'tiny' })).toThrow(
        new RegExp(`missing ${escape(join(dir, 'tiny', 'tokenizer.json'))}`),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails fast from the models folder, never trying the hub, when a file vanishes before loading', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-onnx-'));
    writeTinySentenceModel(dir, 'tiny');
    const embedder = createOnnxEmbedder({ modelsDir: dir, model: 'tiny' });
    try {
      unlinkSync(join(dir, 'tiny', 'tokenizer.json'));
      const started = performance.now();
      const error = await embedder.embed(['hello']).catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(EmbedderUnavailable);
      // transformers.js' own message for a file missing while remote models are off; the worker's fetch guard
      // ("never downloads") would have answered instead had anything reached for the network.
      expect((error as Error).message).toMatch(/allowRemoteModels=false.*not found locally/);
      expect((error as Error).message).toContain(join(dir, 'tiny', 'tokenizer.json'));
      expect((error as Error).message).not.toMatch(/never downloads/);
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await embedder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails to load when the model's output disagrees with config.json's hidden_size", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-onnx-'));
    writeTinySentenceModel(dir, 'tiny');
    const configPath = join(dir, 'tiny', 'config.json');
    writeFileSync(configPath, JSON.stringify({ ...JSON.parse(readFileSync(configPath, 'utf8')), hidden_size: 384 }));
    const embedder = createOnnxEmbedder({ modelsDir: dir, model: 'tiny' });
    try {
      expect(embedder.dimensions).toBe(384);
      await expect(embedder.ready()).rejects.toThrow(/32-dimensional vectors, but its config.json says 384/);
    } finally {
      await embedder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs several embedders side by side, and again after one is closed', async () => {
    // The point of running on WebAssembly: the native onnxruntime-node addon loads in one thread per process only.
    const first = createOnnxEmbedder({ modelsDir, model: 'tiny' });
    const second = createOnnxEmbedder({ modelsDir, model: 'tiny' });
    try {
      const [a, b] = await Promise.all([first.embed(['rain in london']), second.embed(['rain in london'])]);
      expect(dot(a[0]!, b[0]!)).toBeCloseTo(1, 5);
      await first.close();
      const third = createOnnxEmbedder({ modelsDir, model: 'tiny' });
      await expect(third.embed(['rain in london'])).resolves.toHaveLength(1);
      await third.close();
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('close() ends the worker and refuses later calls', async () => {
    const terminated: Worker[] = [];
    const terminate = Worker.prototype.terminate;
    const spy = vi.spyOn(Worker.prototype, 'terminate').mockImplementation(function (this: Worker) {
      terminated.push(this);
      return terminate.call(this);
    });
    try {
      const embedder = createOnnxEmbedder({ modelsDir, model: 'tiny' });
      await expect(embedder.embed(['hello there'])).resolves.toHaveLength(1);
      await embedder.close();
      expect(terminated).toHaveLength(1);
      expect(terminated[0]!.threadId).toBe(-1); // the thread has exited
      await expect(embedder.embed(['after close'])).rejects.toThrow(/closed/);
    } finally {
      spy.mockRestore();
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
