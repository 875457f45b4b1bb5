import { mkdtemp, readFile, readdir, rm, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IndexFileInvalid, VectorIndex, indexSidecarPath } from '../../src/cache/vector-index.js';

const DIMENSIONS = 16;

/** A small deterministic generator, so a failure reproduces. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function randomVectors(count: number, dimensions = DIMENSIONS, seed = 7): Float32Array[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => Float32Array.from({ length: dimensions }, () => random() * 2 - 1));
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(normA * normB);
}

function bruteForceNearest(query: Float32Array, vectors: Map<number, Float32Array>): number {
  let best = -1;
  let bestSimilarity = -Infinity;
  for (const [label, vector] of vectors) {
    const similarity = cosine(query, vector);
    if (similarity > bestSimilarity) [best, bestSimilarity] = [label, similarity];
  }
  return best;
}

function filled(vectors: Float32Array[], options = {}): VectorIndex {
  const index = new VectorIndex(DIMENSIONS, options);
  vectors.forEach((vector, label) => index.add(label, vector));
  return index;
}

describe('VectorIndex search', () => {
  it('finds the true nearest neighbour, best first, with the computed cosine as similarity', () => {
    const vectors = randomVectors(200);
    const index = filled(vectors);
    const byLabel = new Map(vectors.map((vector, label) => [label, vector]));
    for (const query of randomVectors(30, DIMENSIONS, 99)) {
      const matches = index.search(query, 5);
      expect(matches).toHaveLength(5);
      expect(matches[0]!.label).toBe(bruteForceNearest(query, byLabel));
      for (const match of matches) expect(match.similarity).toBeCloseTo(cosine(query, vectors[match.label]!), 5);
      const similarities = matches.map((match) => match.similarity);
      expect(similarities).toEqual([...similarities].sort((a, b) => b - a));
    }
  });

  it('finds a stored vector itself with similarity 1, whatever its length', () => {
    const vectors = randomVectors(50);
    const index = filled(vectors);
    const scaled = vectors[17]!.map((value) => value * 40);
    const [best] = index.search(scaled, 1);
    expect(best?.label).toBe(17);
    expect(best?.similarity).toBeCloseTo(1, 5);
  });

  it('caps k to the live count and answers [] when empty', () => {
    const index = new VectorIndex(DIMENSIONS);
    const [query] = randomVectors(1);
    expect(index.search(query!, 5)).toEqual([]);
    index.add(1, query!);
    index.add(2, randomVectors(1, DIMENSIONS, 3)[0]!);
    expect(index.search(query!, 10)).toHaveLength(2);
    expect(index.search(query!, 0)).toEqual([]);
  });

  it('rejects vectors of the wrong dimension or with non-finite values, and bad labels', () => {
    const index = new VectorIndex(DIMENSIONS);
    expect(() => index.add(1, new Float32Array(DIMENSIONS + 1))).toThrow(RangeError);
    expect(() => index.add(1, new Float32Array(DIMENSIONS).fill(Number.NaN))).toThrow(RangeError);
    expect(() => index.add(-1, new Float32Array(DIMENSIONS))).toThrow(RangeError);
    expect(() => index.add(1.5, new Float32Array(DIMENSIONS))).toThrow(RangeError);
    expect(() => index.search(new Float32Array(3), 1)).toThrow(RangeError);
  });
});

describe('VectorIndex growth and removal', () => {
  it('grows past its initial capacity', () => {
    const vectors = randomVectors(300);
    const index = filled(vectors, { initialCapacity: 4 });
    expect(index.size).toBe(300);
    expect(index.search(vectors[299]!, 1)[0]?.label).toBe(299);
  });

  it('never returns a removed label, and ignores unknown labels', () => {
    const vectors = randomVectors(100);
    const index = filled(vectors);
    for (let label = 0; label < 100; label += 2) index.remove(label);
    index.remove(12345);
    index.remove(0); // twice
    expect(index.size).toBe(50);
    expect(index.deletedCount).toBe(50);
    expect(index.has(0)).toBe(false);
    expect(index.has(1)).toBe(true);
    for (const query of vectors) {
      for (const match of index.search(query, 10)) expect(match.label % 2).toBe(1);
    }
    expect(index.search(vectors[4]!, 100)).toHaveLength(50);
  });

  it('re-adds a removed label, whether or not its slot was reused meanwhile', () => {
    const vectors = randomVectors(40);
    const index = filled(vectors.slice(0, 20));
    index.remove(3);
    index.add(3, vectors[3]!); // slot still its own: unmarked and updated
    expect(index.has(3)).toBe(true);
    expect(index.search(vectors[3]!, 1)[0]?.label).toBe(3);

    index.remove(5);
    index.add(100, vectors[25]!); // takes over 5's slot
    expect(index.deletedCount).toBe(0);
    index.add(5, vectors[30]!); // 5 comes back with a new vector in a new slot
    expect(index.search(vectors[30]!, 1)[0]).toMatchObject({ label: 5 });
    expect(index.search(vectors[25]!, 1)[0]).toMatchObject({ label: 100 });
    expect(index.size).toBe(21);
    // Removing both again leaves neither reachable.
    index.remove(5);
    index.remove(100);
    const found = new Set(index.search(vectors[30]!, 19).map((match) => match.label));
    expect(found.has(5) || found.has(100)).toBe(false);
  });

  it('replaces the vector of a live label', () => {
    const vectors = randomVectors(20);
    const index = filled(vectors.slice(0, 10));
    index.add(2, vectors[15]!);
    expect(index.size).toBe(10);
    expect(index.search(vectors[15]!, 1)[0]).toMatchObject({ label: 2 });
  });

  it('asks for compaction once tombstones outnumber half the live entries', () => {
    const index = filled(randomVectors(30));
    expect(index.needsCompaction()).toBe(false);
    for (let label = 0; label < 10; label++) index.remove(label);
    expect(index.needsCompaction()).toBe(false); // 10 deleted, 20 live
    index.remove(10);
    expect(index.needsCompaction()).toBe(true); // 11 deleted, 19 live
  });
});

describe('VectorIndex files', () => {
  let directory: string;
  let indexPath: string;
  const vectors = randomVectors(150);

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tollgate-vector-index-'));
    indexPath = join(directory, 'cache.hnsw');
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  async function savedIndex(): Promise<VectorIndex> {
    const index = filled(vectors);
    for (let label = 0; label < 150; label += 10) index.remove(label);
    await index.save(indexPath);
    return index;
  }

  it('round-trips: same entries, tombstones and search results', async () => {
    const original = await savedIndex();
    const loaded = await VectorIndex.load(indexPath, DIMENSIONS);
    expect(loaded.size).toBe(original.size);
    expect(loaded.deletedCount).toBe(original.deletedCount);
    expect(loaded.has(10)).toBe(false);
    expect(loaded.has(11)).toBe(true);
    for (const query of randomVectors(20, DIMENSIONS, 5)) expect(loaded.search(query, 5)).toEqual(original.search(query, 5));
    // The loaded index keeps working: removed labels come back, new ones reuse tombstones.
    loaded.add(10, vectors[10]!);
    loaded.add(1000, vectors[20]!.map((value) => -value));
    expect(loaded.search(vectors[10]!, 1)[0]?.label).toBe(10);
    expect(loaded.deletedCount).toBe(original.deletedCount - 2);
  });

  it('keeps labels() and the search setting across a save and load', async () => {
    const original = await savedIndex();
    original.setEfSearch(40);
    await original.save(indexPath);
    const loaded = await VectorIndex.load(indexPath, DIMENSIONS);
    expect(loaded.labels().sort((a, b) => a - b)).toEqual(original.labels().sort((a, b) => a - b));
    expect(loaded.labels()).not.toContain(20);
    for (const query of randomVectors(10, DIMENSIONS, 8)) expect(loaded.search(query, 8)).toEqual(original.search(query, 8));
  });

  it('leaves no temp files behind and overwrites an earlier save', async () => {
    const index = await savedIndex();
    index.add(500, vectors[1]!.map((value) => -value));
    await index.save(indexPath);
    const loaded = await VectorIndex.load(indexPath, DIMENSIONS);
    expect(loaded.has(500)).toBe(true);
    expect((await readdir(directory)).sort()).toEqual(['cache.hnsw', 'cache.hnsw.meta.json']);
  });

  it('applies mutations made during a save after it, without them reaching the file', async () => {
    const index = filled(vectors);
    const saving = index.save(indexPath);
    index.remove(7);
    index.add(900, vectors[8]!.map((value) => -value));
    expect(index.has(7)).toBe(false);
    expect(index.has(900)).toBe(true);
    expect(index.search(vectors[7]!, 3).map((match) => match.label)).not.toContain(7);
    await saving;
    expect(index.search(vectors[8]!.map((value) => -value), 1)[0]?.label).toBe(900);
    const loaded = await VectorIndex.load(indexPath, DIMENSIONS);
    expect(loaded.has(7)).toBe(true);
    expect(loaded.has(900)).toBe(false);
  });

  async function expectInvalid(dimensions = DIMENSIONS): Promise<IndexFileInvalid> {
    const error = await VectorIndex.load(indexPath, dimensions).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(IndexFileInvalid);
    return error as IndexFileInvalid;
  }

  it('refuses a file with flipped bytes', async () => {
    await savedIndex();
    const bytes = await readFile(indexPath);
    for (const offset of [200, Math.floor(bytes.length / 2), bytes.length - 3]) bytes[offset] = bytes[offset]! ^ 0xff;
    await writeFile(indexPath, bytes);
    expect((await expectInvalid()).reason).toMatch(/sha256/);
  });

  it('refuses a truncated file', async () => {
    await savedIndex();
    await truncate(indexPath, (await stat(indexPath)).size - 100);
    expect((await expectInvalid()).reason).toMatch(/truncated/);
  });

  it('refuses a file whose sidecar is missing, torn or of another format version', async () => {
    await savedIndex();
    const sidecar = await readFile(indexSidecarPath(indexPath), 'utf8');
    await writeFile(indexSidecarPath(indexPath), sidecar.slice(0, sidecar.length / 2));
    expect((await expectInvalid()).reason).toMatch(/not JSON/);
    await writeFile(indexSidecarPath(indexPath), JSON.stringify({ ...JSON.parse(sidecar), version: 99 }));
    expect((await expectInvalid()).reason).toMatch(/version/);
    await unlink(indexSidecarPath(indexPath));
    await expectInvalid();
  });

  it('refuses a missing index file', async () => {
    await savedIndex();
    await unlink(indexPath);
    await expectInvalid();
  });

  it('refuses a file of another dimension, even when the sidecar lies about it', async () => {
    await savedIndex();
    expect((await expectInvalid(DIMENSIONS * 2)).reason).toMatch(/dimension/);
    const sidecar = JSON.parse(await readFile(indexSidecarPath(indexPath), 'utf8'));
    await writeFile(indexSidecarPath(indexPath), JSON.stringify({ ...sidecar, dimensions: DIMENSIONS * 2 }));
    expect((await expectInvalid(DIMENSIONS * 2)).reason).toMatch(/header/);
  });

  it('refuses a sidecar whose deleted labels disagree with the index', async () => {
    await savedIndex();
    const sidecar = JSON.parse(await readFile(indexSidecarPath(indexPath), 'utf8'));
    await writeFile(indexSidecarPath(indexPath), JSON.stringify({ ...sidecar, deletedLabels: [...sidecar.deletedLabels.slice(1), 99999] }));
    await expectInvalid();
  });
});

describe('VectorIndex.rebuild', () => {
  it('builds an index from stored vectors that answers like the original', () => {
    const vectors = randomVectors(120);
    const entries: Array<[number, Float32Array]> = vectors.map((vector, i) => [i * 3, vector]);
    const rebuilt = VectorIndex.rebuild(DIMENSIONS, entries);
    expect(rebuilt.size).toBe(120);
    expect(rebuilt.deletedCount).toBe(0);
    const byLabel = new Map(entries);
    for (const query of randomVectors(20, DIMENSIONS, 11)) {
      expect(rebuilt.search(query, 1)[0]?.label).toBe(bruteForceNearest(query, byLabel));
    }
  });

  it('accepts any iterable, such as a generator over a store', () => {
    function* fromStore(): Generator<[number, Float32Array]> {
      for (const [i, vector] of randomVectors(10).entries()) yield [i, vector];
    }
    expect(VectorIndex.rebuild(DIMENSIONS, fromStore()).size).toBe(10);
  });
});
