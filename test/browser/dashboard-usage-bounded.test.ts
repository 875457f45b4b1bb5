import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyCounts, UsageRollups } from '../../src/governance/usage-rollups.js';
import { Store } from '../../src/store/store.js';
import { collectPageErrors, openBrowserPage } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * GET /api/usage holds the top 1,000 groups and sums the rest in `others`. A gateway whose rollups hold 1,003 models
 * and 1,003 providers (two requests each, on two days): the Spend page shows the summed rest once, its CSV adds up
 * to every request, and the Overview's totals (grouped by provider) count the rest too.
 */

const TIMEOUT = 60_000;
const DAY = 86_400_000;
const GROUPS = 1_003;
const DAYS = 2;
const today = Math.floor(Date.now() / DAY) * DAY;
let dataDir: string;
let tg: RunningGateway;
let browser: Browser;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-dashboard-usage-'));
  const store = await Store.open(dataDir, 'test');
  const rollups = new UsageRollups(store.root);
  for (let d = 1; d <= DAYS; d++) {
    const deltas = new Map<string, { key: ['model' | 'provider', 'day' | 'hour', number, string]; counts: ReturnType<typeof emptyCounts> }>();
    for (let g = 0; g < GROUPS; g++) {
      const counts = { ...emptyCounts(), requests: 1, spend_usd: (g + 1) / 1_000_000, input_tokens: 10, output_tokens: 1 };
      for (const dimension of ['model', 'provider'] as const) {
        const group = `${dimension}-${String(g).padStart(4, '0')}`;
        deltas.set(`${dimension}-d${g}`, { key: [dimension, 'day', today - d * DAY, group], counts });
        deltas.set(`${dimension}-h${g}`, { key: [dimension, 'hour', today - d * DAY + 12 * 3_600_000, group], counts });
      }
    }
    await rollups.add(deltas);
  }
  await store.close();
  tg = await startGateway({}, {}, { dataDir });
  ({ browser } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function utcPage(): Promise<{ page: Page; errors: string[]; close(): Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', acceptDownloads: true });
  const page = await context.newPage();
  return { page, errors: collectPageErrors(page), close: () => context.close() };
}

const isoDay = (at: number): string => new Date(at).toISOString().slice(0, 10);

describe('usage answers cut to the top 1,000 groups in the dashboard', () => {
  it('shows the rest summed once on the Spend page, and its CSV adds up to every request', async () => {
    const { page, errors, close } = await utcPage();
    try {
      await page.goto(`${tg.url}/#/spend?group_by=model&interval=day&from=${isoDay(today - 3 * DAY)}&to=${isoDay(today)}`);
      const table = page.getByRole('table', { name: /Totals per model/ });
      const rest = table.getByRole('row', { name: /3 more, summed/ });
      await rest.waitFor();
      expect(await rest.getByRole('rowheader').textContent()).toBe('3 more, summed (the answer holds the top 1,000 by spend)');
      expect(await rest.getByRole('cell').nth(1).textContent()).toBe(String(3 * DAYS));
      expect(await table.locator('tbody tr').count()).toBe(1_001);

      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Download CSV' }).click();
      const lines = readFileSync((await (await download).path()) as string, 'utf8').trim().split('\r\n');
      // Fields split at the commas outside quotes, quotes taken off ("3 more, summed" is quoted).
      const fields = (line: string): string[] => line.split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/).map((field) => field.replace(/^"(.*)"$/, '$1').replaceAll('""', '"'));
      const header = fields(lines[0]!);
      const rows = lines.slice(1).map(fields);
      const requests = header.indexOf('requests');
      expect(rows.reduce((sum, row) => sum + Number(row[requests]), 0)).toBe(GROUPS * DAYS);
      const summed = rows.filter((row) => row[header.indexOf('model')] === '');
      expect(summed).toHaveLength(DAYS);
      expect(summed.map((row) => row[header.indexOf('name')])).toEqual(['3 more, summed', '3 more, summed']);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  }, TIMEOUT);

  it('counts the rest in the Overview totals, once', async () => {
    const { page, errors, close } = await utcPage();
    try {
      await page.goto(`${tg.url}/#/`);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.getByLabel('Range').selectOption('7d');
      await expect.poll(() => page.getByTestId('total-requests').textContent(), { timeout: 15_000 }).toBe((GROUPS * DAYS).toLocaleString('en-US'));
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  }, TIMEOUT);
});
