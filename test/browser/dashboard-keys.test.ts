import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage, screenshot } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** The keys page with many keys: the server pages and searches them; rotating a key shows its new secret once. */

const TIMEOUT = 60_000;
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up', chunkDelayMs: 0 });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } } });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});

/**
 * Waits until the keys table shows `count` rows. Polled from the test through page.evaluate: Playwright's
 * waitForFunction evaluates its predicate in the page with eval, which the dashboard's content security policy
 * (script-src 'self', no unsafe-eval) refuses whenever the first check is not already true.
 */
async function keyRows(count: number): Promise<void> {
  await expect.poll(() => page.evaluate('document.querySelectorAll("tr[data-key-id]").length'), { timeout: 15_000 }).toBe(count);
}

describe('the keys page', () => {
  it('pages 105 keys a hundred at a time, finds one by name, and rotates it (the old secret stops working)', async () => {
    const { api, createKey } = gatewayApi(() => tg.url);
    for (let i = 0; i < 104; i++) await createKey({ name: `bulk-${String(i).padStart(3, '0')}` });
    const target = await createKey({ name: 'rotate-me' });
    expect((await api('GET', '/api/keys?limit=100')).body).toMatchObject({ has_more: true, next_after: expect.any(String) });

    await page.goto(`${tg.url}/#/keys`);
    await page.getByRole('heading', { level: 1, name: 'Virtual keys' }).waitFor();
    await page.locator('tr[data-key-id]').nth(99).waitFor();
    expect(await page.locator('tr[data-key-id]').count()).toBe(100);
    await page.getByRole('button', { name: 'Next 100' }).click();
    await page.getByRole('row', { name: /rotate-me/ }).waitFor();
    expect(await page.locator('tr[data-key-id]').count()).toBe(5);
    await page.getByRole('button', { name: 'Previous 100' }).click();
    await page.getByRole('row', { name: /bulk-000/ }).waitFor();

    await page.getByLabel('Find a key').fill('rotate');
    await page.getByRole('row', { name: /rotate-me/ }).waitFor();
    await keyRows(1);
    await screenshot(page, 'keys-search');

    const row = page.getByRole('row', { name: /rotate-me/ });
    await row.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('heading', { name: 'Key “rotate-me” rotated' }).waitFor();
    const secret = (await page.getByTestId('new-key-secret').textContent()) ?? '';
    expect(secret).not.toBe(target.key);

    const ask = { model: 'openai/m', messages: [{ role: 'user' as const, content: 'hi' }] };
    const old = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: target.key, maxRetries: 0 });
    await expect(old.chat.completions.create(ask)).rejects.toMatchObject({ status: 401 });
    const fresh = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: secret, maxRetries: 0 });
    expect((await fresh.chat.completions.create(ask)).choices[0]?.message.content).toBeTruthy();
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe('a new key secret on the keys page', () => {
  it('takes the focus once when it appears, and leaves it alone while the user works on the page', async () => {
    await page.goto(`${tg.url}/#/keys`);
    // A fresh page: the test before left a search typed and a rotated secret shown.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Virtual keys' }).waitFor();
    const form = page.getByRole('form', { name: 'Create a virtual key' });
    await form.getByLabel('Name').fill('focus-keeper');
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Key “focus-keeper” created' }).waitFor();
    // Screen-reader and keyboard users are taken to the secret at once.
    expect(await page.evaluate('document.activeElement?.querySelector("[data-testid=new-key-secret]") !== null')).toBe(true);

    // Typing a search while the secret is still shown: every keystroke re-renders the page, and each must land in the box.
    const search = page.getByLabel('Find a key');
    await search.click();
    await search.pressSequentially('focus-keeper');
    expect(await search.inputValue()).toBe('focus-keeper');
    expect(await page.evaluate('document.activeElement?.id')).toBe('keys-search-q');
    await keyRows(1);
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe('a key past its expiry on the keys page', () => {
  it('reads "expired", as the gateway refuses it, not "expires <a past date>"', async () => {
    const { createKey, clientFor } = gatewayApi(() => tg.url);
    const expired = await createKey({ name: 'past-expiry', expires_at: '2020-01-01T00:00:00Z' });
    const later = await createKey({ name: 'future-expiry', expires_at: '2099-01-01T00:00:00Z' });
    await expect(clientFor(expired.key).chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 401 });

    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    await page.getByLabel('Find a key').fill('-expiry');
    await keyRows(2);
    const status = (id: string): Promise<string> => page.locator(`tr[data-key-id="${id}"] td`).nth(5).innerText();
    expect(await status(expired.id)).toBe('expired');
    expect(await status(later.id)).toMatch(/^expires /);
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe('deleting the only key of the last page', () => {
  it('goes back a page, instead of saying that no key matches', async () => {
    const { createKey } = gatewayApi(() => tg.url);
    // 101 keys a search finds: the second page holds one.
    for (let i = 0; i < 101; i++) await createKey({ name: `paged-${String(i).padStart(3, '0')}` });

    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    await page.getByLabel('Find a key').fill('paged-');
    await keyRows(100);
    await page.getByRole('button', { name: 'Next 100' }).click();
    const last = page.getByRole('row', { name: /paged-100/ });
    await last.waitFor();
    await last.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete key' }).click();

    // The first page again, with its hundred keys, and nothing claims the search finds none.
    await page.getByRole('row', { name: /paged-000/ }).waitFor();
    expect(await page.locator('tr[data-key-id]').count()).toBe(100);
    expect(await page.getByText('No key matches').count()).toBe(0);
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe('creating a team', () => {
  it('creates one team for a double click on "Create team", not two of the same name', async () => {
    const { api } = gatewayApi(() => tg.url);
    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    const form = page.getByRole('form', { name: 'Create a team' });
    await form.getByLabel('Team name').fill('double-click');
    await form.getByRole('button', { name: 'Create team' }).dblclick();
    await page.getByRole('row', { name: /double-click/ }).waitFor();
    // Both clicks' requests (if there were two) have been answered by the time the list is read again.
    await page.waitForLoadState('networkidle');
    const teams = (await api('GET', '/api/teams')).body as { data: { name: string }[] };
    expect(teams.data.filter((team) => team.name === 'double-click')).toHaveLength(1);
    expect(await page.getByRole('row', { name: /double-click/ }).count()).toBe(1);
    // The form is ready for the next team.
    expect(await form.getByLabel('Team name').inputValue()).toBe('');
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe('closing a key editor', () => {
  it('gives the focus back to the button that opened it, whether closed with Escape or with Close', async () => {
    const { createKey } = gatewayApi(() => tg.url);
    await createKey({ name: 'focus-return' });
    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    await page.getByLabel('Find a key').fill('focus-return');
    await keyRows(1);
    const row = page.getByRole('row', { name: /focus-return/ });

    const guardrails = row.getByRole('button', { name: 'Guardrails of focus-return' });
    await guardrails.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Guardrails of the key “focus-return”' }).waitFor();
    // The editor moves the focus to its heading once it has rendered (an effect, a moment after the heading shows).
    await expect.poll(() => page.evaluate('document.activeElement?.tagName')).toBe('H3');
    await page.keyboard.press('Escape');
    await page.getByRole('heading', { name: 'Guardrails of the key “focus-return”' }).waitFor({ state: 'detached' });
    // A keyboard user goes on from where they were, not from the top of the page.
    await expect.poll(() => page.evaluate('document.activeElement?.textContent')).toBe('Guardrails of focus-return');

    const mcp = row.getByRole('button', { name: 'MCP of focus-return' });
    await mcp.focus();
    await page.keyboard.press('Enter');
    const editor = page.getByRole('region', { name: 'MCP of the key “focus-return”' });
    await editor.waitFor();
    await editor.getByRole('button', { name: 'Close' }).click();
    await editor.waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate('document.activeElement?.textContent')).toBe('MCP of focus-return');
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe('a budget the browser cannot read as a number', () => {
  it('is refused next to the field, not dropped: a typo such as "5e" does not create a key without a budget', async () => {
    const { api } = gatewayApi(() => tg.url);
    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    const form = page.getByRole('form', { name: 'Create a virtual key' });
    await form.getByLabel('Name').fill('typo-budget');
    // A number input holding "5e" reports the value '' (badInput): read as empty, it meant "no budget".
    await form.getByLabel('Budget (USD)').pressSequentially('5e');
    expect(await form.getByLabel('Budget (USD)').evaluate((input) => (input as unknown as { validity: { badInput: boolean } }).validity.badInput)).toBe(true);
    await form.getByRole('button', { name: 'Create key' }).click();

    await expect.poll(() => form.getByLabel('Budget (USD)').getAttribute('aria-invalid')).toBe('true');
    expect(await form.locator('.field-error').innerText()).toMatch(/number/);
    expect(await page.getByTestId('new-key-secret').count()).toBe(0);
    const keys = (await api('GET', '/api/keys?q=typo-budget')).body as { data: unknown[] };
    expect(keys.data).toHaveLength(0);
    expect(errors).toEqual([]);
  }, TIMEOUT);
});

describe("a key's limits on the keys page", () => {
  it('are edited in place (budget, period, rate limit, models), the API refusing a bad one next to its field, and cleared back to none', async () => {
    const { api, createKey, clientFor } = gatewayApi(() => tg.url);
    const key = await createKey({ name: 'limits-edit', budget: 0 });
    const ask = { model: 'openai/m', messages: [{ role: 'user' as const, content: 'hi' }] };
    // A budget of $0: the key is refused until its budget is raised.
    await expect(clientFor(key.key).chat.completions.create(ask)).rejects.toMatchObject({ status: 429 });

    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    await page.getByLabel('Find a key').fill('limits-edit');
    await keyRows(1);
    await page.getByRole('row', { name: /limits-edit/ }).getByRole('button', { name: 'Limits of limits-edit' }).click();
    const editor = page.getByRole('form', { name: 'Limits of limits-edit' });
    await editor.waitFor();
    expect(await editor.getByLabel('Budget (USD)').inputValue()).toBe('0');

    // The API's 400 shows under the field it names.
    await editor.getByLabel('Allowed models').fill('not a model');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => editor.getByLabel('Allowed models').getAttribute('aria-invalid')).toBe('true');
    expect(await editor.locator('.field-error').innerText()).toMatch(/provider/);

    await editor.getByLabel('Allowed models').fill('openai/*');
    await editor.getByLabel('Budget (USD)').fill('12.5');
    await editor.getByLabel('Budget period').selectOption('monthly');
    await editor.getByLabel('Requests per minute').fill('30');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await page.getByRole('row', { name: /limits-edit/ }).getByText('$0 of $12.50 monthly').waitFor();
    expect((await api('GET', `/api/keys/${key.id}`)).body).toMatchObject({ budget: 12.5, budget_period: 'monthly', rate_limit: 30, models: ['openai/*'] });
    expect((await clientFor(key.key).chat.completions.create(ask)).choices[0]?.message.content).toBeTruthy();

    // Emptied fields mean none: no budget, no rate limit, every model.
    await editor.getByLabel('Budget (USD)').fill('');
    await editor.getByLabel('Requests per minute').fill('');
    await editor.getByLabel('Allowed models').fill('');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await page.getByRole('row', { name: /limits-edit/ }).getByText('no budget').waitFor();
    expect((await api('GET', `/api/keys/${key.id}`)).body).toMatchObject({ budget: null, rate_limit: null, models: [] });
    expect(errors.filter((text) => !text.includes('400'))).toEqual([]);
  }, TIMEOUT);
});

describe("a team's limits on the keys page", () => {
  it("are edited in place: a team's budget raised lets its keys through again", async () => {
    const { api, createKey, clientFor } = gatewayApi(() => tg.url);
    const team = (await api('POST', '/api/teams', { name: 'limits-team', budget: 0 })).body as { id: string };
    const key = await createKey({ name: 'limits-team-key', team: team.id });
    const ask = { model: 'openai/m', messages: [{ role: 'user' as const, content: 'hi' }] };
    await expect(clientFor(key.key).chat.completions.create(ask)).rejects.toMatchObject({ status: 429 });

    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    const row = page.getByRole('row', { name: /limits-team/ }).filter({ has: page.getByRole('button', { name: 'Limits of team limits-team' }) });
    await row.getByRole('button', { name: 'Limits of team limits-team' }).click();
    const editor = page.getByRole('form', { name: 'Limits of team limits-team' });
    await editor.getByLabel('Budget (USD)').fill('7');
    await editor.getByLabel('Requests per minute').fill('0');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    // The API's 400 about the rate limit shows under it, and nothing is saved.
    await expect.poll(() => editor.getByLabel('Requests per minute').getAttribute('aria-invalid')).toBe('true');
    expect((await api('GET', `/api/teams/${team.id}`)).body).toMatchObject({ budget: 0 });

    await editor.getByLabel('Requests per minute').fill('');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await row.getByText('$0 of $7.00').waitFor();
    expect((await api('GET', `/api/teams/${team.id}`)).body).toMatchObject({ budget: 7, rate_limit: null });
    expect((await clientFor(key.key).chat.completions.create(ask)).choices[0]?.message.content).toBeTruthy();
    expect(errors.filter((text) => !text.includes('400'))).toEqual([]);
  }, TIMEOUT);
});
