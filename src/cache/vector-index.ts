/**
 * The semantic cache's approximate nearest-neighbour index: HNSW (hnswlib-node) over embedding vectors, keyed by
 * numeric labels that the cache store maps to its entries. It answers "which stored prompts are most similar to
 * this one" in a few milliseconds at 100k entries, and it persists to a file that is checked before the native
 * reader ever sees it.
 *
 * Space: 'cosine'. hnswlib-node implements it as the inner-product space plus normalising every vector on add and
 * on search (one pass over 512 floats, negligible beside the graph walk). 'ip' would give the same answers for
 * unit vectors but silently wrong ones for an embedder that does not normalise; 'cosine' is right for both, and
 * the distance it returns is 1 - cos, so similarity = 1 - distance.
 *
 * Deletion: the index is created with allowReplaceDeleted, so a removed entry's slot is reused by the next new
 * label instead of growing the graph. A cache evicts continuously; without reuse the tombstones would pile up until
 * a full rebuild. needsCompaction() still reports when tombstones outnumber half the live entries (the cache shrank).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import hnswlib from 'hnswlib-node';
import type { HierarchicalNSW } from 'hnswlib-node';

export interface VectorIndexOptions {
  /** Slots allocated up front; the index doubles when full. */
  initialCapacity?: number;
  /** Graph degree: more links, better recall, more memory (4 bytes x 2M per entry on the base layer). */
  m?: number;
  /** Candidate list size while inserting: build time against graph quality. */
  efConstruction?: number;
  /** Candidate list size while searching: latency against recall. */
  efSearch?: number;
}

export interface VectorMatch {
  label: number;
  /** Cosine similarity in [-1, 1]; 1 is the same direction. */
  similarity: number;
}

/** The index file or its sidecar is missing, torn, corrupt or for another dimension: rebuild from stored vectors. */
export class IndexFileInvalid extends Error {
  override readonly name = 'IndexFileInvalid';
  constructor(
    readonly path: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`vector index file ${path} is unusable: ${reason}`, options);
  }
}

/** Defaults chosen with bench/cache-index.ts (100k clustered 512-dim vectors); see bench/RESULTS-cache-index.md. */
export const VECTOR_INDEX_DEFAULTS = { initialCapacity: 1024, m: 16, efConstruction: 200, efSearch: 64 } as const;

const SIDECAR_FORMAT = 'tollgate-hnsw-index';
const SIDECAR_VERSION = 1;
const MAX_LABEL = 0xffff_ffff; // the binding passes labels as uint32

/** The sidecar sits beside the index file; it vouches for the index file's exact bytes. */
export function indexSidecarPath(indexPath: string): string {
  return `${indexPath}.meta.json`;
}

interface IndexSidecar {
  format: typeof SIDECAR_FORMAT;
  version: typeof SIDECAR_VERSION;
  space: 'cosine';
  dimensions: number;
  /** Live entries. */
  count: number;
  /** Slots in the file: live entries plus tombstones. */
  slots: number;
  /** Labels whose slots are marked deleted: the native API cannot list them, and has()/size need them. */
  deletedLabels: number[];
  m: number;
  efConstruction: number;
  efSearch: number;
  bytes: number;
  sha256: string;
}

export class VectorIndex {
  readonly dimensions: number;
  private readonly native: HierarchicalNSW;
  private readonly settings: Required<VectorIndexOptions>;
  /** Labels a search may return. */
  private readonly live = new Set<number>();
  /** Labels marked deleted in the graph; a slot here may since have been reused for another label (see addNow). */
  private tombstones = new Set<number>();
  /** Slots marked deleted, which is what hnswlib reuses; exact, unlike tombstones. */
  private deletedSlots = 0;
  /**
   * While the native writer runs on a worker thread it reads the graph without locks, and a resize would free the
   * memory under it, so mutations wait here and run when the write ends. Null when no write is in flight.
   */
  private queuedMutations: Array<() => void> | null = null;
  /** The outcome of queued mutations per label (true = present), so has() and search() answer as if already applied. */
  private readonly queuedPresence = new Map<number, boolean>();
  private saveChain: Promise<void> = Promise.resolve();
  private savesInFlight = 0;

  constructor(dimensions: number, options: VectorIndexOptions = {}) {
    if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
    this.dimensions = dimensions;
    this.settings = {
      initialCapacity: positiveInteger('initialCapacity', options.initialCapacity ?? VECTOR_INDEX_DEFAULTS.initialCapacity),
      m: positiveInteger('m', options.m ?? VECTOR_INDEX_DEFAULTS.m),
      efConstruction: positiveInteger('efConstruction', options.efConstruction ?? VECTOR_INDEX_DEFAULTS.efConstruction),
      efSearch: positiveInteger('efSearch', options.efSearch ?? VECTOR_INDEX_DEFAULTS.efSearch),
    };
    this.native = new hnswlib.HierarchicalNSW('cosine', dimensions);
    this.native.initIndex({
      maxElements: this.settings.initialCapacity,
      m: this.settings.m,
      efConstruction: this.settings.efConstruction,
      allowReplaceDeleted: true,
    });
    this.native.setEf(this.settings.efSearch);
  }

  /** Live entries. */
  get size(): number {
    return this.live.size;
  }

  /** Slots holding a removed entry, waiting to be reused by a new label. */
  get deletedCount(): number {
    return this.deletedSlots;
  }

  has(label: number): boolean {
    return this.queuedPresence.get(label) ?? this.live.has(label);
  }

  /** Adds an entry, or replaces the vector of a label already present (including one removed earlier). */
  add(label: number, vector: Float32Array): void {
    assertLabel(label);
    const point = toPoint(vector, this.dimensions);
    if (this.queuedMutations) {
      this.queuedMutations.push(() => this.addNow(label, point));
      this.queuedPresence.set(label, true);
      return;
    }
    this.addNow(label, point);
  }

  /** Removes an entry; an unknown label is a no-op. */
  remove(label: number): void {
    if (this.queuedMutations) {
      if (!this.has(label)) return;
      this.queuedMutations.push(() => this.removeNow(label));
      this.queuedPresence.set(label, false);
      return;
    }
    this.removeNow(label);
  }

  /** The k most similar live entries, best first. */
  search(vector: Float32Array, k: number): VectorMatch[] {
    const point = toPoint(vector, this.dimensions);
    const wanted = Math.min(Math.floor(k), this.live.size);
    if (!(wanted > 0)) return [];
    // During a save, queued removals are still in the graph: ask for enough extra to filter them out.
    const asked = Math.min(wanted + this.queuedPresence.size, this.native.getCurrentCount());
    const { distances, neighbors } = this.native.searchKnn(point, asked);
    const matches: VectorMatch[] = [];
    for (let i = 0; i < neighbors.length && matches.length < wanted; i++) {
      const label = neighbors[i]!;
      if (this.queuedPresence.get(label) === false) continue;
      matches.push({ label, similarity: clampSimilarity(1 - distances[i]!) });
    }
    return matches;
  }

  /** Live labels (a snapshot), so a caller can drop those its store no longer holds after a load. */
  labels(): number[] {
    const labels = [...this.live].filter((label) => this.queuedPresence.get(label) !== false);
    for (const [label, present] of this.queuedPresence) if (present && !this.live.has(label)) labels.push(label);
    return labels;
  }

  /** Changes the search candidate list size (latency against recall) without a rebuild. */
  setEfSearch(efSearch: number): void {
    this.settings.efSearch = positiveInteger('efSearch', efSearch);
    this.native.setEf(efSearch);
  }

  /** True when tombstones outnumber half the live entries: rebuild from stored vectors, off the request path. */
  needsCompaction(): boolean {
    return this.deletedSlots > 0 && this.deletedSlots > this.live.size / 2;
  }

  /**
   * Writes the index atomically: the index file and its sidecar go to temp files beside the target, are flushed,
   * then renamed over it. A crash between the two renames leaves an index file whose checksum the sidecar does not
   * vouch for, which load() reports as IndexFileInvalid. Concurrent saves run one after another. Searches go on
   * during the write; adds and removes are queued until the native writer is done (has() already reflects them).
   */
  save(path: string): Promise<void> {
    // With no save in flight the snapshot is taken now, synchronously: mutations after this call are not in the file.
    const run = this.savesInFlight === 0 ? this.writeSnapshot(path) : this.saveChain.then(() => this.writeSnapshot(path));
    this.savesInFlight++;
    const settled = run.catch(() => undefined).finally(() => this.savesInFlight--);
    this.saveChain = settled;
    return run;
  }

  /**
   * Reads an index written by save(). Everything is checked before the native reader sees the file (sidecar,
   * size, sha256, header), because hnswlib trusts the bytes it reads and a corrupt graph aborts the process on
   * the first search. Any failure is an IndexFileInvalid.
   */
  static async load(path: string, dimensions: number, options: { efSearch?: number } = {}): Promise<VectorIndex> {
    const sidecar = await readSidecar(path);
    if (sidecar.dimensions !== dimensions) {
      throw new IndexFileInvalid(path, `holds ${sidecar.dimensions}-dimension vectors, expected ${dimensions}`);
    }
    await verifyIndexBytes(path, sidecar);
    await verifyNativeHeader(path, sidecar);
    const index = new VectorIndex(dimensions, {
      initialCapacity: 1, // replaced by the file's own capacity
      m: sidecar.m,
      efConstruction: sidecar.efConstruction,
      efSearch: options.efSearch ?? sidecar.efSearch,
    });
    try {
      await index.native.readIndex(path, true);
    } catch (err) {
      throw new IndexFileInvalid(path, 'the native reader refused it', { cause: err });
    }
    index.native.setEf(index.settings.efSearch); // readIndex resets ef to 10
    index.adoptLabels(path, sidecar);
    return index;
  }

  /** Builds a fresh index from stored vectors (the file was bad, or compaction). Synchronous and CPU-bound. */
  static rebuild(dimensions: number, entries: Iterable<[number, Float32Array]>, options: VectorIndexOptions = {}): VectorIndex {
    const initialCapacity = options.initialCapacity ?? (Array.isArray(entries) ? Math.max(entries.length, 1) : undefined);
    const index = new VectorIndex(dimensions, { ...options, initialCapacity });
    for (const [label, vector] of entries) index.add(label, vector);
    return index;
  }

  private addNow(label: number, point: number[]): void {
    if (this.live.has(label)) {
      this.native.addPoint(point, label, false); // updates the vector in place
      return;
    }
    if (this.tombstones.delete(label) && this.unmarkIfStillOwned(label)) {
      this.deletedSlots--;
      this.native.addPoint(point, label, false);
      this.live.add(label);
      return;
    }
    if (this.deletedSlots > 0) {
      this.deletedSlots--; // the native add takes over one deleted slot
    } else {
      this.growIfFull();
    }
    this.native.addPoint(point, label, true);
    this.live.add(label);
  }

  /**
   * A removed label keeps its slot until a new label takes it over; then hnswlib forgets the old label and unmark
   * throws "Label not found". Re-adding then takes the ordinary path. (Adding with replaceDeleted while the label
   * still owns its deleted slot would leave that slot pointing at the label too, so unmarking comes first.)
   */
  private unmarkIfStillOwned(label: number): boolean {
    try {
      this.native.unmarkDelete(label);
      return true;
    } catch {
      return false;
    }
  }

  private removeNow(label: number): void {
    if (!this.live.delete(label)) return;
    this.native.markDelete(label);
    this.tombstones.add(label);
    this.deletedSlots++;
  }

  private growIfFull(): void {
    const capacity = this.native.getMaxElements();
    if (this.native.getCurrentCount() < capacity) return;
    this.native.resizeIndex(Math.min(capacity * 2, MAX_LABEL));
  }

  private async writeSnapshot(path: string): Promise<void> {
    const suffix = `.${process.pid}.${randomUUID()}.tmp`;
    const tempIndex = `${path}${suffix}`;
    const tempSidecar = `${indexSidecarPath(path)}${suffix}`;
    try {
      // Label bookkeeping is read while nothing can change the graph; this also forgets tombstones whose slot was reused.
      const slots = this.native.getCurrentCount();
      const deletedLabels = this.native.getIdsList().filter((label) => !this.live.has(label));
      this.tombstones = new Set(deletedLabels);
      const count = this.live.size;
      this.queuedMutations = [];
      try {
        await this.native.writeIndex(tempIndex);
      } finally {
        this.applyQueuedMutations();
      }
      await flushFile(tempIndex);
      const { bytes, sha256 } = await digestFile(tempIndex);
      const sidecar: IndexSidecar = {
        format: SIDECAR_FORMAT,
        version: SIDECAR_VERSION,
        space: 'cosine',
        dimensions: this.dimensions,
        count,
        slots,
        deletedLabels,
        m: this.settings.m,
        efConstruction: this.settings.efConstruction,
        efSearch: this.settings.efSearch,
        bytes,
        sha256,
      };
      await writeFile(tempSidecar, JSON.stringify(sidecar), { flush: true });
      await rename(tempIndex, path);
      await rename(tempSidecar, indexSidecarPath(path));
      await flushDirectory(dirname(path));
    } catch (err) {
      await rm(tempIndex, { force: true });
      await rm(tempSidecar, { force: true });
      throw err;
    }
  }

  private applyQueuedMutations(): void {
    const queued = this.queuedMutations ?? [];
    this.queuedMutations = null;
    this.queuedPresence.clear();
    for (const mutation of queued) mutation();
  }

  private adoptLabels(path: string, sidecar: IndexSidecar): void {
    const deleted = new Set(sidecar.deletedLabels);
    const ids = this.native.getIdsList();
    if (ids.length !== sidecar.slots || deleted.size !== sidecar.slots - sidecar.count) {
      throw new IndexFileInvalid(path, 'the sidecar label counts do not match the index');
    }
    for (const label of ids) if (!deleted.has(label)) this.live.add(label);
    if (this.live.size !== sidecar.count) throw new IndexFileInvalid(path, 'the sidecar deleted labels do not match the index');
    this.tombstones = deleted;
    this.deletedSlots = deleted.size;
  }
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function assertLabel(label: number): void {
  if (!Number.isInteger(label) || label < 0 || label > MAX_LABEL) throw new RangeError(`label must be an integer in [0, 2^32), got ${label}`);
}

/** The binding only accepts plain arrays; a NaN would poison the graph for every later search. */
function toPoint(vector: Float32Array, dimensions: number): number[] {
  if (vector.length !== dimensions) throw new RangeError(`vector has ${vector.length} dimensions, expected ${dimensions}`);
  const point = new Array<number>(dimensions);
  for (let i = 0; i < dimensions; i++) {
    const value = vector[i]!;
    if (!Number.isFinite(value)) throw new RangeError(`vector[${i}] is not a finite number`);
    point[i] = value;
  }
  return point;
}

/** Float rounding can put 1 - distance a hair outside [-1, 1]. */
function clampSimilarity(value: number): number {
  return Math.max(-1, Math.min(1, value));
}

async function readSidecar(path: string): Promise<IndexSidecar> {
  const sidecarPath = indexSidecarPath(path);
  let text: string;
  try {
    text = await readFile(sidecarPath, 'utf8');
  } catch (err) {
    throw new IndexFileInvalid(path, `cannot read the sidecar ${sidecarPath}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new IndexFileInvalid(path, 'the sidecar is not JSON (torn write?)', { cause: err });
  }
  const problem = sidecarProblem(parsed);
  if (problem) throw new IndexFileInvalid(path, `the sidecar ${problem}`);
  return parsed as IndexSidecar;
}

function sidecarProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return 'is not an object';
  const sidecar = value as Record<string, unknown>;
  if (sidecar.format !== SIDECAR_FORMAT) return `has format ${String(sidecar.format)}, expected ${SIDECAR_FORMAT}`;
  if (sidecar.version !== SIDECAR_VERSION) return `has version ${String(sidecar.version)}, expected ${SIDECAR_VERSION}`;
  if (sidecar.space !== 'cosine') return `has space ${String(sidecar.space)}, expected cosine`;
  for (const field of ['dimensions', 'count', 'slots', 'm', 'efConstruction', 'efSearch', 'bytes'] as const) {
    const number = sidecar[field];
    if (typeof number !== 'number' || !Number.isInteger(number) || number < 0) return `has no valid ${field}`;
  }
  if (typeof sidecar.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sidecar.sha256)) return 'has no valid sha256';
  const deleted = sidecar.deletedLabels;
  if (!Array.isArray(deleted) || !deleted.every((label) => Number.isInteger(label) && label >= 0 && label <= MAX_LABEL)) {
    return 'has no valid deletedLabels';
  }
  return null;
}

async function verifyIndexBytes(path: string, sidecar: IndexSidecar): Promise<void> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (err) {
    throw new IndexFileInvalid(path, 'cannot read the index file', { cause: err });
  }
  // The size check is free and catches a truncated file before hashing it.
  if (size !== sidecar.bytes) throw new IndexFileInvalid(path, `is ${size} bytes, the sidecar says ${sidecar.bytes} (truncated?)`);
  const { sha256 } = await digestFile(path).catch((err: unknown) => {
    throw new IndexFileInvalid(path, 'cannot read the index file', { cause: err });
  });
  if (sha256 !== sidecar.sha256) throw new IndexFileInvalid(path, 'sha256 does not match the sidecar (corrupt or torn)');
}

/**
 * hnswlib's loadIndex takes the vector size from the space it is given, not from the file, so a file written for
 * another dimension would load "fine" and be read as garbage. The header (hnswlib 0.8 layout: 64-bit little-endian
 * size_t fields) records the per-entry layout, from which the dimension follows.
 */
async function verifyNativeHeader(path: string, sidecar: IndexSidecar): Promise<void> {
  const header = Buffer.alloc(96);
  let bytesRead: number;
  try {
    const file = await open(path, 'r');
    try {
      ({ bytesRead } = await file.read(header, 0, header.length, 0));
    } finally {
      await file.close();
    }
  } catch (err) {
    throw new IndexFileInvalid(path, 'cannot read the index header', { cause: err });
  }
  if (bytesRead < header.length) throw new IndexFileInvalid(path, 'is shorter than an hnswlib header');
  const field = (offset: number) => Number(header.readBigUInt64LE(offset));
  const maxElements = field(8);
  const elementCount = field(16);
  const labelOffset = field(32);
  const dataOffset = field(40);
  const dimensions = (labelOffset - dataOffset) / Float32Array.BYTES_PER_ELEMENT;
  if (elementCount !== sidecar.slots || maxElements < elementCount) {
    throw new IndexFileInvalid(path, `header holds ${elementCount} entries, the sidecar says ${sidecar.slots}`);
  }
  if (dimensions !== sidecar.dimensions) {
    throw new IndexFileInvalid(path, `header describes ${dimensions}-dimension vectors, the sidecar says ${sidecar.dimensions}`);
  }
}

/** Streams the file: the index is hundreds of megabytes at 100k entries, no reason to hold it twice. */
async function digestFile(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** Rename is only atomic for data already on disk; flush the file first. */
async function flushFile(path: string): Promise<void> {
  const file = await open(path, 'r+');
  try {
    await file.sync();
  } finally {
    await file.close();
  }
}

/** Makes the renames themselves durable. Some platforms refuse to fsync a directory; the rename still happened. */
async function flushDirectory(path: string): Promise<void> {
  try {
    const directory = await open(path, 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  } catch {
    // best effort
  }
}
