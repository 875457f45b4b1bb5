/**
 * What recording a cache hit costs (CacheStore.touch: the entry's place in the eviction order), for an answer of a
 * usual size and a long one: a fresh store, one entry, `--hits` hits recorded one after another, each committed
 * before the next (as hits spread over time are), CPU of this process per hit.
 *
 *   npx tsx bench/cache-touch.ts [--hits 2000]
 *
 * Run it in a worktree of an earlier commit as well to compare (the store's API is the same).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CacheStore, type CacheEntry } from '../src/cache/cache-store.js';
import { Store } from '../src/store/store.js';

const { values } = parseArgs({ options: { hits: { type: 'string', default: '2000' } } });
const hits = Number(values.hits);

async function measure(label: string, contentChars: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-touch-'));
  const store = await Store.open(dir, 'bench');
  try {
    const cache = new CacheStore(store.root);
    const entry = {
      id: cache.newId(),
      exactKey: 'k',
      semanticScope: 's',
      question: 'what is the capital of France?',
      model: 'openai/gpt-4o-mini',
      keyId: null,
      teamId: null,
      vector: null,
      embedder: null,
      answer: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'x'.repeat(contentChars) }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 12, completion_tokens: Math.ceil(contentChars / 4), total_tokens: 12 + Math.ceil(contentChars / 4) },
      },
      provider: 'openai',
      upstreamModel: 'gpt-4o-mini',
      costUsd: 0.0001,
      createdAt: 1,
      expiresAt: Date.now() + 3_600_000,
      usedAt: 1,
      hits: 0,
    } as unknown as CacheEntry;
    await cache.put(entry);
    const rounds = Math.max(20, Math.round(hits / Math.max(1, contentChars / 20_000)));
    const started = process.cpuUsage();
    const wall = performance.now();
    for (let at = 2; at < rounds + 2; at++) {
      cache.touch(entry, at);
      await cache.touchesSettled();
    }
    const cpu = process.cpuUsage(started);
    console.log(`| ${label} | ${rounds} | ${((cpu.user + cpu.system) / rounds).toFixed(1)} | ${(((performance.now() - wall) * 1000) / rounds).toFixed(1)} |`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log('| entry | hits | CPU µs a hit | wall µs a hit |\n| --- | ---: | ---: | ---: |');
await measure('a 1 KB answer', 1_000);
await measure('a 1 MiB answer', 1 << 20);
