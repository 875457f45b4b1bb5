/**
 * The response cache end to end, in one run (markdown tables on stdout, progress on stderr):
 *
 * 1. Semantic lookup latency with N stored entries, embedding excluded: a fresh store is filled through
 *    CacheService.put with a fake embedder that returns precomputed clustered unit vectors at once, then
 *    CacheService.lookup is timed for paraphrases (hits), unrelated questions (misses), near vectors with other
 *    words (misses refused by the lexical check) and exact repeats.
 * 2. Start-up: a real gateway process (bench/serve-cache-gateway.ts, cache on) on that data dir: spawn to /health
 *    200, spawn to `semantic_index.state === 'ready'` in GET /api/cache, RSS; then again with the index file
 *    corrupted (the exact tier serves while a worker rebuilds the index), and once on an empty data dir.
 * 3. Exact hit against a 200 ms upstream, over HTTP through that gateway.
 * 4. The real USE lite embedder: single texts one after another, and a batch of 32.
 *
 *   npx tsx bench/cache.ts [--entries 100000] [--clusters 2000] [--queries 2000]
 *
 * The fake embedder reports USE lite's id and dimensions, so the gateway (which always embeds with USE lite)
 * adopts the stored vectors and the index file as its own; their values are synthetic, like bench/cache-index.ts's.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CacheService, type CacheLookup } from '../src/cache/cache-service.js';
import { CacheStore } from '../src/cache/cache-store.js';
import type { Embedder } from '../src/cache/embedding/embedder.js';
import { createUseLiteEmbedder, USE_LITE_DIMENSIONS, USE_LITE_ID } from '../src/cache/embedding/use-lite.js';
import { cacheKeysOf, type CacheKeys } from '../src/cache/request-key.js';
import { DEFAULTS } from '../src/config/defaults.js';
import type { ChatCompletion, ChatCompletionRequest } from '../src/core/canonical.js';
import type { CachePolicy } from '../src/core/config.js';
import { createLog } from '../src/log.js';
import { Store } from '../src/store/store.js';
import { spawnServer, type ServerChild } from './spawn-server.js';
import { CLUSTER_NOISE, QUERY_NOISE, normalise, perturbed, randomSource } from './synthetic-vectors.js';

const { values: args } = parseArgs({
  options: {
    entries: { type: 'string', default: '100000' },
    clusters: { type: 'string', default: '2000' },
    queries: { type: 'string', default: '2000' },
  },
});
const ENTRIES = Number(args.entries);
const CLUSTERS = Math.min(Number(args.clusters), ENTRIES);
const QUERIES = Number(args.queries);
if (!Number.isInteger(ENTRIES) || ENTRIES < 100) throw new Error(`--entries must be an integer >= 100, got ${args.entries}`);
if (!Number.isInteger(QUERIES) || QUERIES < 2) throw new Error(`--queries must be an integer >= 2, got ${args.queries}`);

const DIMENSIONS = USE_LITE_DIMENSIONS;
/** Puts in flight at once while filling (lmdb-js commits the writes of one batch together). */
const FILL_BATCH = 256;
/** The model and scope as the gateway's cache stage computes them for an anonymous request with no route. */
const MODEL = 'openai/gpt-4o-mini';
const SCOPE = `anonymous\u0000${MODEL}`;
const SYSTEM_PROMPT = 'You are a concise assistant for a software engineering team. Answer in plain prose.';
/** How long the upstream waits before its headers in section 3. */
const UPSTREAM_DELAY_MS = 200;
const REBUILD_CAP_MS = 5 * 60_000;
const GATEWAY_SCRIPT = fileURLToPath(new URL('./serve-cache-gateway.ts', import.meta.url));
const TSX_LOADER = import.meta.resolve('tsx');

const progress = (line: string): void => void process.stderr.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const fmt = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MB`;

// ---------------------------------------------------------------------------------------------------------------
// Data: questions from word lists (distinct, with content words for the lexical check) and clustered unit vectors.

const VERBS = ['configure', 'deploy', 'debug', 'monitor', 'migrate', 'secure', 'optimise', 'test', 'install', 'upgrade', 'restore', 'scale', 'profile', 'benchmark', 'document', 'refactor', 'package', 'containerise', 'encrypt', 'validate', 'schedule', 'audit', 'replicate', 'partition', 'throttle'];
const NOUNS = ['database', 'webhook', 'cluster', 'queue', 'cron job', 'load balancer', 'API gateway', 'message broker', 'search engine', 'object storage', 'build pipeline', 'service mesh', 'feature flag', 'rate limiter', 'session store', 'payment service', 'image resizer', 'email sender', 'audit trail', 'metrics exporter', 'secret vault', 'config server', 'CDN cache', 'websocket server', 'GraphQL schema', 'REST client', 'data warehouse', 'ETL job', 'blob uploader', 'PDF renderer', 'notification hub', 'task runner', 'identity provider', 'DNS resolver', 'reverse proxy', 'time series store', 'vector database', 'chat bot', 'report generator', 'billing engine'];
const TECHS = ['Postgres', 'Redis', 'Kafka', 'Kubernetes', 'Terraform', 'Docker', 'Nginx', 'Envoy', 'RabbitMQ', 'Elasticsearch', 'MongoDB', 'MySQL', 'SQLite', 'Cassandra', 'ClickHouse', 'Prometheus', 'Grafana', 'Jenkins', 'GitHub Actions', 'GitLab CI', 'Ansible', 'Helm', 'Istio', 'Consul', 'Vault', 'Cloudflare', 'Fastify', 'Express', 'Django', 'Flask', 'Rails', 'Spring Boot', 'Laravel', 'Node.js', 'Deno', 'Golang', 'Rust', 'Kotlin', 'Scala', 'Elixir'];
const CONTEXTS = ['startup', 'bank', 'hospital', 'school', 'retailer', 'newspaper', 'game studio', 'airline', 'insurer', 'charity', 'university', 'hotel chain', 'law firm', 'bakery', 'museum', 'football club', 'logistics company', 'city council', 'pharmacy', 'travel agency', 'car dealer', 'radio station', 'farm', 'library', 'gym'];
const COMBINATIONS = VERBS.length * NOUNS.length * TECHS.length * CONTEXTS.length; // 1,000,000
/** Odd and not a multiple of 5, so coprime with 10^6: i -> i * MIX mod 10^6 visits every combination once. */
const MIX = 387_419;
const FILLER = [
  'Keep the change small and reversible, and write down what you did so the next person can follow it.',
  'Measure before and after: a dashboard with latency, error rate and saturation tells you whether it helped.',
  'Run it first in a staging environment that mirrors production, with realistic data volumes and traffic.',
  'Automate the steps in the pipeline so that nobody has to remember them during an incident at night.',
  'Check the official documentation for the version you run; defaults change between major releases.',
  'Plan a rollback path before you start, and test it, because an untested rollback is only a hope.',
];

interface Parts {
  verb: string;
  noun: string;
  tech: string;
  context: string;
}

function partsOf(i: number): Parts {
  let k = (i * MIX) % COMBINATIONS;
  const verb = VERBS[k % VERBS.length]!;
  k = Math.floor(k / VERBS.length);
  const noun = NOUNS[k % NOUNS.length]!;
  k = Math.floor(k / NOUNS.length);
  const tech = TECHS[k % TECHS.length]!;
  k = Math.floor(k / TECHS.length);
  return { verb, noun, tech, context: CONTEXTS[k % CONTEXTS.length]! };
}

/** A stored question. */
function questionOf(i: number): string {
  const { verb, noun, tech, context } = partsOf(i);
  return `How do I ${verb} the ${noun} with ${tech} for a ${context}?`;
}

/** The same question reworded with generic words only (the lexical check lets it through). */
function paraphraseOf(i: number): string {
  const { verb, noun, tech, context } = partsOf(i);
  return `Could you please explain how I ${verb} the ${noun} with ${tech} for a ${context}`;
}

/** The same wording with another technology: a near vector, but another question (the lexical check refuses it). */
function otherWordsOf(i: number): string {
  const { verb, noun, tech, context } = partsOf(i);
  const other = TECHS[(TECHS.indexOf(tech) + 1) % TECHS.length]!;
  return `Could you please explain how I ${verb} the ${noun} with ${other} for a ${context}`;
}

/** An answer of about 500 characters. */
function answerOf(i: number): ChatCompletion {
  const { verb, noun, tech, context } = partsOf(i);
  let content = `To ${verb} the ${noun} with ${tech} for a ${context}, start from a working baseline and change one thing at a time.`;
  for (let k = 0; content.length < 480; k++) content += ` ${FILLER[(i + k) % FILLER.length]!}`;
  return {
    id: `chatcmpl-bench-${i}`,
    object: 'chat.completion',
    created: 1_764_000_000,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 38, completion_tokens: 105, total_tokens: 143 },
  };
}

function requestOf(question: string, model = MODEL): ChatCompletionRequest {
  return {
    model,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: question },
    ],
  };
}

/** Vectors by text, answered at once: lookups time the cache, not a model. */
class FakeEmbedder implements Embedder {
  readonly id = USE_LITE_ID;
  readonly dimensions = DIMENSIONS;
  constructor(private readonly vectors: ReadonlyMap<string, Float32Array>) {}

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => {
      const vector = this.vectors.get(text);
      if (!vector) throw new Error(`fake embedder: no vector for ${JSON.stringify(text.slice(0, 60))}`);
      return vector;
    });
  }

  async close(): Promise<void> {}
}

// ---------------------------------------------------------------------------------------------------------------
// Measuring.

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function summary(samples: readonly number[]): { p50: number; p95: number; p99: number; max: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN, mean };
}

function fileSize(path: string): number {
  try {
    const stats = statSync(path);
    if (!stats.isDirectory()) return stats.size;
    return readdirSync(path).reduce((sum, name) => sum + fileSize(join(path, name)), 0);
  } catch {
    return 0;
  }
}

interface Memory {
  rss: number;
  /** Anonymous memory (heaps, the native index) and file-backed pages (LMDB's memory map, code) within rss. */
  anon: number;
  file: number;
  /** VmHWM: the highest rss so far. */
  peak: number;
}

/** A process's memory from /proc/<pid>/status, in bytes. */
function processMemory(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile'), peak: field('VmHWM') };
}

const memoryText = (memory: Memory): string => `${mb(memory.rss)} (${mb(memory.anon)} + ${mb(memory.file)})`;

// ---------------------------------------------------------------------------------------------------------------
// Children and temp dirs, all released in the end (also on error or Ctrl-C).

const tempDirs: string[] = [];
const cleanups = new Set<() => Promise<void>>();

function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-cache-bench-${label}-`));
  tempDirs.push(dir);
  return dir;
}

async function cleanUp(): Promise<void> {
  await Promise.allSettled([...cleanups].map((stop) => stop()));
  cleanups.clear();
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

interface GatewayChild {
  url: string;
  pid: number;
  /** performance.now() at spawn. */
  spawnedAt: number;
  /** Spawn to the first 200 from /health. */
  servingMs: number;
  /** The child's own figures: ms from its start until the gateway modules were loaded; createGateway's duration. */
  timing: { modulesMs: number; createMs: number } | null;
  stop(): Promise<void>;
}

/** Spawns the cache gateway on a port chosen beforehand, and polls /health from the moment of the spawn. */
async function launchGateway(dataDir: string, upstreamUrl: string): Promise<GatewayChild> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const spawnedAt = performance.now();
  const child: ChildProcessByStdio<Writable, Readable, null> = spawn(
    process.execPath,
    ['--import', TSX_LOADER, GATEWAY_SCRIPT, '--port', String(port), '--upstream', upstreamUrl, '--data-dir', dataDir],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async (): Promise<void> => {
    cleanups.delete(stop);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin.end(); // serve-control closes the gateway when stdin ends
    const timer = setTimeout(() => child.kill('SIGKILL'), 8000);
    await exited;
    clearTimeout(timer);
  };
  cleanups.add(stop);
  const gateway: GatewayChild = { url, pid: child.pid ?? -1, spawnedAt, servingMs: Number.NaN, timing: null, stop };
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [kind, a, b] = line.split(' ');
    if (kind === 'timing') gateway.timing = { modulesMs: Number(a), createMs: Number(b) };
  });
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`gateway exited before serving (code ${child.exitCode}, signal ${child.signalCode})`);
    try {
      const response = await fetch(`${url}/health`);
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (performance.now() - spawnedAt > 60_000) throw new Error('gateway: /health did not answer 200 within 60 s');
    await sleep(10);
  }
  gateway.servingMs = performance.now() - spawnedAt;
  return gateway;
}

interface CacheReport {
  entries: number;
  semantic_index: { state: string; vectors: number };
  embedder: { id: string | null; state: string };
}

async function cacheReport(url: string): Promise<CacheReport> {
  const response = await fetch(`${url}/api/cache`);
  if (response.status !== 200) throw new Error(`GET /api/cache answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as CacheReport;
}

interface IndexReady {
  /** Spawn to semantic_index.state 'ready' (NaN if it failed or the cap was reached). */
  readyMs: number;
  state: string;
  vectors: number;
  entries: number;
  rssAtReady: Memory;
  /** Latencies of the GET /api/cache polls while waiting: is the event loop free meanwhile? */
  pollMs: number[];
}

/** Polls GET /api/cache until the semantic index is ready (or failed, or `capMs` after the spawn); `during` runs once meanwhile. */
async function waitForIndex(gateway: GatewayChild, capMs: number, during?: () => Promise<void>): Promise<IndexReady> {
  const pollMs: number[] = [];
  let duringDone: Promise<void> | null = null;
  for (;;) {
    const started = performance.now();
    const report = await cacheReport(gateway.url);
    pollMs.push(performance.now() - started);
    const state = report.semantic_index.state;
    if (state === 'ready' || state === 'failed') {
      await duringDone;
      const memory = processMemory(gateway.pid);
      return { readyMs: state === 'ready' ? performance.now() - gateway.spawnedAt : Number.NaN, state, vectors: report.semantic_index.vectors, entries: report.entries, rssAtReady: memory, pollMs };
    }
    if (performance.now() - gateway.spawnedAt > capMs) {
      await duringDone;
      return { readyMs: Number.NaN, state: `${state} after ${capMs / 1000} s`, vectors: report.semantic_index.vectors, entries: report.entries, rssAtReady: processMemory(gateway.pid), pollMs };
    }
    if (during && !duringDone) duringDone = during();
    await sleep(100);
  }
}

/** Waits (at most `capMs`) for the embedder to load; returns the memory then, or null. */
async function rssWithEmbedder(gateway: GatewayChild, capMs: number): Promise<{ memory: Memory | null; state: string }> {
  const deadline = performance.now() + capMs;
  for (;;) {
    const { embedder } = await cacheReport(gateway.url);
    if (embedder.state === 'ready') return { memory: processMemory(gateway.pid), state: 'ready' };
    if (embedder.state === 'failed' || performance.now() > deadline) return { memory: null, state: embedder.state };
    await sleep(100);
  }
}

interface Timed {
  ms: number;
  cache: string;
  status: number;
}

async function chat(url: string, request: ChatCompletionRequest): Promise<Timed> {
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify(request),
  });
  await response.arrayBuffer();
  return { ms: performance.now() - started, cache: response.headers.get('x-tollgate-cache') ?? '-', status: response.status };
}

function tally(results: readonly Timed[]): string {
  const counts = new Map<string, number>();
  for (const { cache, status } of results) {
    const key = status === 200 ? cache : `${cache} (HTTP ${status})`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([name, count]) => `${name} ${count}`).join(', ');
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Fill a store, time lookups.

interface QuerySet {
  name: string;
  items: Array<{ keys: CacheKeys; expected: number | null }>;
}

interface FillResult {
  dataDir: string;
  fillSeconds: number;
  saveSeconds: number;
  indexBytes: number;
  lmdbBytes: number;
  benchRss: number;
  scanSeconds: number;
  countMs: number;
  statsCountMs: number;
  sets: QuerySet[];
  results: Map<string, { ms: number[]; hits: number; right: number; skipped: number }>;
}

async function fillAndLookup(): Promise<FillResult> {
  const dataDir = tempDir('data');
  const random = randomSource(42);
  const centres = Array.from({ length: CLUSTERS }, () => normalise(Float32Array.from({ length: DIMENSIONS }, random.gaussian)));

  // Query sources: distinct stored entries, picked before the fill so only their vectors are kept.
  const pick = randomSource(7);
  const paraphraseCount = Math.ceil(QUERIES / 2);
  const unrelatedCount = QUERIES - paraphraseCount;
  const nearCount = Math.min(500, Math.ceil(QUERIES / 4));
  const exactCount = Math.min(500, Math.ceil(QUERIES / 4));
  const sources: number[] = [];
  const chosen = new Set<number>();
  const wanted = Math.min(ENTRIES, paraphraseCount + nearCount + exactCount);
  while (sources.length < wanted) {
    const id = Math.floor(pick.uniform() * ENTRIES);
    if (chosen.has(id)) continue;
    chosen.add(id);
    sources.push(id);
  }
  const kept = new Map<number, Float32Array>();

  const texts = new Map<string, Float32Array>();
  const log = createLog('silent');
  const store = await Store.open(dataDir, 'bench');
  const lmdbPath = resolve(dataDir, 'tollgate.lmdb');
  const cache = new CacheService(store.root, lmdbPath, dataDir, log, () => new FakeEmbedder(texts), { id: USE_LITE_ID, dimensions: DIMENSIONS });
  // Starts the (empty) semantic index: put() only adds vectors to an index that is loaded.
  cache.warmUp();
  while ((cache.report().semantic_index as { state: string }).state !== 'ready') await sleep(5);

  progress(`filling ${ENTRIES.toLocaleString('en')} entries (${CLUSTERS} clusters) into ${dataDir}`);
  const now = Date.now();
  const expiresAt = now + 30 * 86_400_000;
  const fillStarted = performance.now();
  for (let first = 0; first < ENTRIES; first += FILL_BATCH) {
    const puts: Promise<unknown>[] = [];
    for (let i = first; i < Math.min(ENTRIES, first + FILL_BATCH); i++) {
      const vector = perturbed(centres[i % CLUSTERS]!, CLUSTER_NOISE, random.gaussian);
      if (chosen.has(i)) kept.set(i, vector);
      const question = questionOf(i);
      const keys = cacheKeysOf(requestOf(question), SCOPE);
      puts.push(
        cache.put(
          {
            exactKey: keys.exact,
            semanticScope: keys.semanticScope,
            question: keys.question,
            model: MODEL,
            keyId: null,
            teamId: null,
            answer: answerOf(i),
            provider: 'openai',
            upstreamModel: 'gpt-4o-mini',
            costUsd: 0.00007,
            createdAt: now,
            expiresAt,
          },
          vector,
          keys.conversation,
        ),
      );
    }
    await Promise.all(puts);
    if ((first + FILL_BATCH) % 10_240 === 0) progress(`  ${(first + FILL_BATCH).toLocaleString('en')} (${fmt((performance.now() - fillStarted) / 1000, 1)} s)`);
  }
  const fillSeconds = (performance.now() - fillStarted) / 1000;
  const report = cache.report() as { entries: number; semantic_index: { vectors: number } };
  if (report.entries !== ENTRIES || report.semantic_index.vectors !== ENTRIES) {
    throw new Error(`after the fill: ${report.entries} entries, ${report.semantic_index.vectors} vectors; expected ${ENTRIES}`);
  }
  progress(`filled in ${fmt(fillSeconds, 1)} s`);

  // Queries. Each text's vector is registered with the fake embedder.
  const noise = randomSource(99);
  const sets: QuerySet[] = [];
  const keysFor = (question: string, vector: Float32Array): CacheKeys => {
    texts.set(question, vector);
    return cacheKeysOf(requestOf(question), SCOPE);
  };
  const bySource = (ids: number[], text: (i: number) => string) =>
    ids.map((id) => ({ keys: keysFor(text(id), perturbed(kept.get(id)!, QUERY_NOISE, noise.gaussian)), expected: id }));
  const paraphraseIds = sources.slice(0, paraphraseCount);
  const nearIds = sources.slice(paraphraseCount, paraphraseCount + nearCount);
  const exactIds = sources.slice(paraphraseCount + nearCount);
  sets.push({ name: 'paraphrase: same words reworded, vector cosine ~0.98 to its source', items: bySource(paraphraseIds, paraphraseOf) });
  sets.push({
    name: 'unrelated: new question, random direction',
    items: Array.from({ length: unrelatedCount }, (_, k) => ({
      keys: keysFor(`Which bird migrates the furthest from colony ${k} of the ${CONTEXTS[k % CONTEXTS.length]!} survey?`, normalise(Float32Array.from({ length: DIMENSIONS }, noise.gaussian))),
      expected: null,
    })),
  });
  sets.push({ name: 'near vector, other words (lexical check refuses)', items: bySource(nearIds, otherWordsOf) });
  sets.push({ name: 'exact repeat of a stored question', items: exactIds.map((id) => ({ keys: cacheKeysOf(requestOf(questionOf(id)), SCOPE), expected: id })) });

  const policy: CachePolicy = { mode: 'on', ttlSeconds: 3600, scope: 'team', cacheSampled: false, semantic: true, threshold: DEFAULTS.cacheSemanticThreshold };
  // Interleaved in a fixed shuffled order, after a warm-up over a slice of them.
  const order = sets.flatMap((set) => set.items.map((item) => ({ set: set.name, ...item })));
  const shuffle = randomSource(3);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(shuffle.uniform() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  for (const query of order.slice(0, 200)) await cache.lookup(query.keys, policy, Date.now());
  const results = new Map(sets.map((set) => [set.name, { ms: [] as number[], hits: 0, right: 0, skipped: 0 }]));
  progress(`timing ${order.length} lookups`);
  for (const query of order) {
    const started = performance.now();
    const lookup: CacheLookup = await cache.lookup(query.keys, policy, Date.now());
    const ms = performance.now() - started;
    const result = results.get(query.set)!;
    result.ms.push(ms);
    if (lookup.hit) result.hits++;
    if (lookup.hit && query.expected !== null && lookup.hit.entry.question === questionOf(query.expected)) result.right++;
    if (lookup.semanticSkipped !== null) result.skipped++;
  }

  // What DELETE /api/cache does first, on the event loop: read every entry.
  const cacheStore = new CacheStore(store.root);
  const scanStarted = performance.now();
  let scanned = 0;
  for (const entry of cacheStore.all()) if (entry.id > 0) scanned++;
  const scanSeconds = (performance.now() - scanStarted) / 1000;
  if (scanned !== ENTRIES) throw new Error(`scan read ${scanned} entries`);
  // CacheStore.count, which every put reads (to decide on eviction) and GET /api/cache reports.
  const countStarted = performance.now();
  for (let k = 0; k < 20; k++) if (cacheStore.count !== ENTRIES) throw new Error('count changed');
  const countMs = (performance.now() - countStarted) / 20;
  // The same number from the B-tree's header, for comparison.
  const entriesDb = store.root.openDB<unknown, number>({ name: 'cache-entries' });
  const statsStarted = performance.now();
  for (let k = 0; k < 20; k++) if ((entriesDb.getStats() as { entryCount: number }).entryCount !== ENTRIES) throw new Error('entryCount differs');
  const statsCountMs = (performance.now() - statsStarted) / 20;

  const benchRss = process.memoryUsage().rss;
  const saveStarted = performance.now();
  await cache.close();
  const saveSeconds = (performance.now() - saveStarted) / 1000;
  await store.close();
  const indexFile = readdirSync(resolve(dataDir, 'cache')).find((name) => /^semantic-.*\.hnsw$/.test(name));
  return {
    dataDir,
    fillSeconds,
    saveSeconds,
    indexBytes: indexFile ? fileSize(resolve(dataDir, 'cache', indexFile)) : 0,
    lmdbBytes: fileSize(lmdbPath),
    benchRss,
    scanSeconds,
    countMs,
    statsCountMs,
    sets,
    results,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 2 and 3. The gateway process.

interface StartRun {
  label: string;
  gateway: GatewayChild;
  ready: IndexReady;
  embedder: { memory: Memory | null; state: string };
}

function startRow(run: StartRun): string {
  const { gateway, ready } = run;
  return `| ${run.label} | ${fmt(gateway.servingMs, 0)} | ${gateway.timing ? fmt(gateway.timing.modulesMs, 0) : 'n/a'} | ${gateway.timing ? fmt(gateway.timing.createMs, 0) : 'n/a'} | ${ready.state === 'ready' ? fmt(ready.readyMs, 0) : ready.state} | ${ready.entries.toLocaleString('en')} / ${ready.vectors.toLocaleString('en')} | ${memoryText(ready.rssAtReady)} | ${run.embedder.memory ? memoryText(run.embedder.memory) : run.embedder.state} | ${mb((run.embedder.memory ?? ready.rssAtReady).peak)} |`;
}

async function corruptIndex(dataDir: string): Promise<string> {
  const dir = resolve(dataDir, 'cache');
  const name = readdirSync(dir).find((file) => /^semantic-.*\.hnsw$/.test(file));
  if (!name) throw new Error(`no semantic-*.hnsw in ${dir}`);
  const path = resolve(dir, name);
  const file = await openFile(path, 'r+');
  try {
    const { size } = await file.stat();
    // Same size, other bytes: the sidecar's sha256 no longer matches.
    await file.write(Buffer.alloc(4096, 0xa5), 0, 4096, Math.floor(size / 2));
  } finally {
    await file.close();
  }
  return name;
}

async function main(): Promise<void> {
  const benchStarted = performance.now();
  console.log(`# Response cache bench (\`bench/cache.ts\`)\n`);
  console.log(
    `Node ${process.version}, ${process.platform}/${process.arch}; ${ENTRIES.toLocaleString('en')} entries, ${DIMENSIONS}-dim clustered unit vectors (${CLUSTERS} clusters), ` +
      `threshold ${DEFAULTS.cacheSemanticThreshold}; ${new Date().toISOString().slice(0, 10)}`,
  );

  // 1.
  const fill = await fillAndLookup();
  console.log(`\n## 1. Semantic lookup with ${ENTRIES.toLocaleString('en')} entries (CacheService.lookup, fake embedder: no model time)\n`);
  console.log('| query set | lookups | hits | hit rate | hit the source entry | p50 ms | p95 ms | p99 ms | max ms |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const set of fill.sets) {
    const result = fill.results.get(set.name)!;
    const s = summary(result.ms);
    const expectsHits = set.items.some((item) => item.expected !== null);
    console.log(
      `| ${set.name} | ${result.ms.length} | ${result.hits} | ${fmt(result.hits / result.ms.length, 3)} | ${expectsHits ? fmt(result.right / Math.max(1, result.hits), 3) : '-'} | ${fmt(s.p50, 3)} | ${fmt(s.p95, 3)} | ${fmt(s.p99, 3)} | ${fmt(s.max, 3)} |`,
    );
  }
  const skipped = [...fill.results.values()].reduce((sum, result) => sum + result.skipped, 0);
  const all = summary([...fill.results.values()].flatMap((result) => result.ms));
  console.log(`| all of the above | ${[...fill.results.values()].reduce((sum, r) => sum + r.ms.length, 0)} | | | | ${fmt(all.p50, 3)} | ${fmt(all.p95, 3)} | ${fmt(all.p99, 3)} | ${fmt(all.max, 3)} |`);
  console.log(`\nLookups that skipped the semantic tier: ${skipped}.\n`);
  console.log('| fill and store | value |');
  console.log('| --- | ---: |');
  console.log(`| fill: ${ENTRIES.toLocaleString('en')} x CacheService.put (${FILL_BATCH} in flight; VectorIndex.add on the main thread) | ${fmt(fill.fillSeconds, 1)} s (${fmt((fill.fillSeconds * 1000) / ENTRIES, 3)} ms/put) |`);
  console.log(`| CacheService.close (index saved) | ${fmt(fill.saveSeconds, 2)} s |`);
  console.log(`| index file | ${mb(fill.indexBytes)} |`);
  console.log(`| LMDB (whole data file, cache and the rest) | ${mb(fill.lmdbBytes)} |`);
  console.log(`| bench process RSS after the fill (its test data included) | ${mb(fill.benchRss)} |`);
  console.log(`| read every entry (CacheStore.all(): what DELETE /api/cache does first, synchronously) | ${fmt(fill.scanSeconds, 2)} s |`);
  console.log(`| CacheStore.count (LMDB getCount; read by every put and by GET /api/cache) | ${fmt(fill.countMs, 3)} ms |`);
  console.log(`| the same count from getStats().entryCount | ${fmt(fill.statsCountMs, 3)} ms |`);

  // 2.
  progress('start-up: upstream, then gateways');
  const upstream: ServerChild = await spawnServer('upstream', './serve-upstream.ts', ['--port', '0']);
  cleanups.add(() => upstream.stop());
  const runs: StartRun[] = [];

  const emptyDir = tempDir('empty');
  {
    const gateway = await launchGateway(emptyDir, upstream.url);
    const ready = await waitForIndex(gateway, 60_000);
    const embedder = await rssWithEmbedder(gateway, 60_000);
    runs.push({ label: 'empty data dir', gateway, ready, embedder });
    await gateway.stop();
    rmSync(emptyDir, { recursive: true, force: true });
  }
  progress(`  empty: serving ${fmt(runs[0]!.gateway.servingMs, 0)} ms`);
  {
    const gateway = await launchGateway(fill.dataDir, upstream.url);
    const ready = await waitForIndex(gateway, 60_000);
    const embedder = await rssWithEmbedder(gateway, 60_000);
    runs.push({ label: `${ENTRIES.toLocaleString('en')} entries, index file valid`, gateway, ready, embedder });
    await gateway.stop();
  }
  progress(`  valid index: serving ${fmt(runs[1]!.gateway.servingMs, 0)} ms, index ready ${fmt(runs[1]!.ready.readyMs, 0)} ms`);

  const corrupted = await corruptIndex(fill.dataDir);
  progress(`  corrupted ${corrupted}; waiting for the rebuild (cap ${REBUILD_CAP_MS / 60_000} min)`);
  const duringRebuild: Timed[] = [];
  let rebuildState = '';
  const gateway = await launchGateway(fill.dataDir, upstream.url);
  try {
    const ready = await waitForIndex(gateway, REBUILD_CAP_MS, async () => {
      // Stored questions asked again over HTTP while the worker rebuilds: the exact tier answers them.
      const report = await cacheReport(gateway.url);
      rebuildState = report.semantic_index.state;
      for (let k = 0; k < 50; k++) duringRebuild.push(await chat(gateway.url, requestOf(questionOf((k * 7919) % ENTRIES))));
    });
    const embedder = await rssWithEmbedder(gateway, 60_000);
    runs.push({ label: `${ENTRIES.toLocaleString('en')} entries, index file corrupt (rebuilt in a worker)`, gateway, ready, embedder });

    console.log(`\n## 2. Start-up of a gateway process (cache on, semantic on)\n`);
    console.log('| data dir | spawn → /health 200 ms | of which module load (child) ms | createGateway ms | spawn → index ready ms | entries / vectors | RSS at index ready (anon + file) | RSS with embedder loaded (anon + file) | peak RSS |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const run of runs) console.log(startRow(run));
    const polls = summary(runs[2]!.ready.pollMs);
    const hits = summary(duringRebuild.map((result) => result.ms));
    console.log(`\nWhile the index was rebuilt (state \`${rebuildState}\` when the requests started):\n`);
    console.log('| during the rebuild | n | p50 ms | p99 ms | max ms | x-tollgate-cache |');
    console.log('| --- | ---: | ---: | ---: | ---: | --- |');
    console.log(`| GET /api/cache (polled every 100 ms) | ${runs[2]!.ready.pollMs.length} | ${fmt(polls.p50, 2)} | ${fmt(polls.p99, 2)} | ${fmt(polls.max, 2)} | |`);
    console.log(`| POST /v1/chat/completions, stored questions | ${duringRebuild.length} | ${fmt(hits.p50, 2)} | ${fmt(hits.p99, 2)} | ${fmt(hits.max, 2)} | ${tally(duringRebuild)} |`);

    // 3. On the same gateway, index ready: exact hits against a 200 ms upstream.
    progress('exact hit vs upstream');
    const model = `openai/slow-headers-${UPSTREAM_DELAY_MS}`;
    const missQuestion = (k: number): string => `Bench question ${k}: how do I rotate the ${NOUNS[k % NOUNS.length]!} credentials with ${TECHS[k % TECHS.length]!}?`;
    await chat(gateway.url, requestOf('Warm-up question about HTTP caching headers', model));
    const misses: Timed[] = [];
    for (let k = 0; k < 50; k++) misses.push(await chat(gateway.url, requestOf(missQuestion(k), model)));
    await sleep(500); // answers are stored once the response has ended
    const repeats: Timed[] = [];
    for (let k = 0; k < 200; k++) repeats.push(await chat(gateway.url, requestOf(missQuestion(k % 50), model)));
    const miss = summary(misses.map((result) => result.ms));
    const hit = summary(repeats.map((result) => result.ms));
    console.log(`\n## 3. Exact hit against a ${UPSTREAM_DELAY_MS} ms upstream (HTTP through the gateway, ${ENTRIES.toLocaleString('en')} entries, sequential)\n`);
    console.log('| request | n | p50 ms | p99 ms | mean ms | x-tollgate-cache |');
    console.log('| --- | ---: | ---: | ---: | ---: | --- |');
    console.log(`| first ask (distinct questions; upstream waits ${UPSTREAM_DELAY_MS} ms before headers) | ${misses.length} | ${fmt(miss.p50, 2)} | ${fmt(miss.p99, 2)} | ${fmt(miss.mean, 2)} | ${tally(misses)} |`);
    console.log(`| repeat (exact hit) | ${repeats.length} | ${fmt(hit.p50, 2)} | ${fmt(hit.p99, 2)} | ${fmt(hit.mean, 2)} | ${tally(repeats)} |`);
    console.log(`| first ask / repeat | | ${fmt(miss.p50 / hit.p50, 0)}x | ${fmt(miss.p99 / hit.p99, 0)}x | ${fmt(miss.mean / hit.mean, 0)}x | |`);
  } finally {
    await gateway.stop();
    await upstream.stop();
    cleanups.clear();
  }
  rmSync(fill.dataDir, { recursive: true, force: true });

  // 4.
  progress('USE lite embedder');
  const embedder = createUseLiteEmbedder();
  cleanups.add(() => embedder.close());
  const loadStarted = performance.now();
  await embedder.ready();
  const loadMs = performance.now() - loadStarted;
  for (let k = 0; k < 10; k++) await embedder.embed([paraphraseOf(ENTRIES + k)]);
  const singles: number[] = [];
  for (let k = 0; k < 200; k++) {
    const started = performance.now();
    await embedder.embed([questionOf(k * 13)]);
    singles.push(performance.now() - started);
  }
  const batches: number[] = [];
  for (let b = 0; b < 5; b++) {
    const texts = Array.from({ length: 32 }, (_, k) => paraphraseOf(1000 + b * 32 + k));
    const started = performance.now();
    const vectors = await embedder.embed(texts);
    batches.push(performance.now() - started);
    if (vectors.length !== 32) throw new Error(`a batch of 32 gave ${vectors.length} vectors`);
  }
  await embedder.close();
  cleanups.clear();
  const single = summary(singles);
  const batch = summary(batches);
  console.log(`\n## 4. USE lite embedder (${USE_LITE_ID}, in its worker thread, measured from the calling thread)\n`);
  console.log('| measure | n | p50 ms | p99 ms | mean ms | per text ms |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  console.log(`| model load (worker start to ready) | 1 | ${fmt(loadMs, 0)} | | | |`);
  console.log(`| one text per call, sequential | ${singles.length} | ${fmt(single.p50, 2)} | ${fmt(single.p99, 2)} | ${fmt(single.mean, 2)} | ${fmt(single.mean, 2)} |`);
  console.log(`| one call of 32 texts (first batch: ${fmt(batches[0]!, 1)} ms) | ${batches.length} | ${fmt(batch.p50, 2)} | ${fmt(batch.p99, 2)} | ${fmt(batch.mean, 2)} | ${fmt(batch.p50 / 32, 2)} |`);
  console.log(`\nTotal bench time ${fmt((performance.now() - benchStarted) / 1000, 0)} s.`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping children, removing temp dirs`);
    void cleanUp().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
