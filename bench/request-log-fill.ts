// The request-log generator of bench/log-scale.ts, shared with bench/startup.ts: fills a store with `records` log
// entries spread evenly over the last `days` days, the usage rollups those requests would have made, and the
// error index (marked complete, as a store written by this version has it). Deterministic: every run fills the same.
import { newRequestId } from '../src/core/request-id.js';
import type { RequestLogEntry } from '../src/governance/types.js';
import { ERROR_INDEX_COMPLETE, errorIndexValue } from '../src/governance/request-log-query.js';
import { addCounts, emptyCounts, rollupKeys, UsageRollups, type UsageCounts, type UsageSample } from '../src/governance/usage-rollups.js';
import { openRecords } from '../src/store/records.js';
import { Store } from '../src/store/store.js';
import { VERSION } from '../src/version.js';

const DAY = 86_400_000;
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-5', 'gemini-2.5-flash', 'llama-3.3-70b', 'mistral-large', 'deepseek-chat', 'o4-mini'];
const PROVIDERS = ['openai', 'openai', 'anthropic', 'gemini', 'groq', 'mistral', 'deepseek', 'openai'];
export const KEYS = Array.from({ length: 200 }, (_, i) => `vk_${String(i).padStart(16, '0')}`);
const TEAMS = Array.from({ length: 20 }, (_, i) => `team_${String(i).padStart(16, '0')}`);

/** A deterministic pseudo-random sequence, so runs fill the same store. */
let seed = 42;
function random(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
}

/** A request-log entry as the gateway writes one: a random model, key and team, 3% of them failed. */
export function entryAt(at: number, id: string): RequestLogEntry {
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

export async function fillRequestLog(dataDir: string, records: number, days: number): Promise<void> {
  const store = await Store.open(dataDir, VERSION);
  // As the gateway opens it (src/governance/governance-store.ts): the records' shapes kept once.
  const log = openRecords<RequestLogEntry, string>(store.root, { name: 'request-log' });
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

