/**
 * What the semantic cache needs from a sentence-embedding model, whichever model it is.
 *
 * Vectors come back L2-normalised, so the cosine similarity of two of them is their dot product: the index and the
 * cache compare vectors millions of times and should not divide by norms each time.
 */
export interface Embedder {
  /** Names the model (and its version), so vectors from different models are never compared with each other. */
  readonly id: string;
  readonly dimensions: number;
  /**
   * One unit-length vector per text, in the same order. Rejects at once with `EmbedderBusy` when too much work is
   * already waiting (the caller skips the semantic tier rather than delay the request), and with
   * `EmbedderUnavailable` when the model cannot answer (it failed to load, crashed, or the embedder is closed).
   */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Frees the model (ends its worker); `embed` rejects with `EmbedderUnavailable` afterwards. */
  close(): Promise<void>;
}

/** Too many texts are waiting to be embedded: the caller should go on without the semantic tier this time. */
export class EmbedderBusy extends Error {
  constructor(readonly waiting: number, readonly maxQueue: number) {
    super(`embedder busy: ${waiting} texts already waiting (limit ${maxQueue})`);
    this.name = 'EmbedderBusy';
  }
}

/** The model could not answer: it failed to load, its worker crashed, or the embedder was closed. */
export class EmbedderUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbedderUnavailable';
  }
}
