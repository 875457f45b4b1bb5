// What keeping a database's record shapes once (src/store/records.ts) saves, in process: a request-log entry and a
// virtual-key record (as the spend commit rewrites it) written and read in LMDB with every record carrying its own
// field names (how tollgate stored them before) and with the shapes kept once, in rounds taking turns in one run.
// Figures only.
//
//   npx tsx bench/record-shapes.ts [--records 20000] [--rounds 3]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { RequestLogEntry } from '../src/governance/types.js';
import { RECORD_SHAPES_KEY } from '../src/store/records.js';
import { entryAt } from './request-log-fill.js';

const { values } = parseArgs({ options: { records: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' } } });
const total = Number(values.records);
const rounds = Number(values.rounds);

/** A virtual key's record as the store keeps it (the spend commit writes it whole on every keyed request). */
const KEY = {
  id: 'key_4f0c2a', name: 'bench', key_prefix: 'sk-tg-4f0c', key_hash: 'c'.repeat(64), team: null, models: null, model_rate_limits: null,
  budget: 1_000_000, budget_period: 'monthly', spend: 0.1, requests: 5, period_start: '2026-11-01T00:00:00.000Z',
  period_resets_at: '2026-12-01T00:00:00.000Z', rate_limit: 10_000_000, tokens_per_minute: 1_000_000_000, expires_at: null, disabled: false,
  metadata: {}, plugins: null, cache: null, guardrails: null, mcp: null, total_spend: 0.1, total_requests: 5,
  created_at: '2026-11-27T00:00:00.000Z', updated_at: '2026-11-27T00:00:00.000Z',
};

/** A request-log entry as the log-scale bench fills them (the fields the request-log subscriber writes). */
function logEntry(n: number): RequestLogEntry {
  const at = 1_795_000_000_000 + n;
  return entryAt(at, `${String(at).padStart(15, '0')}-000001`);
}

interface Variant {
  label: string;
  root: RootDatabase;
  log: Database<RequestLogEntry, string>;
  keys: Database<Record<string, unknown>, string>;
  dir: string;
}

function variant(label: string, shapes: boolean): Variant {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-shapes-'));
  const root = open({ path: join(dir, 'tollgate.lmdb'), maxDbs: 8, compression: false, noSync: true });
  const options = shapes ? { sharedStructuresKey: RECORD_SHAPES_KEY } : {};
  return {
    label,
    root,
    dir,
    log: root.openDB({ name: 'request-log', ...options }),
    keys: root.openDB({ name: 'keys', cache: true, ...options }),
  };
}

function cpuMicros(work: () => void): number {
  const started = process.cpuUsage();
  work();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / total;
}

const variants = [variant('field names in every record (before)', false), variant('shapes kept once (after)', true)];
const rows = new Map<string, string[]>();
for (let round = 0; round < rounds; round++) {
  for (const v of variants) {
    const base = round * total;
    // Ten log entries a commit and three key rewrites a commit: about what a gateway at a few thousand requests a second batches.
    const logPut = cpuMicros(() => {
      for (let i = 0; i < total; i += 10) v.root.transactionSync(() => {
        for (let j = 0; j < 10; j++) {
          const entry = logEntry(base + i + j);
          void v.log.put(entry.id, entry);
        }
      });
    });
    const keyPut = cpuMicros(() => {
      for (let i = 0; i < total; i += 3) v.root.transactionSync(() => {
        for (let j = 0; j < 3; j++) void v.keys.put(KEY.id, { ...KEY, requests: i + j });
      });
    });
    const ids = Array.from({ length: total }, (_, i) => logEntry(base + i).id);
    const logGet = cpuMicros(() => {
      for (const id of ids) v.log.get(id);
    });
    const bytes = v.log.getBinary(logEntry(base).id)?.length ?? 0;
    const cells = rows.get(v.label) ?? [];
    cells.push(`${logPut.toFixed(2)} / ${keyPut.toFixed(2)} / ${logGet.toFixed(2)}`);
    rows.set(v.label, cells);
    if (round === 0) console.log(`${v.label}: a log entry takes ${bytes} bytes`);
  }
}
console.log(`\nCPU µs per record (log entry put / key record put / log entry get), ${total} records a round:\n`);
console.log(`| variant | ${Array.from({ length: rounds }, (_, i) => `round ${i + 1}`).join(' | ')} |`);
console.log(`| --- |${' ---: |'.repeat(rounds)}`);
for (const [label, cells] of rows) console.log(`| ${label} | ${cells.join(' | ')} |`);
for (const v of variants) {
  await v.root.close();
  rmSync(v.dir, { recursive: true, force: true });
}
