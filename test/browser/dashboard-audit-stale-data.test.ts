import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A view whose new query the API refuses shows the refusal, not the answer to the query before it under the new
 * one's labels. The Spend page grouped by key, then set to a range the API refuses (From after To) and to team,
 * went on showing the keys' totals as "Totals per team" (and its CSV button downloaded them); the request logs kept
 * listing every request under a refused filter; one request's page showed the request opened before under the
 * id of one that is not there.
 */

const TIMEOUT = 60_000;
const PRICES = { m: { input_per_mtok: 10, output_per_mtok: 20 } };
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
let keyId = '';

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up', chunkDelayMs: 0 });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up', prices: PRICES } } });
  const { createKey, clientFor } = gatewayApi(() => tg.url);
  const key = await createKey({ name: 'spender' });
  keyId = key.id;
  for (let i = 0; i < 3; i++) await clientFor(key.key).chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: `hi ${i}` }] });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});

/** Polled from the test: the dashboard's content security policy refuses Playwright's eval-based waitForFunction. */
const countOf = (selector: string): Promise<number> => page.evaluate(`document.querySelectorAll(${JSON.stringify(selector)}).length`);

describe('a query the API refuses', () => {
  it('on the Spend page, shows the refusal and no longer the totals of the range and grouping before it', async () => {
    await page.goto(`${tg.url}/#/spend?group_by=key`);
    await page.getByRole('rowheader', { name: `spender (${keyId})` }).waitFor();
    const main = page.locator('main');

    await page.getByLabel('From').fill('2099-01-05');
    await page.getByText('from must be before to.').waitFor();
    await expect.poll(() => countOf('main table tbody tr'), { timeout: 10_000 }).toBe(0);
    expect(await page.getByRole('button', { name: 'Download CSV' }).isDisabled()).toBe(true);

    // Another grouping of the same refused range: the key's numbers must not come back labelled as a team.
    await page.getByLabel('Group by').selectOption('team');
    await page.waitForURL(/group_by=team/);
    await page.getByText('from must be before to.').waitFor();
    await expect.poll(() => countOf('main table tbody tr'), { timeout: 10_000 }).toBe(0);
    expect(await main.innerText()).not.toContain(keyId);
    expect(await main.innerText()).not.toContain('Totals per team');
    expect(errors.filter((error) => !/400/.test(error))).toEqual([]);
  }, TIMEOUT);

  it('in the request logs, lists no request under a filter the API refused', async () => {
    await page.goto(`${tg.url}/#/logs`);
    await page.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    await expect.poll(() => countOf('main table tbody tr'), { timeout: 10_000 }).toBe(3);

    await page.getByLabel('Status', { exact: true }).fill('abc');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText("status must be an HTTP status (429) or a class (4xx), got 'abc'.").waitFor();
    await expect.poll(() => countOf('main table tbody tr'), { timeout: 10_000 }).toBe(0);
  }, TIMEOUT);

  it('on one request’s page, shows no other request’s details under an id the log does not hold', async () => {
    await page.goto(`${tg.url}/#/logs`);
    await page.locator('main table tbody tr a').first().click();
    await page.getByRole('heading', { name: 'Attempts' }).waitFor();

    await page.goto(`${tg.url}/#/logs/req_not_there`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('404');
    expect(await page.getByRole('heading', { name: 'Attempts' }).count()).toBe(0);
    expect(await page.locator('main').innerText()).not.toContain(keyId);
  }, TIMEOUT);
});
