// CacheService.lookup answers without a promise when no embedding is waited for (an exact hit, a miss with the
// semantic tier off or not ready), so the cache stage serves those without a microtask hop; a semantic search
// still resolves later, with the same answers as before.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { CacheService } from '../../src/cache/cache-service.js';
import type { Embedder } from '../../src/cache/embedding/embedder.js';
import type { CachePolicy } from '../../src/core/config.js';
import type { ChatCompletion } from '../../src/core/canonical.js';
import { createLog } from '../../src/log.js';

let dir: string;
let root: RootDatabase;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cache-lookup-'));
  root = open({ path: join(dir, 'tollgate.lmdb'), maxDbs: 32, compression: false, noSync: true });
});
afterEach(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

const AXES = ['cats', 'dogs'];
const fakeEmbedder = (): Embedder => ({
  id: 'fake-axes',
  dimensions: AXES.length,
  embed: (texts: string[]) => Promise.resolve(texts.map((text) => Float32Array.from(AXES, (topic) => (text.includes(topic) ? 1 : 0)))),
  close: () => Promise.resolve(),
});
const exactOnly = { mode: 'on', ttlSeconds: 3600, scope: 'global', cacheSampled: false, semantic: false, threshold: 0.9 } as CachePolicy;
const semantic = { ...exactOnly, semantic: true } as CachePolicy;

const service = (): CacheService => new CacheService(root, join(dir, 'tollgate.lmdb'), dir, createLog('silent'), fakeEmbedder, { id: 'fake-axes', dimensions: AXES.length });
const keys = (question: string, variant = '') => ({ exact: `exact:${question}${variant}`, semanticScope: 'scope', conversation: question, question });

async function store(cache: CacheService, question: string): Promise<void> {
  const answer = { id: question, object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: `about ${question}` }, finish_reason: 'stop' }] } as unknown as ChatCompletion;
  const now = Date.now();
  const entry = await cache.put(
    { exactKey: keys(question).exact, semanticScope: 'scope', question, model: 'openai/m', keyId: null, teamId: null, answer, provider: 'openai', upstreamModel: 'm', costUsd: 0.01, createdAt: now, expiresAt: now + 3_600_000 },
    null,
    question,
  );
  if (!entry) throw new Error('the answer was not stored');
}

it('answers an exact hit and a miss that searches no semantic tier synchronously', async () => {
  const cache = service();
  await store(cache, 'tell me about cats');
  const hit = cache.lookup(keys('tell me about cats'), exactOnly, Date.now());
  expect(hit).not.toBeInstanceOf(Promise);
  expect((hit as Awaited<typeof hit>).hit?.tier).toBe('exact');
  const miss = cache.lookup(keys('tell me about dogs'), exactOnly, Date.now());
  expect(miss).not.toBeInstanceOf(Promise);
  expect(miss).toEqual({ hit: null, vector: null, semanticSkipped: 'semantic tier off' });
  // With the semantic tier on but its index still loading, the miss does not wait either.
  const loading = cache.lookup(keys('tell me about dogs'), semantic, Date.now());
  expect(loading).not.toBeInstanceOf(Promise);
  expect((loading as Awaited<typeof loading>).semanticSkipped).toBe('index loading');
  // An expired answer is a miss, as before.
  const expired = cache.lookup(keys('tell me about cats'), exactOnly, Date.now() + 3_601_000);
  expect((expired as Awaited<typeof expired>).hit).toBeNull();
  await cache.close();
});

it('still searches the semantic tier, asynchronously, once its index is ready', async () => {
  const cache = service();
  await store(cache, 'tell me about cats');
  void cache.lookup(keys('warm up'), semantic, Date.now());
  await expect.poll(() => (cache.report().semantic_index as { state: string }).state, { timeout: 20_000 }).toBe('ready');
  await expect.poll(() => (cache.report().semantic_index as { vectors: number }).vectors, { timeout: 20_000 }).toBe(1);
  const found = cache.lookup(keys('tell me about cats', ' (asked again)'), semantic, Date.now());
  expect(found).toBeInstanceOf(Promise);
  const lookup = await found;
  expect(lookup.hit?.tier).toBe('semantic');
  expect(lookup.hit?.entry.question).toBe('tell me about cats');
  expect(lookup.vector).not.toBeNull();
  await cache.close();
});

it('replaces the answer stored under the same exact key, and counts it once', async () => {
  const cache = service();
  await store(cache, 'tell me about cats');
  const first = cache.lookup(keys('tell me about cats'), exactOnly, Date.now()) as Awaited<ReturnType<CacheService['lookup']>>;
  await store(cache, 'tell me about cats');
  const second = cache.lookup(keys('tell me about cats'), exactOnly, Date.now()) as Awaited<ReturnType<CacheService['lookup']>>;
  expect(second.hit?.entry.id).toBeGreaterThan(first.hit?.entry.id ?? Number.POSITIVE_INFINITY);
  expect(cache.report().entries).toBe(1);
  await cache.close();
});
