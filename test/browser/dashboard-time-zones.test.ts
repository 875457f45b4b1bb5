import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectPageErrors, openBrowserPage } from '../helpers/browser.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The spend page's dates are the browser's local days, and so are its per-day buckets: it sends the browser's zone
 * as `tz`. The gateway runs on a clock the test sets, so requests arrive at chosen instants around Berlin's and New
 * York's midnights; the browser contexts run in those zones.
 */

const TIMEOUT = 60_000;
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let now = Date.now();

async function requestAt(iso: string): Promise<void> {
  now = Date.parse(iso);
  const res = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
  expect(res.status).toBe(200);
  await res.text();
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway(openAIConfig(upstream.url), {}, { clock: () => now });
  // 13:00 on the 28th, 00:10 on the 29th and 00:10 on the 30th in Berlin (07:00, 18:10 and 18:10 in New York).
  for (const at of ['2024-11-28T12:00:00Z', '2024-11-28T23:10:00Z', '2024-11-29T23:10:00Z']) await requestAt(at);
  now = Date.now();
  ({ browser } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});

/** The spend page for one local day in a browser running in `zone`: the usage query it sent and its CSV rows. */
async function spendFor(zone: string, day: string): Promise<{ query: URLSearchParams; requests: string; csv: string[][] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: zone, acceptDownloads: true });
  try {
    const page: Page = await context.newPage();
    const errors = collectPageErrors(page);
    const usage = page.waitForRequest((request) => request.url().includes('/api/usage?'));
    await page.goto(`${tg.url}/#/spend?group_by=model&interval=day&from=${day}&to=${day}`);
    const query = new URL((await usage).url()).searchParams;
    const row = page.getByRole('table', { name: /Totals per model/ }).getByRole('row', { name: /openai\/gpt-4o-mini/ });
    await row.waitFor();
    const requests = (await row.getByRole('cell').nth(1).textContent()) ?? '';
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download CSV' }).click();
    const csv = readFileSync((await (await download).path()) as string, 'utf8')
      .trim()
      .split('\r\n')
      .slice(1)
      .map((line) => line.split(','));
    expect(errors).toEqual([]);
    return { query, requests, csv };
  } finally {
    await context.close();
  }
}

describe("the spend page counts the browser's local days", () => {
  it('in Berlin: the 29th is midnight to midnight there, and the bucket is named by its local start', async () => {
    const spend = await spendFor('Europe/Berlin', '2024-11-29');
    expect(Object.fromEntries(spend.query)).toMatchObject({ tz: 'Europe/Berlin', from: '2024-11-29', to: '2024-11-30', interval: 'day' });
    // Only the request at 00:10 on the 29th: not 13:00 the day before, nor 00:10 the day after.
    expect(spend.requests).toBe('1');
    expect(spend.csv.map((row) => [row[0], row[3]])).toEqual([['2024-11-29T00:00:00.000+01:00', '1']]);
  }, TIMEOUT);

  it('in New York the same dates mean other instants', async () => {
    const spend = await spendFor('America/New_York', '2024-11-28');
    expect(spend.query.get('tz')).toBe('America/New_York');
    // 07:00 and 18:10 on the 28th there; 18:10 on the 29th is another day.
    expect(spend.requests).toBe('2');
    expect(spend.csv.map((row) => [row[0], row[3]])).toEqual([['2024-11-28T00:00:00.000-05:00', '2']]);
  }, TIMEOUT);
});

describe("the logs page's From and To are local date-times", () => {
  it('sends what was picked as an ISO time with the offset, and shows it back in local time', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Asia/Kolkata' });
    try {
      const page = await context.newPage();
      const errors = collectPageErrors(page);
      // Two requests more than a second apart, logged at the real time.
      await requestAt(new Date().toISOString());
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await requestAt(new Date().toISOString());
      let logged: Array<{ id: string }> = [];
      for (let tries = 0; logged.length < 5 && tries < 250; tries++) {
        logged = ((await (await fetch(`${tg.url}/api/logs?limit=10`)).json()) as { data: Array<{ id: string }> }).data;
        if (logged.length < 5) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The three requests of beforeAll, then these two.
      expect(logged).toHaveLength(5);
      const [newer, older] = logged.map((entry) => ({ id: entry.id, arrival: Number(entry.id.slice(0, 15)) })) as [{ id: string; arrival: number }, { id: string; arrival: number }];
      await page.goto(`${tg.url}/#/logs`);
      await page.locator(`a[href*="${older.id}"]`).first().waitFor();
      const from = page.getByLabel('From (local time)');
      expect(await from.getAttribute('type')).toBe('datetime-local');
      // The newer request's arrival to the second, on Kolkata's clock (+05:30).
      const second = Math.floor(newer.arrival / 1000) * 1000;
      const local = new Date(second + 330 * 60_000).toISOString().slice(0, 19);
      await from.fill(local);
      const listed = page.waitForRequest((request) => request.url().includes('/api/logs?') && request.url().includes('from='));
      await page.getByRole('button', { name: 'Apply filters' }).click();
      expect(new URL((await listed).url()).searchParams.get('from')).toBe(`${local}+05:30`);
      expect(new URL(page.url().replace('#/', '')).searchParams.get('from')).toBe(`${local}+05:30`);
      // The newer request is listed, the older is not; the input shows the time picked.
      await page.locator(`a[href*="${older.id}"]`).waitFor({ state: 'detached' });
      await page.locator(`a[href*="${newer.id}"]`).first().waitFor();
      expect(await page.locator(`a[href*="${older.id}"]`).count()).toBe(0);
      expect(await page.getByLabel('From (local time)').inputValue()).toBe(local);
      // To the same time: the other way round.
      await page.getByLabel('From (local time)').fill('');
      await page.getByLabel('To (local time)').fill(local);
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.locator(`a[href*="${newer.id}"]`).waitFor({ state: 'detached' });
      await page.locator(`a[href*="${older.id}"]`).first().waitFor();
      expect(await page.locator(`a[href*="${newer.id}"]`).count()).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, TIMEOUT);
});
