// A key record rewritten by every keyed request's spend commit, in a database with lmdb-js's object cache as the
// governance store opens it: read twice (auth, the reservation), then read and rewritten in the commit, ten requests'
// spends to a commit as one event-loop turn's, each request also leaving some garbage of its own (as a request does,
// so young-generation collections run). The cache as lmdb-js makes it by default (`cache: true`: every value put is
// registered with a FinalizationRegistry) against `{ deferRegister: true }` (registered only once the LRU lets it
// go), taking turns, twelve rounds of 20,000 requests. Prints CPU µs per request. Figures only.
//
//   npx tsx bench/key-record-cache.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type Database } from 'lmdb';
import { commit } from '../src/store/commit.js';
import { openRecords } from '../src/store/records.js';

const dataDir = mkdtempSync(join(tmpdir(), 'key-record-cache-'));
const root = open({ path: dataDir, noSync: true });
const at = new Date().toISOString();
const record = {
  id: 'vk_0123456789abcdef', name: 'bench', key_prefix: 'tg-abcdefg', team: null, models: [], model_rate_limits: null, budget: 1e6, budget_period: 'monthly',
  spend: 0, requests: 0, period_start: at, period_resets_at: at, rate_limit: 1e7, tokens_per_minute: 1e9, expires_at: null, disabled: false, metadata: null,
  plugins: null, cache: null, guardrails: null, mcp: null, key_hash: 'a'.repeat(64), created_at: at, updated_at: at, total_spend: 0, total_requests: 0, last_used_at: null,
};
type KeyRecord = typeof record;
const databases: Record<string, Database<KeyRecord, string>> = {
  'cache: true': openRecords<KeyRecord, string>(root, { name: 'default', cache: true }),
  'deferRegister': openRecords<KeyRecord, string>(root, { name: 'deferred', cache: { deferRegister: true } }),
};
for (const db of Object.values(databases)) await db.put(record.id, record);

let sink: unknown;
function request(db: Database<KeyRecord, string>): Promise<void> {
  sink = Array.from({ length: 150 }, (_, i) => ({ i }));
  db.get(record.id);
  db.get(record.id);
  return commit(root, () => {
    const current = db.get(record.id) as KeyRecord;
    void db.put(record.id, { ...current, spend: current.spend + 1e-6, requests: current.requests + 1, total_spend: current.total_spend + 1e-6, total_requests: current.total_requests + 1 });
  });
}

async function run(db: Database<KeyRecord, string>, requests: number): Promise<number> {
  const started = process.cpuUsage();
  for (let i = 0; i < requests; i += 10) await Promise.all(Array.from({ length: 10 }, () => request(db)));
  const used = process.cpuUsage(started);
  return (used.user + used.system) / requests;
}

for (const db of Object.values(databases)) await run(db, 5000);
const rounds: Record<string, number[]> = Object.fromEntries(Object.keys(databases).map((name) => [name, []]));
for (let round = 0; round < 12; round++) for (const [name, db] of Object.entries(databases)) rounds[name]?.push(await run(db, 20_000));
for (const [name, list] of Object.entries(rounds)) {
  const sorted = [...list].sort((a, b) => a - b);
  console.log(`${name}: median ${sorted[sorted.length >> 1]?.toFixed(2)} µs a request (rounds ${list.map((v) => v.toFixed(2)).join(', ')})`);
}
if (sink === undefined) console.log('');
await root.close();
rmSync(dataDir, { recursive: true, force: true });
