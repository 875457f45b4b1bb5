/**
 * The semantic cache's vector index at scale: build, lookup latency, recall against brute force, save, load.
 *
 *   npx tsx bench/cache-index.ts [--entries 100000] [--dimensions 512] [--clusters 2000] [--m 16]
 *                                [--ef-construction 200] [--ef 16,32,64,128] [--queries 2000] [--recall-queries 200]
 *
 * Vectors are clustered (centres plus noise, then normalised) because sentence embeddings are: prompts to one
 * gateway bunch around a few thousand topics, and HNSW behaves differently on clustered data than on uniform
 * random vectors (which are all nearly orthogonal and make every neighbour equally far). Queries are noisy copies
 * of stored vectors: a reworded prompt. Each --ef value is measured on the same graph, so they compare fairly.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VectorIndex, indexSidecarPath } from '../src/cache/vector-index.js';
import { CLUSTER_NOISE, QUERY_NOISE, normalise, perturbed, randomSource } from './synthetic-vectors.js';

const { values: args } = parseArgs({
  options: {
    entries: { type: 'string', default: '100000' },
    dimensions: { type: 'string', default: '512' },
    clusters: { type: 'string', default: '2000' },
    m: { type: 'string', default: '16' },
    'ef-construction': { type: 'string', default: '200' },
    ef: { type: 'string', default: '16,32,64,128' },
    queries: { type: 'string', default: '2000' },
    'recall-queries': { type: 'string', default: '200' },
  },
});
const ENTRIES = Number(args.entries);
const DIMENSIONS = Number(args.dimensions);
const CLUSTERS = Math.min(Number(args.clusters), ENTRIES);
const M = Number(args.m);
const EF_CONSTRUCTION = Number(args['ef-construction']);
const EF_VALUES = args.ef.split(',').map(Number);
const QUERIES = Number(args.queries);
const RECALL_QUERIES = Number(args['recall-queries']);
const K = 5;
function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function memory(): { rss: number; heap: number; external: number } {
  const usage = process.memoryUsage();
  return { rss: usage.rss / 2 ** 20, heap: usage.heapUsed / 2 ** 20, external: usage.external / 2 ** 20 };
}

const fmt = (value: number, digits = 2) => value.toFixed(digits);
const log = (line: string) => process.stderr.write(`${line}\n`);

// Data: clustered unit vectors, and queries that are noisy copies of stored ones.
const { gaussian } = randomSource(42);
const centres = Array.from({ length: CLUSTERS }, () => normalise(Float32Array.from({ length: DIMENSIONS }, gaussian)));
const vectors = Array.from({ length: ENTRIES }, (_, i) => perturbed(centres[i % CLUSTERS]!, CLUSTER_NOISE, gaussian));
const pick = randomSource(7).gaussian;
const queries = Array.from({ length: QUERIES }, () => {
  const source = Math.floor(Math.abs(pick() * 1e6)) % ENTRIES;
  return perturbed(vectors[source]!, QUERY_NOISE, gaussian);
});
const recallQueries = queries.slice(0, RECALL_QUERIES);
/** Harder: a new prompt on a known topic, as far from its nearest stored vector as the stored ones are from each other. */
const topicQueries = Array.from({ length: RECALL_QUERIES }, (_, i) => perturbed(centres[(i * 7) % CLUSTERS]!, CLUSTER_NOISE, gaussian));
global.gc?.();
const memoryBefore = memory();
log(`data ready: ${ENTRIES} x ${DIMENSIONS}, ${CLUSTERS} clusters`);

// Build.
let started = performance.now();
let index: VectorIndex | null = new VectorIndex(DIMENSIONS, { m: M, efConstruction: EF_CONSTRUCTION, efSearch: EF_VALUES[0] });
for (let label = 0; label < ENTRIES; label++) {
  index.add(label, vectors[label]!);
  if (label > 0 && label % 20_000 === 0) log(`  built ${label} (${fmt((performance.now() - started) / 1000, 1)} s)`);
}
const buildSeconds = (performance.now() - started) / 1000;
global.gc?.();
const memoryAfterBuild = memory();
log(`built in ${fmt(buildSeconds, 1)} s`);

// Ground truth for recall@1: brute force over every stored vector (all unit length, so dot = cosine).
function bruteForceNearest(query: Float32Array): number {
  let best = -1;
  let bestScore = -Infinity;
  for (let label = 0; label < ENTRIES; label++) {
    const score = dot(query, vectors[label]!);
    if (score > bestScore) [best, bestScore] = [label, score];
  }
  return best;
}
const truth = recallQueries.map(bruteForceNearest);
const topicTruth = topicQueries.map(bruteForceNearest);
log('brute force done');

interface SearchRow {
  ef: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  recall: number;
  topicRecall: number;
}

function measureSearch(target: VectorIndex, ef: number): SearchRow {
  target.setEfSearch(ef);
  for (const query of queries.slice(0, 200)) target.search(query, K); // warm-up
  const times: number[] = [];
  for (const query of queries) {
    const t0 = performance.now();
    target.search(query, K);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const recallOf = (set: Float32Array[], answers: number[]) =>
    set.filter((query, i) => target.search(query, 1)[0]?.label === answers[i]).length / set.length;
  return {
    ef,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    p99: percentile(times, 99),
    mean: times.reduce((a, b) => a + b, 0) / times.length,
    recall: recallOf(recallQueries, truth),
    topicRecall: recallOf(topicQueries, topicTruth),
  };
}

const searchRows = EF_VALUES.map((ef) => {
  const row = measureSearch(index!, ef);
  log(`ef ${ef}: p50 ${fmt(row.p50, 3)} ms, p99 ${fmt(row.p99, 3)} ms, recall@1 ${fmt(row.recall, 3)} / ${fmt(row.topicRecall, 3)}`);
  return row;
});

// Save, then load in place of the built index (dropped first so memory shows one index, not two).
const directory = await mkdtemp(join(tmpdir(), 'tollgate-bench-index-'));
const indexPath = join(directory, 'cache.hnsw');
let saveSeconds = 0;
let loadSeconds = 0;
let fileBytes = 0;
let sidecarBytes = 0;
let loadedSame = false;
let memoryAfterLoad = memoryAfterBuild;
try {
  const expected = queries.slice(0, 50).map((query) => index!.search(query, K));
  started = performance.now();
  await index.save(indexPath);
  saveSeconds = (performance.now() - started) / 1000;
  fileBytes = (await stat(indexPath)).size;
  sidecarBytes = (await stat(indexSidecarPath(indexPath))).size;
  log(`saved in ${fmt(saveSeconds)} s`);
  index = null;
  global.gc?.();
  started = performance.now();
  const loaded = await VectorIndex.load(indexPath, DIMENSIONS); // efSearch comes back from the sidecar
  loadSeconds = (performance.now() - started) / 1000;
  global.gc?.();
  memoryAfterLoad = memory();
  loadedSame = queries.slice(0, 50).every((query, i) => JSON.stringify(loaded.search(query, K)) === JSON.stringify(expected[i]));
  log(`loaded in ${fmt(loadSeconds)} s`);
} finally {
  await rm(directory, { recursive: true, force: true });
}

const mb = (value: number) => `${fmt(value, 0)} MB`;
const lines = [
  `### Vector index: ${ENTRIES.toLocaleString('en')} x ${DIMENSIONS}-dim clustered unit vectors (${CLUSTERS} clusters), M=${M}, efConstruction=${EF_CONSTRUCTION}`,
  '',
  `Node ${process.version}, ${process.platform}/${process.arch}, hnswlib-node 3.0.0, space 'cosine'. Search k=${K} over ${QUERIES} queries (noisy copies of stored vectors, cosine ~0.98 to the source); recall@1 against brute force on ${RECALL_QUERIES} of them ("paraphrase"), and on ${RECALL_QUERIES} fresh members of known clusters ("new prompt, known topic": cosine ~0.74 to the nearest stored vector, a much harder case).`,
  '',
  '| efSearch | p50 ms | p95 ms | p99 ms | mean ms | recall@1 paraphrase | recall@1 new prompt, known topic |',
  '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...searchRows.map((row) => `| ${row.ef} | ${fmt(row.p50, 3)} | ${fmt(row.p95, 3)} | ${fmt(row.p99, 3)} | ${fmt(row.mean, 3)} | ${fmt(row.recall, 3)} | ${fmt(row.topicRecall, 3)} |`),
  '',
  '| measure | value |',
  '| --- | ---: |',
  `| build (${ENTRIES.toLocaleString('en')} adds, one thread) | ${fmt(buildSeconds, 1)} s (${fmt((buildSeconds * 1000) / ENTRIES, 3)} ms/add) |`,
  `| save (native write + fsync + sha256 + renames) | ${fmt(saveSeconds, 2)} s |`,
  `| index file | ${mb(fileBytes / 2 ** 20)} (${fmt(fileBytes / ENTRIES, 0)} B/entry) + sidecar ${fmt(sidecarBytes / 1024, 1)} KB |`,
  `| load (sidecar + size + sha256 + header + native read) | ${fmt(loadSeconds, 2)} s |`,
  `| loaded index answers as the saved one | ${loadedSame ? 'yes' : 'NO'} |`,
  `| RSS / heap before build (test data only) | ${mb(memoryBefore.rss)} / ${mb(memoryBefore.heap)} |`,
  `| RSS / heap after build | ${mb(memoryAfterBuild.rss)} / ${mb(memoryAfterBuild.heap)} (index ≈ ${mb(memoryAfterBuild.rss - memoryBefore.rss)} RSS) |`,
  `| RSS / heap after save, drop, load | ${mb(memoryAfterLoad.rss)} / ${mb(memoryAfterLoad.heap)} |`,
];
process.stdout.write(`${lines.join('\n')}\n`);
