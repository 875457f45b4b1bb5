import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { collectPageErrors, openBrowserPage, screenshot } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * The settings and audit pages in a real browser against a real gateway: the effective config as YAML, a bad
 * value refused inline (message and field) before anything is saved, a fixed change saved and seen in
 * `GET /api/config` and as a new entry of the audit log.
 */

const TIMEOUT = 60_000;
const SECRET = 'sk-settings-secret-value-0042';
/** Chromium logs every 4xx answer as a console error: the deliberate dry runs of a bad config are these. */
const REFUSED = 'console: Failed to load resource: the server responded with a status of 400 (Bad Request)';

let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  tg = await startGateway({
    providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: SECRET } },
    routes: { chat: { targets: [{ model: 'openai/m', weight: 1 }, { model: 'openai/n', weight: 1 }] } },
  });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
});

async function config(): Promise<any> {
  return (await fetch(`${tg.url}/api/config`)).json();
}

function lineOf(text: string, needle: string): number {
  return text.slice(0, text.indexOf(needle)).split('\n').length;
}

describe('the settings and audit pages in Chromium', () => {
  it('shows the effective config as YAML, secrets masked, with version and warnings as information', async () => {
    await page.goto(tg.url + '/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    const editor = page.getByLabel('Configuration (YAML)');
    await editor.waitFor();
    const text = await editor.inputValue();
    expect(text).toContain('log_retention_days: 30');
    expect(text).toContain('name: chat');
    expect(text).not.toContain(SECRET);
    expect(text).toContain('****0042');
    // Read-only fields of the view are shown beside the text, not in it.
    expect(text).not.toMatch(/^(version|precedence|file|warnings|file_rejection):/m);
    expect(await page.getByTestId('config-version').textContent()).toBe(String((await config()).version));
    expect(await page.evaluate<string>(`getComputedStyle(document.getElementById('config-yaml')).fontFamily`)).toMatch(/monospace/);
    await screenshot(page, 'settings');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows a YAML syntax error and an invalid value inline before saving, then saves a fixed change', async () => {
    const editor = page.getByLabel('Configuration (YAML)');
    const original = await editor.inputValue();
    const versionBefore = (await config()).version as number;
    const save = page.getByRole('button', { name: 'Save', exact: true });
    expect(await save.isDisabled()).toBe(true);

    // Broken YAML is caught in the page, with its line (no request is made for it).
    await editor.fill(`${original}routes: [\n`);
    const problem = page.getByTestId('config-problem');
    await problem.waitFor();
    expect(await problem.textContent()).toMatch(/Line \d+/);
    expect(errors).toEqual([]);

    // An invalid value: the gateway's dry run names the field; the page shows it with its line.
    const invalid = original.replace('log_retention_days: 30', 'log_retention_days: -5');
    await editor.fill(invalid);
    await page.getByTestId('config-problem-field').waitFor();
    expect(await page.getByTestId('config-problem-field').textContent()).toBe('settings.log_retention_days');
    expect(await page.getByTestId('config-problem-message').textContent()).toContain('log_retention_days');
    expect(await problem.textContent()).toContain(`Line ${lineOf(invalid, 'log_retention_days: -5')}`);
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    expect(await save.isDisabled()).toBe(true);
    await screenshot(page, 'settings-invalid');
    // "Go to line" selects the line with the problem.
    await problem.getByRole('button', { name: /Go to line/ }).click();
    expect(await page.evaluate<string>(`(() => { const e = document.getElementById('config-yaml'); return e.value.slice(e.selectionStart, e.selectionEnd); })()`)).toContain('log_retention_days: -5');
    // Nothing was applied by the dry run.
    expect((await config()).version).toBe(versionBefore);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((error) => error === REFUSED)).toBe(true);
    errors.length = 0;

    // Fixed, with a route's weight changed too: the dry run passes, then Save applies it.
    const fixed = original.replace('log_retention_days: 30', 'log_retention_days: 7').replace(/(- model: openai\/n\n\s+weight:) 1/, '$1 3');
    expect(fixed).toContain('weight: 3');
    await editor.fill(fixed);
    await page.getByTestId('config-valid').waitFor();
    expect(await editor.getAttribute('aria-invalid')).toBeNull();
    await save.click();
    await page.getByTestId('config-saved').waitFor();
    expect(await page.getByTestId('config-saved').textContent()).toContain(`version ${versionBefore + 1}`);
    await screenshot(page, 'settings-saved');

    const after = await config();
    expect(after.version).toBe(versionBefore + 1);
    expect(after.settings.log_retention_days).toBe(7);
    const chat = (after.routes as Array<{ name: string; targets: Array<{ model: string; weight: number }> }>).find((route) => route.name === 'chat');
    expect(chat?.targets).toEqual([{ model: 'openai/m', weight: 1 }, { model: 'openai/n', weight: 3 }]);
    // The page shows the new effective config, and the secret still works (the masked value stood for it).
    expect(await editor.inputValue()).toContain('log_retention_days: 7');
    expect(tg.gateway.configService.current().providers.get('openai')?.keys.map((key) => key.value)).toEqual([SECRET]);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('lists the change in the audit log with who, when, what and before/after, and links the exports', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    const row = page.locator('tbody tr').first();
    await row.getByRole('cell', { name: 'config.replaced' }).waitFor();
    // Who: the API's actor (loopback, as no admin key is set) and its address.
    expect(await row.getByRole('cell', { name: 'loopback:127.0.0.1' }).count()).toBe(1);
    expect(await row.locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
    await row.locator('summary').click();
    const changed = row.getByRole('list', { name: 'Changed fields' });
    await changed.waitFor();
    expect(await changed.textContent()).toContain('settings.log_retention_days');
    const panes = await row.locator('.change-panes').textContent();
    expect(panes).toContain('log_retention_days: 7');
    expect(panes).not.toContain(SECRET);
    await screenshot(page, 'audit');

    for (const format of ['jsonl', 'csv']) {
      const link = page.getByRole('link', { name: format === 'csv' ? 'CSV' : 'JSON lines' });
      const url = new URL((await link.getAttribute('href'))!, tg.url);
      expect(url.pathname + url.search).toBe(`/api/audit/export?format=${format}`);
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('config.replaced');
    }
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('asks before a save deletes what the API set, and before discarding edits', async () => {
    expect((await fetch(`${tg.url}/api/routes/spare`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ targets: [{ model: 'openai/m' }] }) })).status).toBe(201);
    await page.goto(tg.url + '/#/settings');
    await page.reload();
    const editor = page.getByLabel('Configuration (YAML)');
    await editor.waitFor();
    const original = await editor.inputValue();
    expect(original).toContain('name: spare');
    const versionBefore = (await config()).version as number;

    // A fallback to a provider with no key is valid but warned about: the dry run's warnings show.
    await editor.fill(original.replace('fallbacks: []', 'fallbacks: [mistral/mistral-small-latest]'));
    await page.getByTestId('config-valid').waitFor();
    const warnings = page.getByRole('list', { name: 'Warnings of the edited config' });
    await warnings.waitFor();
    expect(await warnings.textContent()).toContain('routes.chat.fallbacks');
    await screenshot(page, 'settings-warnings');

    // Discarding the edit: asked first, and the text goes back.
    await page.getByRole('button', { name: 'Discard changes' }).click();
    await page.getByRole('dialog', { name: 'Discard your changes?' }).getByRole('button', { name: 'Discard changes' }).click();
    await expect.poll(() => editor.inputValue()).toBe(original);

    // The route set through the API taken out of the text: Save names it and asks; Cancel keeps it.
    const document = parse(original) as { routes: Array<{ name: string }> };
    document.routes = document.routes.filter((route) => route.name !== 'spare');
    await editor.fill(stringify(document, { lineWidth: 0 }));
    await page.getByTestId('config-valid').waitFor();
    const save = page.getByRole('button', { name: 'Save', exact: true });
    await save.click();
    const dialog = page.getByRole('dialog', { name: 'Delete items set through the API?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('routes.spare');
    await screenshot(page, 'settings-confirm-delete');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await fetch(`${tg.url}/api/routes/spare`)).status).toBe(200);
    expect((await config()).version).toBe(versionBefore);

    await save.click();
    await dialog.getByRole('button', { name: 'Save and delete' }).click();
    await page.getByTestId('config-saved').waitFor();
    expect((await fetch(`${tg.url}/api/routes/spare`)).status).toBe(404);
    expect((await config()).version).toBe(versionBefore + 1);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('clears the error of a check that could not reach the gateway once a later check passes', async () => {
    await page.goto(tg.url + '/#/settings');
    await page.reload();
    const editor = page.getByLabel('Configuration (YAML)');
    await editor.waitFor();
    const original = await editor.inputValue();

    // The gateway briefly unreachable: the dry run fails, and the page says so above the text.
    let checks = 0;
    await page.route('**/api/config/validate', async (route) => {
      checks++;
      return checks === 1 ? route.abort('connectionrefused') : route.fallback();
    });
    await editor.fill(original.replace(/log_retention_days: \d+/, 'log_retention_days: 11'));
    const unreachable = page.getByRole('alert').filter({ hasText: 'Cannot reach the gateway' });
    await unreachable.waitFor();

    // Reachable again: the next check passes, and the old error goes.
    await editor.fill(original.replace(/log_retention_days: \d+/, 'log_retention_days: 12'));
    await page.getByTestId('config-valid').waitFor();
    await unreachable.waitFor({ state: 'detached' });
    expect(checks).toBe(2);
    await page.unroute('**/api/config/validate');
    // The one refused connection, as the request and as the console reported it.
    expect(errors.filter((error) => !/ERR_CONNECTION_REFUSED/.test(error))).toEqual([]);
    errors.length = 0;
  }, TIMEOUT);

  it('does not save over a change made through the API since the page read the config: it says so, and the change stays', async () => {
    await page.goto(tg.url + '/#/settings');
    await page.reload();
    const editor = page.getByLabel('Configuration (YAML)');
    await editor.waitFor();
    const original = await editor.inputValue();
    // Another administrator adds a route while this page is open.
    expect((await fetch(`${tg.url}/api/routes/added-meanwhile`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ targets: [{ model: 'openai/m' }] }) })).status).toBe(201);
    const versionBefore = (await config()).version as number;

    await editor.fill(original.replace(/log_retention_days: \d+/, 'log_retention_days: 9'));
    await page.getByTestId('config-valid').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'changed since it was read' });
    await refused.waitFor();
    expect((await fetch(`${tg.url}/api/routes/added-meanwhile`)).status).toBe(200);
    expect((await config()).version).toBe(versionBefore);
    expect(errors).toEqual(['console: Failed to load resource: the server responded with a status of 412 (Precondition Failed)']);
    errors.length = 0;
  }, TIMEOUT);

  it('pages through the audit log with the API cursor', async () => {
    // Enough changes for two pages of 25.
    for (let days = 1; days <= 26; days++) {
      const response = await fetch(`${tg.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ settings: { log_retention_days: days } }) });
      expect(response.status).toBe(200);
    }
    await page.goto(tg.url + '/#/audit');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await page.locator('tbody tr').first().waitFor();
    expect(await page.locator('tbody tr').count()).toBe(25);
    expect(await page.getByRole('button', { name: '← Newer' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Older →' }).click();
    // The oldest entry is the first save from the settings page.
    await page.getByRole('cell', { name: 'config.replaced' }).last().waitFor();
    const total = ((await (await fetch(`${tg.url}/api/audit?limit=500`)).json()) as { data: unknown[] }).data.length;
    expect(total).toBeGreaterThan(25);
    await expect.poll(() => page.locator('tbody tr').count()).toBe(total - 25);
    await page.getByRole('button', { name: '← Newer' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(25);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('fits a phone-sized screen: neither page scrolls sideways', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const small = await phone.newPage();
    const smallErrors = collectPageErrors(small);
    for (const [hash, heading] of [['/settings', 'Settings'], ['/audit', 'Audit log']] as const) {
      await small.goto(`${tg.url}/#${hash}`);
      await small.getByRole('heading', { level: 1, name: heading }).waitFor();
      await small.waitForLoadState('networkidle');
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, `#${hash} is wider than the screen`).toBeLessThanOrEqual(0);
      await screenshot(small, `phone-${hash.slice(1)}`);
    }
    expect(smallErrors).toEqual([]);
    await phone.close();
  }, TIMEOUT);
});
