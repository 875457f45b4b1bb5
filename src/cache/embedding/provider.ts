import { EmbedderBusy, EmbedderUnavailable, type Embedder } from './embedder.js';

/** Sends texts to an embeddings model through tollgate's own pipeline (routing, keys, retries, cost). */
export type EmbedThroughGateway = (model: string, texts: string[]) => Promise<number[][]>;

/** Texts that may wait for the provider at once; beyond it the cache skips the semantic tier. */
const MAX_WAITING = 256;

/**
 * An embedder that asks a configured provider's embeddings endpoint (e.g. `openai/text-embedding-3-small`), through
 * the gateway's own routing so the calls are governed, logged and costed like any other. Its dimension is whatever
 * the model answers: `ready()` asks once with a probe text, and the cache waits for it before building its index.
 */
export class ProviderEmbedder implements Embedder {
  readonly id: string;
  private known = 0;
  private waiting = 0;
  private closed = false;
  private probe: Promise<void> | null = null;

  constructor(
    private readonly model: string,
    private readonly send: EmbedThroughGateway,
  ) {
    this.id = `provider:${model}`;
  }

  /** 0 until the first answer (or `ready()`) told it. */
  get dimensions(): number {
    return this.known;
  }

  ready(): Promise<void> {
    this.probe ??= this.embed(['dimension probe']).then(() => undefined);
    return this.probe;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new EmbedderUnavailable(`embedder ${this.id} is closed`);
    if (this.waiting + texts.length > MAX_WAITING) throw new EmbedderBusy(this.waiting, MAX_WAITING);
    this.waiting += texts.length;
    try {
      // An empty input is refused by some providers: a space stands for it.
      const vectors = await this.send(this.model, texts.map((text) => (text === '' ? ' ' : text)));
      if (vectors.length !== texts.length) throw new EmbedderUnavailable(`${this.model} answered ${vectors.length} vectors for ${texts.length} texts`);
      return vectors.map((vector) => this.unit(vector));
    } catch (err) {
      if (err instanceof EmbedderBusy || err instanceof EmbedderUnavailable) throw err;
      throw new EmbedderUnavailable(`${this.model}: ${(err as Error).message}`, { cause: err });
    } finally {
      this.waiting -= texts.length;
    }
  }

  /** Unit length, so cosine is a dot product; a model that changes its dimension mid-way is refused. */
  private unit(vector: number[]): Float32Array {
    if (this.known === 0) this.known = vector.length;
    if (vector.length !== this.known || vector.length === 0) throw new EmbedderUnavailable(`${this.model} answered a ${vector.length}-dimension vector, expected ${this.known}`);
    const out = Float32Array.from(vector);
    let norm = 0;
    for (const x of out) norm += x * x;
    norm = Math.sqrt(norm);
    if (!Number.isFinite(norm) || norm === 0) throw new EmbedderUnavailable(`${this.model} answered a zero or invalid vector`);
    for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) / norm;
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
