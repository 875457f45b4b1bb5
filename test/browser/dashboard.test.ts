import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectPageErrors, openBrowserPage, screenshot } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * The dashboard in a real browser against a real gateway and a scripted upstream: every page in the navigation
 * loads without errors, and the loop a user runs works end to end: create a team and a key in the UI, call with
 * the official OpenAI client using that key, find the request in the logs and the spend on the spend page.
 */

const PRICES = { m: { input_per_mtok: 10, output_per_mtok: 20 }, cheap: { input_per_mtok: 0.01, output_per_mtok: 0.02 } };
const TIMEOUT = 60_000;

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
/** The secret of the key created in the UI, for the test that disables it. */
let createdSecret = '';

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up', prices: PRICES } },
    routes: { chat: { targets: [{ model: 'openai/m' }] } },
  });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});

async function openNav(label: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
}

describe('the dashboard in Chromium', () => {
  it('loads the overview at / with no console errors, and every page in the navigation works', async () => {
    const response = await page.goto(tg.url + '/');
    expect(response?.status()).toBe(200);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByRole('heading', { name: 'Provider health' }).waitFor();
    // The route's target is listed with its breaker.
    await page.getByRole('cell', { name: 'openai/m' }).waitFor();
    await screenshot(page, 'overview');

    for (const [label, heading] of [
      ['Request logs', 'Request logs'],
      ['Keys & teams', 'Virtual keys'],
      ['Spend', 'Spend'],
      ['Overview', 'Overview'],
    ] as const) {
      await openNav(label);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      await expect(page.getByRole('link', { name: label, exact: true })).toBeTruthy();
      expect(await page.getByRole('link', { name: label, exact: true }).getAttribute('aria-current')).toBe('page');
    }
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('runs no script but its own bundles: one injected into the page is refused by the content security policy', async () => {
    await page.goto(tg.url + '/');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const before = errors.length;
    const ran = await page.evaluate(`new Promise((resolve) => {
      document.addEventListener('securitypolicyviolation', (event) => resolve('refused: ' + event.violatedDirective), { once: true });
      const script = document.createElement('script');
      script.textContent = 'window.injectedRan = true';
      document.body.appendChild(script);
      setTimeout(() => resolve(window.injectedRan ? 'ran' : 'no violation reported'), 2000);
    })`);
    expect(ran).toBe('refused: script-src-elem');
    // The refusal is the one console error (Chromium reports it there); the page's own work raised none.
    expect(errors.slice(before).every((line) => line.includes('Content Security Policy'))).toBe(true);
    errors.splice(before);
  }, TIMEOUT);

  it('is usable from the keyboard: the first Tab reaches the skip link, which moves focus to the page', async () => {
    await page.goto(tg.url + '/#/logs');
    // A fresh load: after in-page navigation the focus would still sit on the link that was followed.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    // The focus ring is drawn (not suppressed by the styles).
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement?.id')).toBe('main');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('creates a team and a key in the UI; traffic with that key shows in the logs and on the spend page', async () => {
    await page.goto(tg.url + '/#/keys');
    await page.getByRole('heading', { level: 1, name: 'Virtual keys' }).waitFor();
    await page.getByText('No virtual keys yet').waitFor();

    // A team first, so the key can belong to it.
    const teamForm = page.getByRole('form', { name: 'Create a team' });
    await teamForm.getByLabel('Team name').fill('research');
    await teamForm.getByLabel('Budget (USD)').fill('10');
    await teamForm.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('row', { name: /research/ }).waitFor();

    // The API's validation message shows next to the field it names.
    const keyForm = page.getByRole('form', { name: 'Create a virtual key' });
    await keyForm.getByLabel('Name', { exact: true }).fill('browser-key');
    await keyForm.getByLabel('Requests per minute').fill('1.5');
    await keyForm.getByRole('button', { name: 'Create key' }).click();
    await keyForm.locator('#field-rate_limit-error').waitFor();
    expect(await keyForm.getByLabel('Requests per minute').getAttribute('aria-invalid')).toBe('true');
    // Chromium logs every 4xx answer as a console error; this one was asked for, and is the only one.
    expect(errors).toEqual(['console: Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    errors.length = 0;

    await keyForm.getByLabel('Requests per minute').fill('');
    await keyForm.getByLabel('Team').selectOption({ label: 'research' });
    await keyForm.getByLabel('Budget (USD)').fill('5');
    await keyForm.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-key-secret').textContent())!;
    expect(secret).toMatch(/^tg-/);
    createdSecret = secret;
    await page.getByRole('button', { name: 'Copy secret' }).waitFor();
    await screenshot(page, 'keys-created');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.getByTestId('new-key-secret').count()).toBe(0);

    const keyRow = page.getByRole('row', { name: /browser-key/ });
    const keyId = (await keyRow.getAttribute('data-key-id'))!;
    expect(await keyRow.getByRole('cell', { name: 'research' }).count()).toBe(1);

    // Traffic with the official client, using the key made in the UI.
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: secret, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hello from the browser test' }] });
    expect(completion.choices[0]?.message.content).toBeTruthy();

    // The logs page, filtered by the key, lists it; opening it shows attempts, timings, tokens and cost.
    await page.goto(tg.url + '/#/logs');
    await page.getByLabel('Key id').fill(keyId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const firstRow = page.locator('tbody tr').first();
    await firstRow.getByRole('cell', { name: keyId }).waitFor({ timeout: 10_000 });
    expect(await page.locator('tbody tr').count()).toBe(1);
    await screenshot(page, 'logs');
    await firstRow.getByRole('link').click();
    await page.getByRole('heading', { name: 'Attempts' }).waitFor();
    await page.getByRole('cell', { name: 'openai', exact: true }).waitFor();
    expect(await page.getByText('Prompt', { exact: true }).count()).toBe(1);
    // Its place in write order, the cursor a log shipper resumes from, as the API gives it.
    const logged = (await (await fetch(`${tg.url}/api/logs?key_id=${keyId}`)).json()) as { data: { write_seq: number }[] };
    const writeSeq = page.getByRole('definition').filter({ has: page.locator('code[title*="written_after"]') });
    expect(await writeSeq.textContent()).toBe(String(logged.data[0]!.write_seq));
    await screenshot(page, 'log-detail');

    // Spend by key names the key; the rollups are written about once a second.
    await expect.poll(async () => {
      await page.goto(tg.url + '/#/spend?group_by=key');
      await page.getByRole('heading', { level: 1, name: 'Spend' }).waitFor();
      await page.waitForLoadState('networkidle');
      return page.getByRole('rowheader', { name: new RegExp(`browser-key \\(${keyId}\\)`) }).count();
    }, { timeout: 10_000 }).toBe(1);
    await screenshot(page, 'spend');
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download CSV' }).click();
    const csv = await (await download).path().then((path) => import('node:fs').then((fs) => fs.readFileSync(path, 'utf8')));
    expect(csv.split('\r\n')[0]).toBe('start,key,name,requests,errors,spend_usd,input_tokens,output_tokens');
    expect(csv).toContain(`${keyId},browser-key,1,0,`);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('disables a key (its calls are refused) and deletes it only after confirming', async () => {
    await page.goto(tg.url + '/#/keys');
    const row = page.getByRole('row', { name: /browser-key/ });
    await row.getByRole('button', { name: /Disable/ }).click();
    await row.getByText('disabled').waitFor();
    const keys = (await (await fetch(`${tg.url}/api/keys`)).json()) as { data: { disabled: boolean }[] };
    expect(keys.data[0]?.disabled).toBe(true);
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: createdSecret, maxRetries: 0 });
    await expect(client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 401 });

    await row.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('row', { name: /browser-key/ }).count()).toBe(1);

    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete key' }).click();
    await page.getByText('No virtual keys yet').waitFor();
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('says why the logs page is empty when the API refuses the page cursor of a link', async () => {
    // A shared link cut short, or edited by hand: the API refuses `before`, which no filter field stands for.
    const other = await browser.newPage();
    const otherErrors = collectPageErrors(other);
    await other.goto(`${tg.url}/#/logs?before=not-a-cursor`);
    await other.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    await other.getByRole('alert').filter({ hasText: 'before must be an entry id' }).waitFor();
    // The one console error is that 400, asked for.
    expect(otherErrors).toEqual(['console: Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    await other.close();
  }, TIMEOUT);

  it('fits a phone-sized screen: no page scrolls sideways', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const small = await phone.newPage();
    const smallErrors = collectPageErrors(small);
    for (const [hash, heading] of [['/', 'Overview'], ['/logs', 'Request logs'], ['/keys', 'Virtual keys'], ['/spend', 'Spend']] as const) {
      await small.goto(`${tg.url}/#${hash}`);
      await small.getByRole('heading', { level: 1, name: heading }).waitFor();
      await small.waitForLoadState('networkidle');
      // Wide tables scroll inside their own box; the page itself must not.
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, `#${hash} is wider than the screen`).toBeLessThanOrEqual(0);
      await screenshot(small, `phone-${hash.slice(1) || 'overview'}`);
    }
    expect(smallErrors).toEqual([]);
    await phone.close();
  }, TIMEOUT);
});

describe('a request that cost a tiny fraction of a cent', () => {
  it('shows its cost written out in dollars, not in exponent notation', async () => {
    const { createKey, clientFor } = gatewayApi(() => tg.url);
    const { key } = await createKey({ name: 'cheap-caller' });
    await clientFor(key).chat.completions.create({ model: 'openai/cheap', messages: [{ role: 'user', content: 'hi' }] });

    await page.goto(`${tg.url}/#/logs?model=openai%2Fcheap`);
    const row = page.locator('tbody tr').first();
    await row.getByRole('cell', { name: 'openai/cheap' }).waitFor();
    // A few tokens at a cent per million: some hundred-millionths of a dollar (was "$8.0e-8").
    const cost = await row.locator('td').nth(7).innerText();
    expect(cost).toMatch(/^\$0\.0000000\d{1,2}$/);
    await row.getByRole('link').click();
    await page.getByRole('heading', { name: 'Tokens and cost' }).waitFor();
    expect(await page.getByRole('definition').filter({ hasText: cost }).count()).toBe(1);
    expect(errors).toEqual([]);
  }, TIMEOUT);
});
