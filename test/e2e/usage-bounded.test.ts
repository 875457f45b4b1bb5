import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyCounts, UsageRollups } from '../../src/governance/usage-rollups.js';
import { Store } from '../../src/store/store.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * GET /api/usage holds at most `limit` groups (1,000 unless the query says fewer): the top ones by spend, the rest
 * summed per interval in `others`, so a chart of the whole still adds up. 20,000 keys over 30 days answered 600,000
 * rows at once (85 MB, 400 MB of heap, the event loop held for seconds; 18 s with a time zone).
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;
const KEYS = 20_000;
/** Teams busy every hour of 30 days: hourly rows are 720 per group, so 1,000 groups are 720,000 rows. */
const TEAMS = 1_000;
const HOURS = 720;
const thisHour = Math.floor(Date.now() / HOUR) * HOUR;
/**
 * Whole days before today with rows: 29, so every row is inside the default range (the last 30 days) at any time of
 * day in any zone. With 30, the oldest day's hours before Berlin's midnight fell out of the range in the last hour of
 * each UTC day (Berlin is already in the next one), and the Berlin ranking of top spenders came out otherwise.
 */
const DAYS = 29;
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let dataDir: string;
const today = Math.floor(Date.now() / DAY) * DAY;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  // A gateway whose 20,000 keys each made 3 requests a day for 29 days (daily and hourly rollups).
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-usage-bounded-'));
  const store = await Store.open(dataDir, 'test');
  const rollups = new UsageRollups(store.root);
  for (let d = 1; d <= DAYS; d++) {
    const deltas = new Map<string, { key: ['key', 'day' | 'hour', number, string]; counts: ReturnType<typeof emptyCounts> }>();
    for (let k = 0; k < KEYS; k++) {
      const group = `vk_bulk_${String(k).padStart(5, '0')}`;
      const counts = { ...emptyCounts(), requests: 3, spend_usd: k / 1_000_000, input_tokens: 30, output_tokens: 3 };
      deltas.set(`d${k}`, { key: ['key', 'day', today - d * DAY, group], counts });
      deltas.set(`h${k}`, { key: ['key', 'hour', today - d * DAY + (k % 24) * 3_600_000, group], counts });
    }
    await rollups.add(deltas);
  }
  for (let h = 1; h <= HOURS; h++) {
    const deltas = new Map<string, { key: ['team', 'hour', number, string]; counts: ReturnType<typeof emptyCounts> }>();
    for (let t = 0; t < TEAMS; t++) {
      const counts = { ...emptyCounts(), requests: 2, spend_usd: (t + 1) / 1_000_000, input_tokens: 20, output_tokens: 2 };
      deltas.set(`t${t}`, { key: ['team', 'hour', thisHour - h * HOUR, `team_bulk_${String(t).padStart(4, '0')}`], counts });
    }
    await rollups.add(deltas);
  }
  await store.close();
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  // The scripted upstream counts 4 prompt tokens for 'hi': $0.10 a request at this price.
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up', prices: { dime: { input_per_mtok: 25_000, output_per_mtok: 0 } } } } }, {}, { dataDir });
}, 120_000);
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The longest the gateway's event loop was held while `work` ran (the gateway runs in this process). */
async function maxLag<T>(work: () => Promise<T>): Promise<{ result: T; lagMs: number }> {
  let lagMs = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    lagMs = Math.max(lagMs, now - last - 10);
    last = now;
  }, 10);
  try {
    return { result: await work(), lagMs };
  } finally {
    clearInterval(probe);
  }
}

const sum = (rows: Array<{ requests: number }>): number => rows.reduce((total, row) => total + row.requests, 0);

describe('GET /api/usage with many groups', () => {
  it('answers the top 1,000 groups by spend, sums the rest in others, and never holds the event loop for long', async () => {
    for (const query of ['group_by=key', 'group_by=key&tz=Europe/Berlin']) {
      const { result: res, lagMs } = await maxLag(async () => {
        const response = await fetch(`${tg.url}/api/usage?${query}`);
        return { status: response.status, text: await response.text() };
      });
      expect(res.status, query).toBe(200);
      const usage = JSON.parse(res.text);
      expect(usage.groups).toBe(KEYS);
      expect(usage.truncated).toBe(true);
      expect(usage.totals).toHaveLength(1_000);
      // The top spenders, most first.
      expect(usage.totals[0].group).toBe(`vk_bulk_${KEYS - 1}`);
      expect(usage.totals[999].group).toBe(`vk_bulk_${KEYS - 1_000}`);
      expect(new Set(usage.data.map((row: { group: string }) => row.group)).size).toBe(1_000);
      expect(usage.others.groups).toBe(KEYS - 1_000);
      // Every request is counted once, in a group kept or in others.
      expect(sum(usage.totals) + usage.others.totals.requests).toBe(KEYS * DAYS * 3);
      expect(sum(usage.data) + sum(usage.others.data)).toBe(KEYS * DAYS * 3);
      expect(res.text.length, query).toBeLessThan(10_000_000);
      expect(lagMs, query).toBeLessThan(1_000);
    }
  }, 120_000);

  it('holds a bounded number of rows however many intervals each group has: 1,000 teams busy every hour of 30 days', async () => {
    // 1,000 groups are within the limit, but by hour they were 720,000 rows: a 99 MB answer, the event loop held for 2.3 s.
    for (const query of [`group_by=team&interval=hour&from=${thisHour - HOURS * HOUR}&to=${thisHour}`, `group_by=team&interval=hour&tz=Europe/Berlin&from=${thisHour - HOURS * HOUR}&to=${thisHour}`]) {
      const { result: res, lagMs } = await maxLag(async () => {
        const response = await fetch(`${tg.url}/api/usage?${query}`);
        return { status: response.status, text: await response.text() };
      });
      expect(res.status, query).toBe(200);
      const usage = JSON.parse(res.text);
      expect(usage.groups).toBe(TEAMS);
      expect(usage.truncated).toBe(true);
      expect(usage.data.length).toBeLessThanOrEqual(50_000);
      const kept = usage.totals.length;
      expect(kept).toBeGreaterThan(10);
      expect(usage.data.length).toBe(kept * HOURS);
      // The top spenders, most first, and the rest summed, every request once.
      expect(usage.totals[0].group).toBe(`team_bulk_${String(TEAMS - 1).padStart(4, '0')}`);
      expect(usage.totals[kept - 1].group).toBe(`team_bulk_${String(TEAMS - kept).padStart(4, '0')}`);
      expect(usage.others.groups).toBe(TEAMS - kept);
      expect(usage.others.data).toHaveLength(HOURS);
      expect(sum(usage.totals) + usage.others.totals.requests).toBe(TEAMS * HOURS * 2);
      expect(sum(usage.data) + sum(usage.others.data)).toBe(TEAMS * HOURS * 2);
      expect(res.text.length, query).toBeLessThan(10_000_000);
      expect(lagMs, query).toBeLessThan(1_000);
    }
    // By (local) day the same range is 31 rows a group: the 1,000 fit.
    const daily = (await api('GET', `/api/usage?group_by=team&interval=day&tz=Europe/Berlin&from=${thisHour - HOURS * HOUR}&to=${thisHour}`)).body;
    expect(daily.truncated).toBe(false);
    expect(daily.totals).toHaveLength(TEAMS);
    expect(sum(daily.data)).toBe(TEAMS * HOURS * 2);
  }, 120_000);

  it('pages through every group in name order (order=group, after=next_after), each page adding up to the whole', async () => {
    // A chargeback script needs every key's spend, not the top 1,000 and a sum: 19,000 keys were out of reach.
    const range = `from=${today - 2 * DAY}&to=${today - DAY}`;
    const seen = new Map<string, { requests: number; spend_usd: number }>();
    let after: string | null = null;
    let pages = 0;
    do {
      const query: string = `/api/usage?group_by=key&order=group&limit=1000&${range}${after === null ? '' : `&after=${encodeURIComponent(after)}`}`;
      const { status, body } = await api('GET', query);
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      pages++;
      expect(body.groups).toBe(KEYS);
      expect(body.totals.length).toBeLessThanOrEqual(1_000);
      const names = body.totals.map((total: { group: string }) => total.group);
      // Name order, each page after the one before.
      expect(names).toEqual([...names].sort());
      if (after !== null) expect(names[0] > after).toBe(true);
      for (const total of body.totals) {
        expect(seen.has(total.group)).toBe(false);
        seen.set(total.group, { requests: total.requests, spend_usd: total.spend_usd });
      }
      // What the page does not hold is summed in others: the whole range every time.
      expect(sum(body.totals) + (body.others?.totals.requests ?? 0)).toBe(KEYS * 3);
      after = body.next_after;
      if (after !== null) expect(after).toBe(names.at(-1));
    } while (after !== null && pages < 30);
    expect(pages).toBe(KEYS / 1_000);
    expect(seen.size).toBe(KEYS);
    expect(seen.get('vk_bulk_00123')).toEqual({ requests: 3, spend_usd: 0.000123 });
    // after belongs to order=group.
    expect((await api('GET', `/api/usage?group_by=key&after=vk_bulk_00001&${range}`)).body.error).toMatchObject({ code: 'invalid_query', param: 'after' });
    expect((await api('GET', `/api/usage?group_by=key&order=name&${range}`)).body.error).toMatchObject({ code: 'invalid_query', param: 'order' });
  }, 120_000);

  it('takes a smaller limit, and answers a range with few groups as before (nothing in others)', async () => {
    const keys = [await createKey({ name: 'one' }), await createKey({ name: 'two' }), await createKey({ name: 'three' })];
    for (const [index, key] of keys.entries()) {
      for (let i = 0; i <= index; i++) await clientFor(key.key).chat.completions.create({ model: 'openai/dime', messages: [{ role: 'user', content: 'hi' }] });
    }
    const from = new Date(today).toISOString();
    const all = (await api('GET', `/api/usage?group_by=key&interval=hour&from=${from}`)).body;
    expect(all.groups).toBe(3);
    expect(all.truncated).toBe(false);
    expect(all.others).toBeUndefined();
    expect(all.totals.map((total: { group: string; spend_usd: number }) => [total.group, total.spend_usd])).toEqual([
      [keys[2]!.id, 0.3],
      [keys[1]!.id, 0.2],
      [keys[0]!.id, 0.1],
    ]);
    const top = (await api('GET', `/api/usage?group_by=key&interval=hour&from=${from}&limit=2`)).body;
    expect(top.truncated).toBe(true);
    expect(top.totals).toEqual(all.totals.slice(0, 2));
    expect(top.others).toMatchObject({ groups: 1, totals: { requests: 1, spend_usd: 0.1 } });
    expect(top.data).toEqual(all.data.filter((row: { group: string }) => row.group !== keys[0]!.id));
    expect((await api('GET', '/api/usage?limit=0')).body.error).toMatchObject({ code: 'invalid_query', param: 'limit' });
  });
});
