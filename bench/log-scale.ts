// The request log and usage rollups at scale: fills a fresh store with one million log records spread over 30 days
// (and the rollups those requests would have made), starts a gateway on it, and times GET /api/usage and GET
// /api/logs pages over HTTP. Figures, not pass/fail.
//
//   npx tsx bench/log-scale.ts [--records 1000000] [--days 30] [--repeat 30]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createGateway } from '../src/gateway.js';
import { createLog } from '../src/log.js';
import { fillRequestLog, KEYS } from './request-log-fill.js';

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
  await fillRequestLog(dataDir, records, days);
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
