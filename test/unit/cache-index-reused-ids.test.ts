// The semantic index file is saved every 30 s and at shutdown, so after a kill -9 it may still hold the vectors of
// entries deleted since. Entry ids continue from the highest one stored, so a deleted newest entry's id is given again
// after the restart, and an answer stored before the index finished loading (a large index loads for a while, and
// the cache serves meanwhile) takes that id. The loaded index must then hold the new entry's vector, not the old one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { CacheService } from '../../src/cache/cache-service.js';
import { CacheStore } from '../../src/cache/cache-store.js';
import type { Embedder } from '../../src/cache/embedding/embedder.js';
import type { CachePolicy } from '../../src/core/config.js';
import type { ChatCompletion } from '../../src/core/canonical.js';
import { createLog } from '../../src/log.js';

let dir: string;
let root: RootDatabase;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cache-ids-'));
  root = open({ path: join(dir, 'tollgate.lmdb'), maxDbs: 32, compression: false, noSync: true });
});
afterEach(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One axis per topic, so only the same topic is similar. */
const AXES = ['cats', 'dogs', 'birds'];
const fakeEmbedder = (): Embedder => ({
  id: 'fake-axes',
  dimensions: AXES.length,
  embed: (texts: string[]) => Promise.resolve(texts.map((text) => Float32Array.from(AXES, (topic) => (text.includes(topic) ? 1 : 0)))),
  close: () => Promise.resolve(),
});
const policy: CachePolicy = { mode: 'on', ttlSeconds: 3600, scope: 'global', cacheSampled: false, semantic: true, threshold: 0.9 } as CachePolicy;

function service(): CacheService {
  return new CacheService(root, join(dir, 'tollgate.lmdb'), dir, createLog('silent'), fakeEmbedder, { id: 'fake-axes', dimensions: AXES.length });
}

function keys(question: string, variant = '') {
  return { exact: `exact:${question}${variant}`, semanticScope: 'scope', conversation: question, question };
}

async function store(cache: CacheService, question: string): Promise<number> {
  const answer = { id: question, object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: `about ${question}` }, finish_reason: 'stop' }] } as unknown as ChatCompletion;
  const now = Date.now();
  const entry = await cache.put(
    { exactKey: keys(question).exact, semanticScope: 'scope', question, model: 'openai/m', keyId: null, teamId: null, answer, provider: 'openai', upstreamModel: 'm', costUsd: 0.01, createdAt: now, expiresAt: now + 3_600_000 },
    null,
    question,
  );
  if (!entry) throw new Error('the answer was not stored');
  return entry.id;
}

/** Starts the index (a lookup does) and waits until it is loaded and reconciled with the store. */
async function indexReady(cache: CacheService): Promise<void> {
  await cache.lookup(keys('warm up'), policy, Date.now());
  for (let i = 0; i < 500 && cache.loading().includes('cache_semantic_index'); i++) await new Promise((done) => setTimeout(done, 10));
  expect(cache.loading()).not.toContain('cache_semantic_index');
}

it('an answer stored under a reused id before the index loaded is found by its own vector, not the deleted entry’s', async () => {
  const first = service();
  await indexReady(first);
  expect(await store(first, 'tell me about cats')).toBe(1);
  expect(await store(first, 'tell me about dogs')).toBe(2);
  await first.close(); // the index file now holds labels 1 (cats) and 2 (dogs)

  // The dogs entry is deleted and the process killed before the next index save: the store lacks entry 2, the file has it.
  await new CacheStore(root).remove([2]);

  const second = service();
  // Stored while the index has not loaded yet: it gets id 2 again, with another vector.
  expect(await store(second, 'tell me about birds')).toBe(2);
  await indexReady(second);

  const birds = await second.lookup(keys('tell me about birds', ' (asked again)'), policy, Date.now());
  expect(birds.semanticSkipped).toBeNull();
  expect(birds.hit?.tier).toBe('semantic');
  expect(birds.hit?.entry.question).toBe('tell me about birds');
  const dogs = await second.lookup(keys('tell me about dogs', ' (asked again)'), policy, Date.now());
  expect(dogs.hit).toBeNull();
  await second.close();
});
