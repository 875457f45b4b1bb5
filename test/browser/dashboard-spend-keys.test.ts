import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { GovernanceStore } from '../../src/governance/governance-store.js';
import { emptyCounts, UsageRollups } from '../../src/governance/usage-rollups.js';
import { Store } from '../../src/store/store.js';
import { collectPageErrors, openBrowserPage } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * The Spend page names its key groups. With 20,000 keys it fetched them all (GET /api/keys, 11 MB, the gateway's
 * event loop held meanwhile) to name the 1,000 groups the usage answer holds; it now asks for those keys' names only.
 */

const TIMEOUT = 120_000;
const DAY = 86_400_000;
const KEYS = 20_000;
/** Keys with usage: more than the 1,000 groups a usage answer holds. */
const SPENDERS = 1_200;
const today = Math.floor(Date.now() / DAY) * DAY;
let dataDir: string;
let tg: RunningGateway;
let browser: Browser;
const keys: Array<{ id: string; name: string }> = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-dashboard-spend-keys-'));
  const store = await Store.open(dataDir, 'test');
  const governance = new GovernanceStore(store.root, new EventBus());
  for (let batch = 0; batch < KEYS / 1_000; batch++) {
    const made = await Promise.all(Array.from({ length: 1_000 }, (_, k) => governance.createKey({ name: `team-key-${batch * 1_000 + k}` })));
    keys.push(...made.map(({ record }) => ({ id: record.id, name: record.name })));
  }
  // Every 16th key spent, the later ones more; and a key deleted since it spent the most.
  const deltas = new Map<string, { key: ['key', 'day' | 'hour', number, string]; counts: ReturnType<typeof emptyCounts> }>();
  const spenders = [...keys.filter((_, index) => index % 16 === 0).slice(0, SPENDERS - 1).map((key) => key.id), 'vk_deleted00000000'];
  spenders.forEach((group, rank) => {
    const counts = { ...emptyCounts(), requests: 1, spend_usd: (rank + 1) / 1_000, input_tokens: 10, output_tokens: 1 };
    deltas.set(`d${group}`, { key: ['key', 'day', today - DAY, group], counts });
    deltas.set(`h${group}`, { key: ['key', 'hour', today - DAY + 12 * 3_600_000, group], counts });
  });
  await new UsageRollups(store.root).add(deltas);
  await store.close();
  tg = await startGateway({}, {}, { dataDir });
  ({ browser } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const isoDay = (at: number): string => new Date(at).toISOString().slice(0, 10);

describe('the Spend page with 20,000 keys', () => {
  it('names its key groups by asking for just those keys, never for all of them', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' });
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    const keyRequests: URL[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/api/keys') keyRequests.push(url);
    });
    try {
      await page.goto(`${tg.url}/#/spend?group_by=key&interval=day&from=${isoDay(today - 3 * DAY)}&to=${isoDay(today)}`);
      const table = page.getByRole('table', { name: /Totals per key/ });
      await table.getByRole('row', { name: /200 more, summed/ }).waitFor();
      // The top spender was deleted: it keeps its id. The next ones are named.
      const heads = table.locator('tbody th');
      const spenders = keys.filter((_, index) => index % 16 === 0).slice(0, SPENDERS - 1).reverse();
      await expect.poll(() => heads.nth(1).textContent(), { timeout: 15_000 }).toBe(`${spenders[0]!.name} (${spenders[0]!.id})`);
      expect(await heads.nth(0).textContent()).toBe('vk_deleted00000000');
      const shown = await heads.allTextContents();
      expect(shown).toHaveLength(1_001);
      expect(shown.slice(1, 1_000)).toEqual(spenders.slice(0, 999).map((key) => `${key.name} (${key.id})`));

      // Only ids queries, for the 1,000 groups shown (in batches the API takes), names only.
      expect(keyRequests.length).toBeGreaterThan(0);
      expect(keyRequests.length).toBeLessThanOrEqual(2);
      const asked = keyRequests.flatMap((url) => url.searchParams.get('ids')?.split(',') ?? ['(every key)']);
      expect(new Set(asked).size).toBe(1_000);
      expect(asked).not.toContain('(every key)');
      for (const url of keyRequests) expect(url.searchParams.get('fields')).toBe('name');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, TIMEOUT);

  it('pages and searches the Keys page a hundred keys at a time, each answer a page', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    const keyRequests: URL[] = [];
    const answerBytes: number[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/api/keys') keyRequests.push(url);
    });
    page.on('response', (response) => {
      if (new URL(response.url()).pathname === '/api/keys') void response.body().then((body) => answerBytes.push(body.length));
    });
    const rows = page.locator('tr[data-key-id]');
    try {
      await page.goto(`${tg.url}/#/keys`);
      await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(100);
      const firstPage = await rows.first().getAttribute('data-key-id');
      // Each answer is a page (how long the gateway takes over one is test/e2e/keys-scale.test.ts's to measure: from
      // a test process that also drives a browser, the event loop's lag is mostly the browser's noise).
      await page.getByRole('button', { name: 'Next 100' }).click();
      await expect.poll(() => rows.first().getAttribute('data-key-id'), { timeout: 15_000 }).not.toBe(firstPage);
      expect(await rows.count()).toBe(100);
      await page.getByLabel('Find a key').fill('team-key-19999');
      await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(1);
      expect(await rows.first().getByRole('rowheader').textContent()).toBe('team-key-19999');
      expect(keyRequests.length).toBeGreaterThan(2);
      for (const url of keyRequests) expect(url.searchParams.get('limit')).toBe('100');
      await expect.poll(() => answerBytes.length).toBe(keyRequests.length);
      expect(Math.max(...answerBytes)).toBeLessThan(200_000);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, TIMEOUT);
});
