import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage, screenshot } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * With TOLLGATE_ADMIN_KEY set, the dashboard asks for the key once, the gateway answers with an httpOnly session
 * cookie (the page's scripts cannot read it), and signing out ends the session.
 */

const ADMIN_KEY = 'dashboard-admin-key-0123456789abcdef';
const TIMEOUT = 60_000;

let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  tg = await startGateway({}, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
});

describe('signing in to the dashboard with the admin key', () => {
  it('asks for the key, shows a wrong one next to the field, signs in with the right one, and signs out', async () => {
    await page.goto(tg.url + '/');
    await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).waitFor();
    await screenshot(page, 'sign-in');

    await page.getByLabel('Admin key').fill('not-the-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The admin key is not valid.').waitFor();
    expect(await page.getByLabel('Admin key').getAttribute('aria-invalid')).toBe('true');

    await page.getByLabel('Admin key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // The session lives in an httpOnly cookie: not readable by the page, and the key is not kept anywhere.
    expect(await page.evaluate('document.cookie')).toBe('');
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path])).toEqual([['tollgate_admin_session', true, 'Strict', '/api']]);
    expect(JSON.stringify(await page.evaluate('JSON.stringify(localStorage) + JSON.stringify(sessionStorage)'))).not.toContain(ADMIN_KEY);

    // Pages work with the session (a page that lists keys answers).
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys & teams', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Virtual keys' }).waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).waitFor();
    // The one console error is the deliberate 401 of the wrong key.
    expect(errors.filter((text) => !text.includes('401'))).toEqual([]);
  }, TIMEOUT);

  it('a sign-out the gateway did not take shows an error and stays signed in; the sign-in form comes once it did', async () => {
    await page.getByLabel('Admin key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const signedIn = page.getByRole('button', { name: 'Sign out' });
    await signedIn.waitFor();

    // The DELETE fails (a proxy's 502, then the gateway unreachable): the session cookie is still valid.
    let deletes = 0;
    await page.route('**/api/session', async (route) => {
      if (route.request().method() !== 'DELETE') return route.fallback();
      deletes++;
      return deletes === 1 ? route.fulfill({ status: 502, contentType: 'text/plain', body: 'Bad Gateway' }) : route.abort('connectionrefused');
    });
    for (const expected of [/502/, /Cannot reach the gateway/]) {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('alert').filter({ hasText: /sign out/i }).filter({ hasText: expected }).waitFor();
      expect(await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).count()).toBe(0);
      await signedIn.waitFor();
    }
    expect(deletes).toBe(2);
    // It was not a sign-out: a reload still finds the session.
    await page.reload();
    await signedIn.waitFor();

    // With the gateway answering again, signing out ends the session and shows the form, which a reload keeps.
    await page.unroute('**/api/session');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).waitFor();
  }, TIMEOUT);

  it('a session that ends while a form is being filled (the gateway restarted) asks for the key and keeps what was typed', async () => {
    await page.getByLabel('Admin key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(`${tg.url}/#/keys`);
    const form = page.getByRole('form', { name: 'Create a virtual key' });
    await form.getByLabel('Name').fill('typed-before-expiry');
    await form.getByLabel('Budget (USD)').fill('25');
    await form.getByLabel('Allowed models').fill('openai/*');

    // The gateway no longer knows the session (a restart forgets sessions; so does a new admin key).
    await page.context().clearCookies();
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to tollgate' }).waitFor();
    await page.getByLabel('Admin key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // Back where the operator was, with the form as they left it: one click sends it.
    await form.waitFor();
    expect(await form.getByLabel('Name').inputValue()).toBe('typed-before-expiry');
    expect(await form.getByLabel('Budget (USD)').inputValue()).toBe('25');
    expect(await form.getByLabel('Allowed models').inputValue()).toBe('openai/*');
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Key “typed-before-expiry” created' }).waitFor();
  }, TIMEOUT);
});
