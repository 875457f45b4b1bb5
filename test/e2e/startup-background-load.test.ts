// Start-up with existing data: the cache's semantic index loads in the background, the gateway serves meanwhile
// (the cache answers as a miss, never blocks or errors), and /health names the load until it is done.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillCache } from '../../bench/cache-fill.js';
import { spawnMain } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const HOLD = pathToFileURL(join(import.meta.dirname, '../helpers/hold-cache-index.mjs')).href;
const ENTRIES = 5_000;

let upstream: ScriptedUpstream;
let cwd: string;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-start', chunkDelayMs: 0 });
  cwd = mkdtempSync(join(tmpdir(), 'tollgate-startup-'));
  await fillCache(join(cwd, 'data'), ENTRIES);
}, 60_000);
afterAll(async () => {
  await upstream?.close();
  rmSync(cwd, { recursive: true, force: true });
});

interface Health {
  status: string;
  loading: string[];
}

const getJson = async <T>(url: string): Promise<T> => (await (await fetch(url)).json()) as T;

describe('start-up with a full cache', () => {
  it('serves chat requests while the semantic index loads, and /health says when the load is done', async () => {
    const configPath = join(cwd, 'tollgate.config.json');
    writeFileSync(configPath, JSON.stringify({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-start' } },
      cache: { mode: 'on', max_entries: ENTRIES * 2, semantic: { enabled: true } },
    }));
    const release = join(cwd, 'release-index');
    const gateway = await spawnMain({ cwd, env: { TOLLGATE_CONFIG: configPath, TOLLGATE_TEST_RELEASE_INDEX: release }, imports: [HOLD] });
    try {
      const before = await getJson<Health>(`${gateway.url}/health`);
      expect(before.status).toBe('ok');
      expect(before.loading).toContain('cache_semantic_index');

      // The index is held mid-load: the request is served, from the provider, the cache counting it a miss.
      const res = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'What is served while the index loads?' }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-tollgate-cache')).toBe('miss');
      expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
      const during = await getJson<{ semantic_index: { state: string } }>(`${gateway.url}/api/cache`);
      expect(during.semantic_index.state).toBe('loading');
      expect((await getJson<Health>(`${gateway.url}/health`)).loading).toContain('cache_semantic_index');

      writeFileSync(release, '');
      const deadline = Date.now() + 30_000;
      let after = await getJson<Health>(`${gateway.url}/health`);
      while (after.loading.length > 0 && Date.now() < deadline) {
        await new Promise((done) => setTimeout(done, 100));
        after = await getJson<Health>(`${gateway.url}/health`);
      }
      expect(after.loading).toEqual([]);
      const loaded = await getJson<{ semantic_index: { state: string; vectors: number } }>(`${gateway.url}/api/cache`);
      expect(loaded.semantic_index.state).toBe('ready');
      expect(loaded.semantic_index.vectors).toBeGreaterThanOrEqual(ENTRIES);
    } finally {
      gateway.child.kill('SIGTERM');
      expect((await gateway.exit).code).toBe(0);
    }
  }, 60_000);
});
