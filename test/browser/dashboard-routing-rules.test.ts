import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/** The routes page lists the usage-based routing rules in effect, in order, and links to where they are edited. */

const TIMEOUT = 60_000;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  tg = await startGateway({
    providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-x' } },
    routes: { cheap: { targets: [{ model: 'openai/mini' }] }, big: { targets: [{ model: 'openai/large' }] } },
    routing_rules: [
      { name: 'long prompts', when: { model: 'cheap', estimated_tokens_gte: 8000 }, route_to: 'big' },
      { when: { key_budget_used_pct_gte: 90 }, route_to: 'cheap' },
    ],
  });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
});

describe('routing rules on the routes page', () => {
  it('lists the rules in order with their conditions and destinations', async () => {
    await page.goto(`${tg.url}/#/routes`);
    const section = page.getByTestId('routing-rules');
    await section.getByRole('row', { name: /long prompts/ }).waitFor();
    const rows = await section.locator('tbody tr').allInnerTexts();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/1\s+long prompts\s+model = cheap\s+estimated_tokens_gte = 8000\s+big/);
    expect(rows[1]).toMatch(/2\s+unnamed\s+key_budget_used_pct_gte = 90\s+cheap/);
    await section.getByRole('link', { name: 'settings page' }).click();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    expect(errors).toEqual([]);
  }, TIMEOUT);
});
