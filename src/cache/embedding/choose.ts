import { resolve } from 'node:path';
import type { Embedder } from './embedder.js';
import { createOnnxEmbedder } from './onnx.js';
import { ProviderEmbedder, type EmbedThroughGateway } from './provider.js';
import { createUseLiteEmbedder, USE_LITE_DIMENSIONS, USE_LITE_ID } from './use-lite.js';

/** An embedder the cache may use: its id and dimension before it starts, and how to start it. */
export interface EmbedderChoice {
  /** The config's name for it (`use-lite`, `onnx:<model>`, `<provider>/<model>`). */
  spec: string;
  id: string;
  /** 0 when only the model's first answer tells (a provider's). */
  dimensions: number;
  create(): Embedder & { ready?(): Promise<void> };
}

/**
 * The embedder a config names: `use-lite` (built in), `onnx:<model>` (a sentence model in the models folder,
 * checked now: a missing model refuses the config) or `<provider>/<model>` (the provider's embeddings, through the
 * gateway's own routing).
 */
export function chooseEmbedder(spec: string, modelsDir: string, viaGateway: EmbedThroughGateway | null): EmbedderChoice {
  if (spec === 'use-lite') return { spec, id: USE_LITE_ID, dimensions: USE_LITE_DIMENSIONS, create: () => createUseLiteEmbedder() };
  if (spec.startsWith('onnx:')) {
    // Built now so the files are checked (and the dimension read) when the config is applied; its worker starts on first use.
    const embedder = createOnnxEmbedder({ modelsDir: resolve(modelsDir), model: spec.slice('onnx:'.length) });
    return { spec, id: embedder.id, dimensions: embedder.dimensions, create: () => embedder };
  }
  if (!viaGateway) throw new Error(`the embedder ${spec} needs the gateway's routing, which this cache was not given`);
  return { spec, id: `provider:${spec}`, dimensions: 0, create: () => new ProviderEmbedder(spec, viaGateway) };
}
