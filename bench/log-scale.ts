// The request log and usage rollups at scale: fills a fresh store with one million log records spread over 30 days
// (and the rollups those requests would have made), starts a gateway on it, and times GET /api/usage and GET
// /api/logs pages over HTTP. Figures, not pass/fail.
//
//   npx tsx bench/log-scale.ts [--records 1000000] [--days 30] [--repeat 30]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newRequestId } from '../src/core/request-id.js';
import { createGateway } from '../src/gateway.js';
import type { RequestLogEntry } from '../src/governance/types.js';
import { ERROR_INDEX_COMPLETE, errorIndexValue } from '../src/governance/request-log-query.js';
import { addCounts, emptyCounts, rollupKeys, UsageRollups, type UsageCounts, type UsageSample } from '../src/governance/usage-rollups.js';
import { createLog } from '../src/log.js';
import { Store } from '../src/store/store.js';
import { VERSION } from '../src/version.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    days: { type: 'string', default: '30' },
    repeat: { type: 'string', default: '30' },
  },
});
const records = Number(values.records);
const days = Number(values.days);
const repeat = Number(values.repeat);
const DAY = 86_400_000;

const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-5', 'gemini-2.5-flash', 'llama-3.3-70b', 'mistral-large', 'deepseek-chat', 'o4-mini'];
const PROVIDERS = ['openai', 'openai', 'anthropic', 'gemini', 'groq', 'mistral', 'deepseek', 'openai'];
const KEYS = Array.from({ length: 200 }, (_, i) => `vk_${String(i).padStart(16, '0')}`);
const TEAMS = Array.from({ length: 20 }, (_, i) => `team_${String(i).padStart(16, '0')}`);

/** A deterministic pseudo-random sequence, so runs fill the same store. */
let seed = 42;
function random(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
}

function entryAt(at: number, id: string): RequestLogEntry {
  const m = Math.floor(random() * MODELS.length);
  const k = Math.floor(random() * KEYS.length);
  const failed = random() < 0.03;
  const status = failed ? [429, 500, 502, 401][Math.floor(random() * 4)] as number : 200;
  const prompt = Math.floor(random() * 2000);
  const completion = failed ? 0 : Math.floor(random() * 800);
  return {
    id,
    at: new Date(at).toISOString(),
    key_id: KEYS[k] as string,
    team_id: TEAMS[k % TEAMS.length] as string,
    model: MODELS[m] as string,
    provider: PROVIDERS[m] as string,
    upstream_model: MODELS[m] as string,
    status,
    stream: random() < 0.5,
    cancelled: false,
    prompt_tokens: prompt,
    completion_tokens: completion,
    cost_usd: (prompt * 2.5 + completion * 10) / 1e6,
    priced: true,
    duration_ms: Math.floor(200 + random() * 3000),
    route: 'chat',
    ...(failed ? { error_type: 'api_error', error_code: status === 429 ? 'rate_limit_exceeded' : 'upstream_error', error_message: `upstream answered ${status}` } : {}),
    dialect: 'openai',
    path: '/v1/chat/completions',
    operation: 'chat',
    attempts: [{ provider: PROVIDERS[m] as string, model: MODELS[m] as string, status, ok: !failed, duration_ms: 200, error_code: null }],
    fallback: false,
    upstream_ms: 190,
    first_token_ms: 120,
    overhead_ms: 0.4,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    estimated: false,
    user: null,
    metadata: null,
  };
}

async function fill(dataDir: string): Promise<void> {
  const store = await Store.open(dataDir, VERSION);
  const log = store.root.openDB<RequestLogEntry, string>({ name: 'request-log' });
  const byKey = store.root.openDB<null, [string, string]>({ name: 'request-log-by-key' });
  const errors = store.root.openDB<string, string>({ name: 'request-log-errors' });
  const rollups = new UsageRollups(store.root);
  const start = Date.now() - days * DAY;
  const step = (days * DAY) / records;
  const started = performance.now();
  const BATCH = 20_000;
  for (let done = 0; done < records; done += BATCH) {
    const deltas = new Map<string, { key: ReturnType<typeof rollupKeys>[number]; counts: UsageCounts }>();
    await store.root.transaction(() => {
      for (let i = done; i < Math.min(records, done + BATCH); i++) {
        const at = Math.floor(start + i * step);
        const entry = entryAt(at, newRequestId(at));
        log.put(entry.id, entry);
        if (entry.key_id) byKey.put([entry.key_id, entry.id], null);
        if (entry.status >= 400) errors.put(entry.id, errorIndexValue(entry));
        const sample: UsageSample = {
          at,
          groups: { key: entry.key_id ?? 'none', team: entry.team_id ?? 'none', model: entry.model, provider: entry.provider ?? 'none', route: entry.route ?? 'none' },
          requests: 1,
          errors: entry.status >= 400 ? 1 : 0,
          spend_usd: entry.cost_usd,
          input_tokens: entry.prompt_tokens,
          output_tokens: entry.completion_tokens,
        };
        for (const key of rollupKeys(sample)) {
          const id = key.join('\0');
          let delta = deltas.get(id);
          if (!delta) deltas.set(id, (delta = { key, counts: emptyCounts() }));
          addCounts(delta.counts, sample);
        }
      }
    });
    await rollups.add(deltas);
  }
  await errors.put(ERROR_INDEX_COMPLETE, '');
  console.log(`filled ${records} records over ${days} days in ${((performance.now() - started) / 1000).toFixed(1)} s; store ${(store.sizeBytes() / 1e6).toFixed(0)} MB`);
  await store.close();
}

async function time(url: string): Promise<{ p50: number; p95: number; max: number; sample: unknown }> {
  const times: number[] = [];
  let sample: unknown = null;
  for (let i = 0; i < repeat; i++) {
    const started = performance.now();
    const res = await fetch(url);
    const body = (await res.json()) as unknown;
    times.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(body).slice(0, 200)}`);
    sample = body;
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)] as number, p95: times[Math.floor(times.length * 0.95)] as number, max: times.at(-1) as number, sample };
}

const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-log-scale-'));
try {
  await fill(dataDir);
  const gateway = await createGateway({ config: { settings: { data_dir: dataDir } }, env: {}, log: createLog('silent') });
  const base = await gateway.listen({ port: 0, host: '127.0.0.1' });
  const now = Date.now();
  const monthAgo = new Date(now - 30 * DAY).toISOString();
  const cases: Array<[string, string]> = [
    ['usage by model, per day, 30 days', `/api/usage?group_by=model&interval=day&from=${monthAgo}`],
    ['usage by key (200 keys), per day, 30 days', `/api/usage?group_by=key&interval=day&from=${monthAgo}`],
    ['usage by key (200 keys), per hour, 30 days', `/api/usage?group_by=key&interval=hour&from=${monthAgo}`],
    ['usage by provider, per hour, 30 days', `/api/usage?group_by=provider&interval=hour&from=${monthAgo}`],
    ['logs, first page (50)', '/api/logs'],
    ['logs, page of 500', '/api/logs?limit=500'],
    ['logs, one key (index)', `/api/logs?key_id=${KEYS[7]}`],
    ['logs, status 5xx', '/api/logs?status=5xx'],
    ['logs, model and provider', '/api/logs?model=mistral-large&provider=mistral'],
    ['logs, 10 days ago (time range)', `/api/logs?to=${now - 10 * DAY}`],
    ['logs, error text (rare: bounded scan)', '/api/logs?q=answered%20502'],
  ];
  console.log(`\n| query | p50 ms | p95 ms | max ms | answer |`);
  console.log('| --- | ---: | ---: | ---: | --- |');
  for (const [name, path] of cases) {
    const { p50, p95, max, sample } = await time(`${base}${path}`);
    const body = sample as { data?: unknown[]; totals?: unknown[]; next_before?: string | null };
    const answer = body.totals ? `${body.data?.length} rows, ${body.totals.length} groups` : `${body.data?.length} records${body.next_before ? ', cursor' : ''}`;
    console.log(`| ${name} | ${p50.toFixed(1)} | ${p95.toFixed(1)} | ${max.toFixed(1)} | ${answer} |`);
  }
  await gateway.close(100);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
