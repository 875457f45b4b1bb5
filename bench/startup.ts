// Start-up of a gateway process, "ready to serve": spawn -> first 200 from /health -> first successful chat request,
// and -> /health's `loading` empty (the cache's semantic index and the embedder loaded, the model list priced, in
// the background). Two data directories: empty, and one holding a million request-log records and a full response
// cache (100,000 entries, its semantic index saved). Median of a few runs each; the cache is on, with its semantic tier.
//
//   npm run bench:startup -- [--runs 5] [--records 1000000] [--cache-entries 100000] [--big-data-dir <dir>]
//
// --big-data-dir reuses a data directory filled before (by an earlier run's fill) instead of filling a new one. A
// gateway from before /health had `loading` is timed too: its last column then reads n/a.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/net.js';
import { startOpenAIUpstream } from '../test/upstream/openai-upstream.js';
import { fillCache } from './cache-fill.js';
import { pollUntil, prepareGateway, spawnGateway } from './gateway-process.js';
import { processCpuMicros } from './proc-cpu.js';
import { fillRequestLog } from './request-log-fill.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    records: { type: 'string', default: '1000000' },
    'cache-entries': { type: 'string', default: '100000' },
    'big-data-dir': { type: 'string' },
  },
});
const runs = Number(values.runs);
const records = Number(values.records);
const cacheEntries = Number(values['cache-entries']);

interface Run {
  /** CPU (user + system, all threads) the process had used when /health first answered: steadier than wall time on a busy machine. */
  healthCpuMs: number;
  healthMs: number;
  chatMs: number;
  loadedMs: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

await prepareGateway();
const upstream = await startOpenAIUpstream({ apiKey: 'sk-startup', chunkDelayMs: 0, record: false });
const work = mkdtempSync(join(tmpdir(), 'tollgate-startup-'));

async function startOnce(dataDir: string, n: number): Promise<Run> {
  const configPath = join(work, 'tollgate.config.json');
  writeFileSync(configPath, JSON.stringify({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-startup' } },
    cache: { mode: 'on', max_entries: Math.max(cacheEntries, 1), semantic: { enabled: true } },
  }));
  const gateway = spawnGateway({ cwd: work, port: await freePort(), dataDir, configPath });
  try {
    const health = await pollUntil(async () => (await fetch(`${gateway.url}/health`)).status === 200, 60_000);
    const healthCpuMs = processCpuMicros(gateway.child.pid as number) / 1000;
    const chat = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `start-up run ${n}: a question never asked before` }] }),
    });
    await chat.text();
    if (chat.status !== 200) throw new Error(`first chat answered ${chat.status}`);
    const chatAt = performance.now();
    const hasLoading = 'loading' in ((await (await fetch(`${gateway.url}/health`)).json()) as object);
    // A gateway without `loading` in /health (from before it had one) is given 3 s, then reads n/a.
    const loaded = await pollUntil(async () => ((await (await fetch(`${gateway.url}/health`)).json()) as { loading?: string[] }).loading?.length === 0, hasLoading ? 300_000 : 3_000, 20).catch(() => Number.NaN);
    return { healthCpuMs, healthMs: health - gateway.spawnedAt, chatMs: chatAt - gateway.spawnedAt, loadedMs: loaded - gateway.spawnedAt };
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${gateway.output()}`);
  } finally {
    await gateway.stop();
  }
}

async function measure(label: string, dataDir: string): Promise<string> {
  const results: Run[] = [];
  for (let i = 0; i < runs; i++) results.push(await startOnce(dataDir, i));
  const ms = (value: number): string => (Number.isFinite(value) ? value.toFixed(0) : 'n/a');
  const fmt = (pick: (r: Run) => number): string => `${ms(median(results.map(pick)))} (${results.map((r) => ms(pick(r))).join(', ')})`;
  return `| ${label} | ${fmt((r) => r.healthMs)} | ${fmt((r) => r.healthCpuMs)} | ${fmt((r) => r.chatMs)} | ${fmt((r) => r.loadedMs)} |`;
}

try {
  const rows: string[] = [];
  rows.push(await measure('empty data dir', join(work, 'empty')));
  const big = values['big-data-dir'] ?? join(work, 'big');
  if (!values['big-data-dir']) {
    let started = performance.now();
    await fillRequestLog(big, records, 30);
    const logSec = (performance.now() - started) / 1000;
    started = performance.now();
    await fillCache(big, cacheEntries);
    console.log(`filled ${records.toLocaleString('en')} log records in ${logSec.toFixed(0)} s and ${cacheEntries.toLocaleString('en')} cache entries (index saved) in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  rows.push(await measure(`${records.toLocaleString('en')} log records + ${cacheEntries.toLocaleString('en')} cache entries`, big));
  console.log(`\nstart-up, ms from spawn (median of ${runs}; each run in brackets)\n`);
  console.log('| data dir | /health 200 | CPU used by then | first chat 200 | background loads done (/health loading: []) |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(row);
} finally {
  await upstream.close();
  rmSync(work, { recursive: true, force: true });
}
