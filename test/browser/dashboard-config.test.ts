import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectPageErrors, openBrowserPage, screenshot } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * Configuration through the dashboard, in Chromium against a real gateway and two scripted upstreams: add
 * providers and keys (secrets shown masked from then on), test them, create a route with two weighted targets
 * and a fallback, send traffic with the official OpenAI client, change a weight in the UI and see the next
 * requests follow it, without a restart.
 */

const TIMEOUT = 60_000;
const SECRET_A = 'sk-upstream-a-secret-1111';
const SECRET_B = 'sk-upstream-b-secret-2222';

let upstreamA: ScriptedUpstream;
let upstreamB: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  upstreamA = await startOpenAIUpstream({ apiKey: SECRET_A, chunkDelayMs: 0 });
  upstreamB = await startOpenAIUpstream({ apiKey: SECRET_B, chunkDelayMs: 0 });
  tg = await startGateway({});
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstreamA?.close();
  await upstreamB?.close();
});

/** Chromium logs every 4xx/5xx answer as a console error; a test that asks for one takes exactly those off. */
function expectOnlyRefusals(statuses: number[]): void {
  const expected = statuses.map((status) => expect.stringMatching(new RegExp(`^console: Failed to load resource: the server responded with a status of ${status} `)));
  expect(errors).toEqual(expected);
  errors.length = 0;
}

/** Chat completions each upstream answered for `model` since its last reset. */
function chatCalls(upstream: ScriptedUpstream, model?: string): number {
  return upstream.calls.filter((call) => call.path === '/v1/chat/completions' && (model === undefined || call.body?.model === model)).length;
}

async function send(client: OpenAI, n: number, model = 'mix'): Promise<void> {
  for (let i = 0; i < n; i++) {
    const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `request ${i}` }] });
    expect(completion.choices[0]?.message.content).toBeTruthy();
  }
}

describe('providers and routes in the dashboard', () => {
  it('lists providers, and adds one with a key through the form; the secret is shown masked from then on', async () => {
    await page.goto(tg.url + '/#/providers');
    await page.getByRole('heading', { level: 1, name: 'Providers' }).waitFor();
    await page.getByRole('row', { name: /openai/ }).first().waitFor();
    expect(await page.getByRole('link', { name: 'Providers', exact: true }).getAttribute('aria-current')).toBe('page');

    const form = page.getByRole('form', { name: 'Add a provider' });
    // The API's validation message shows next to the field it names.
    await form.getByLabel('Name').fill('up-a');
    await form.getByLabel('Base URL').fill('not a url');
    await form.getByRole('button', { name: 'Add provider' }).click();
    await form.locator('#add-provider-base_url-error').waitFor();
    expect(await form.getByLabel('Base URL').getAttribute('aria-invalid')).toBe('true');
    expectOnlyRefusals([400]);

    await form.getByLabel('Type').fill('openai');
    await form.getByLabel('Base URL').fill(`${upstreamA.url}/v1`);
    await form.getByLabel('API key').fill(SECRET_A);
    await form.getByRole('button', { name: 'Add provider' }).click();
    // It opens the new provider's page.
    await page.getByRole('heading', { level: 1, name: 'Provider up-a' }).waitFor();
    await page.getByRole('rowheader', { name: '****1111' }).waitFor();
    expect(await page.content()).not.toContain(SECRET_A);

    const stored = (await (await fetch(`${tg.url}/api/providers/up-a`)).json()) as { type: string; base_url: string; keys: { value: string; source: string }[] };
    expect(stored).toMatchObject({ type: 'openai', base_url: `${upstreamA.url}/v1`, keys: [{ value: '****1111', source: 'api' }] });

    // Test: one call of one token through tollgate.
    await page.getByRole('form', { name: 'Test' }).getByLabel('Model').fill('m');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByTestId('test-result').getByText('Works').waitFor();
    const call = upstreamA.calls.at(-1);
    expect(call?.body).toMatchObject({ model: 'm', max_tokens: 1 });
    expect(call?.headers.authorization).toBe(`Bearer ${SECRET_A}`);
    await screenshot(page, 'provider-detail');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('adds a key to a provider that has none, sets its weight, tests the provider, and deletes a key after confirming', async () => {
    await page.goto(tg.url + '/#/providers');
    const form = page.getByRole('form', { name: 'Add a provider' });
    await form.getByLabel('Name').fill('up-b');
    await form.getByLabel('Type').fill('openai');
    await form.getByLabel('Base URL').fill(`${upstreamB.url}/v1`);
    await form.getByRole('button', { name: 'Add provider' }).click();
    await page.getByRole('heading', { level: 1, name: 'Provider up-b' }).waitFor();
    await page.getByText('No key.').waitFor();

    // Without a key the upstream refuses the test call, and the page says so.
    await page.getByRole('form', { name: 'Test' }).getByLabel('Model').fill('m');
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByTestId('test-result').getByText('Failed').waitFor();
    expect(errors.length).toBe(1);
    expect(errors[0]).toMatch(/^console: Failed to load resource: the server responded with a status of 4\d\d /);
    errors.length = 0;

    const keyForm = page.getByRole('form', { name: 'Add a key' });
    await keyForm.getByLabel('Secret').fill(SECRET_B);
    await keyForm.getByRole('button', { name: 'Add key' }).click();
    await page.getByRole('rowheader', { name: '****2222' }).waitFor();
    expect(await keyForm.getByLabel('Secret').inputValue()).toBe('');
    expect(await page.content()).not.toContain(SECRET_B);

    await page.getByRole('button', { name: 'Test', exact: true }).click();
    await page.getByTestId('test-result').getByText('Works').waitFor();
    expect(upstreamB.calls.at(-1)?.headers.authorization).toBe(`Bearer ${SECRET_B}`);

    // A second key, its weight set in the table, then deleted after confirming.
    await keyForm.getByLabel('Secret').fill('sk-upstream-b-spare-3333');
    await keyForm.getByRole('button', { name: 'Add key' }).click();
    const spare = page.getByRole('row', { name: /\*\*\*\*3333/ });
    await spare.waitFor();
    await spare.getByLabel('Weight of ****3333').fill('2');
    await spare.getByRole('button', { name: 'Set weight of ****3333' }).click();
    await expect
      .poll(async () => ((await (await fetch(`${tg.url}/api/providers/up-b`)).json()) as { keys: { value: string; weight: number }[] }).keys.find((key) => key.value === '****3333')?.weight)
      .toBe(2);
    // Out of rotation and back: the key stays listed, marked disabled.
    await spare.getByRole('button', { name: 'Disable the key ****3333' }).click();
    await spare.getByText('disabled', { exact: true }).waitFor();
    await expect
      .poll(async () => ((await (await fetch(`${tg.url}/api/providers/up-b`)).json()) as { keys: { value: string; disabled?: boolean }[] }).keys.find((key) => key.value === '****3333')?.disabled)
      .toBe(true);
    await spare.getByRole('button', { name: 'Enable the key ****3333' }).click();
    await spare.getByRole('button', { name: 'Disable the key ****3333' }).waitFor();
    expect(await spare.getByText('disabled', { exact: true }).count()).toBe(0);
    await spare.getByRole('button', { name: 'Delete key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('row', { name: /\*\*\*\*3333/ }).count()).toBe(1);
    await spare.getByRole('button', { name: 'Delete key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete key' }).click();
    await expect.poll(() => page.getByRole('row', { name: /\*\*\*\*3333/ }).count()).toBe(0);
    expect(await page.getByRole('rowheader', { name: '****2222' }).count()).toBe(1);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('changes a built-in provider’s base URL with the Connection form and leaves the rest of it to follow the config', async () => {
    await page.goto(tg.url + '/#/providers/groq');
    await page.getByRole('heading', { level: 1, name: 'Provider groq' }).waitFor();
    const form = page.getByRole('form', { name: 'Connection' });
    await form.getByLabel('Base URL').fill(`${upstreamB.url}/openai/v1`);
    await form.getByRole('button', { name: 'Save connection' }).click();
    await form.getByText('Saved: the next request uses it.').waitFor();
    // Only the base URL is the API's: the timeouts, limits and headers shown beside it were not copied into the API
    // layer, so a later change of the settings (or the file) still reaches this provider.
    const layer = (await (await fetch(`${tg.url}/api/config?layer=api`)).json()) as { providers: Record<string, unknown> };
    expect(layer.providers.groq).toEqual({ base_url: `${upstreamB.url}/openai/v1` });
    const patched = await fetch(`${tg.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ settings: { upstream_timeouts: { first_byte_ms: 12_345 } } }) });
    expect(patched.status).toBe(200);
    const groq = (await (await fetch(`${tg.url}/api/providers/groq`)).json()) as { base_url: string; timeouts: { first_byte_ms: number } };
    expect(groq).toMatchObject({ base_url: `${upstreamB.url}/openai/v1`, timeouts: { first_byte_ms: 12_345 } });
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows the API’s 409 when deleting a built-in provider', async () => {
    await page.goto(tg.url + '/#/providers/openai');
    await page.getByRole('heading', { level: 1, name: 'Provider openai' }).waitFor();
    await page.getByRole('button', { name: 'Delete provider' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete provider' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/\(409\).*openai/);
    expectOnlyRefusals([409]);

    await page.goto(tg.url + '/#/providers');
    await page.getByRole('row', { name: /up-b/ }).waitFor();
    await screenshot(page, 'providers');
  }, TIMEOUT);

  it('creates a route with two weighted targets and a fallback; a weight changed in the UI steers the next requests', async () => {
    await page.goto(tg.url + '/#/routes');
    await page.getByRole('heading', { level: 1, name: 'Routes' }).waitFor();
    await page.getByText('No routes yet').waitFor();
    await page.getByRole('button', { name: 'Create a route' }).click();
    const form = page.getByRole('form', { name: 'Create a route' });
    await form.getByLabel('Route name').fill('mix');
    await form.getByLabel('Target 1 model').fill('up-a/m');
    await form.getByLabel('Target 1 weight').fill('1');
    await form.getByLabel('Target 2 model').fill('up-b/m');
    await form.getByLabel('Target 2 weight').fill('1');
    await form.getByLabel('Fallback chain').fill('up-a/fb');
    await form.getByRole('button', { name: 'Create route' }).click();
    const card = page.locator('article[data-route="mix"]');
    await card.waitFor();
    // The live health lists both targets and the fallback group.
    await card.locator('tr[data-target="up-a/m"]').waitFor();
    await card.locator('tr[data-target="up-b/m"]').waitFor();
    await card.locator('tr[data-role="fallback"][data-target="up-a/fb"]').waitFor();
    expect(await (await fetch(`${tg.url}/api/routes/mix`)).json()).toMatchObject({
      targets: [{ model: 'up-a/m', weight: 1 }, { model: 'up-b/m', weight: 1 }],
      fallbacks: ['up-a/fb'],
      source: 'api',
    });

    // Traffic with the official client: 1:1 reaches both upstreams.
    upstreamA.reset();
    upstreamB.reset();
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'no-virtual-key-needed-on-loopback', maxRetries: 0 });
    await send(client, 20);
    expect(chatCalls(upstreamA, 'm')).toBeGreaterThan(0);
    expect(chatCalls(upstreamB, 'm')).toBeGreaterThan(0);
    expect(chatCalls(upstreamA) + chatCalls(upstreamB)).toBe(20);
    // Health polling shows the calls.
    await expect.poll(async () => Number(await card.locator('tr[data-target="up-a/m"] td[data-col="calls"]').textContent()), { timeout: 10_000 }).toBeGreaterThan(0);
    await screenshot(page, 'routes');

    // Give up-b a dominant weight in the UI; the next requests follow it, no restart.
    await card.getByRole('button', { name: 'Edit route mix' }).click();
    const edit = page.getByRole('form', { name: 'Edit route mix' });
    await edit.getByLabel('Target 2 weight').fill('50');
    await screenshot(page, 'routes-edit');
    await edit.getByRole('button', { name: 'Save route' }).click();
    await page.getByText('Route mix saved').waitFor();
    await expect.poll(async () => card.locator('tr[data-target="up-b/m"] td[data-col="configured"]').textContent(), { timeout: 10_000 }).toBe('50');
    upstreamA.reset();
    upstreamB.reset();
    await send(client, 20);
    expect(chatCalls(upstreamB, 'm')).toBeGreaterThanOrEqual(17);
    expect(chatCalls(upstreamA, 'm')).toBeLessThanOrEqual(3);

    // And back the other way: up-a dominant.
    await card.getByRole('button', { name: 'Edit route mix' }).click();
    await page.getByRole('form', { name: 'Edit route mix' }).getByLabel('Target 1 weight').fill('50');
    await page.getByRole('form', { name: 'Edit route mix' }).getByLabel('Target 2 weight').fill('1');
    await page.getByRole('form', { name: 'Edit route mix' }).getByRole('button', { name: 'Save route' }).click();
    await expect.poll(async () => card.locator('tr[data-target="up-a/m"] td[data-col="configured"]').textContent(), { timeout: 10_000 }).toBe('50');
    upstreamA.reset();
    upstreamB.reset();
    await send(client, 20);
    expect(chatCalls(upstreamA, 'm')).toBeGreaterThanOrEqual(17);
    expect(chatCalls(upstreamB, 'm')).toBeLessThanOrEqual(3);

    // When both targets fail, the fallback set in the UI answers.
    upstreamA.reset();
    upstreamB.reset();
    upstreamA.enqueue({ kind: 'error', status: 503 });
    upstreamB.enqueue({ kind: 'error', status: 503 });
    const { response } = await client.chat.completions.create({ model: 'mix', messages: [{ role: 'user', content: 'fall back' }] }).withResponse();
    expect(response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(upstreamA.calls.at(-1)?.body.model).toBe('fb');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows the API’s validation error next to a target, and deletes a route only after confirming', async () => {
    await page.goto(tg.url + '/#/routes');
    await page.getByRole('button', { name: 'Create a route' }).click();
    const form = page.getByRole('form', { name: 'Create a route' });
    await form.getByLabel('Route name').fill('broken');
    await form.getByLabel('Target 1 model').fill('no-slash');
    await form.getByLabel('Target 2 model').fill('up-a/m');
    await form.getByRole('button', { name: 'Create route' }).click();
    await form.locator('[id="new-route-targets.0.model-error"]').waitFor();
    expect(await form.getByLabel('Target 1 model').getAttribute('aria-invalid')).toBe('true');
    expectOnlyRefusals([400]);
    // A weight the browser cannot read ("2e") is refused under it; read as empty it became the default weight, 1.
    await form.getByLabel('Target 1 model').fill('up-a/m');
    await form.getByLabel('Target 2 weight').fill('');
    await form.getByLabel('Target 2 weight').pressSequentially('2e');
    await form.getByRole('button', { name: 'Create route' }).click();
    await form.locator('[id="new-route-targets.1.weight-error"]').waitFor();
    expect((await fetch(`${tg.url}/api/routes/broken`)).status).toBe(404);
    await form.getByRole('button', { name: 'Cancel' }).click();

    const card = page.locator('article[data-route="mix"]');
    await card.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('article[data-route="mix"]').count()).toBe(1);
    await card.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete route' }).click();
    await page.getByText('No routes yet').waitFor();
    expect((await fetch(`${tg.url}/api/routes/mix`)).status).toBe(404);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('fits a phone-sized screen: the providers and routes pages do not scroll sideways', async () => {
    await fetch(`${tg.url}/api/routes/mix`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ targets: [{ model: 'up-a/m', weight: 1 }, { model: 'up-b/m', weight: 1 }], fallbacks: ['up-a/fb'] }),
    });
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const small = await phone.newPage();
    const smallErrors = collectPageErrors(small);
    const pages = [
      ['/providers', 'Providers', 'tr[data-provider="up-a"]'],
      ['/providers/up-a', 'Provider up-a', 'tr[data-key-id]'],
      ['/routes', 'Routes', 'article[data-route="mix"] tr[data-target="up-b/m"]'],
    ] as const;
    for (const [hash, heading, loaded] of pages) {
      await small.goto(`${tg.url}/#${hash}`);
      await small.getByRole('heading', { level: 1, name: heading }).waitFor();
      // Moving between hashes loads no document, so wait for the page's own data.
      await small.locator(loaded).first().waitFor();
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, `#${hash} is wider than the screen`).toBeLessThanOrEqual(0);
      await screenshot(small, `phone-${hash.slice(1).replace('/', '-')}`);
    }
    expect(smallErrors).toEqual([]);
    await phone.close();
  }, TIMEOUT);
});

describe('closing the route form', () => {
  it('gives the focus back to "Create a route" (disabled while its form is open) after Escape', async () => {
    await page.goto(`${tg.url}/#/routes`);
    await page.reload();
    const create = page.getByRole('button', { name: 'Create a route' });
    await create.focus();
    await page.keyboard.press('Enter');
    const form = page.getByRole('form', { name: 'Create a route' });
    await form.getByLabel('Route name').fill('never-saved');
    await page.keyboard.press('Escape');
    await form.waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate('document.activeElement?.textContent')).toBe('Create a route');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('gives the focus back when Escape comes before the opened form was first painted (a fast keyboard, a busy machine)', async () => {
    await page.goto(`${tg.url}/#/routes`);
    await page.reload();
    await page.getByRole('button', { name: 'Create a route' }).waitFor();
    // One task: open, let the page render (a microtask), style it as a frame would, press Escape in the form. No
    // frame is painted in between, so effects that wait for a paint have not run when the form goes away.
    const focused = await page.evaluate(`(async () => {
      const create = [...document.querySelectorAll('button')].find((button) => button.textContent === 'Create a route');
      create.focus();
      create.click();
      await Promise.resolve();
      const form = () => [...document.querySelectorAll('form')].find((f) => document.getElementById(f.getAttribute('aria-labelledby'))?.textContent === 'Create a route');
      const name = form()?.querySelector('input');
      if (!name) return 'the form did not open';
      void document.body.offsetHeight;
      name.focus();
      name.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return form() ? 'the form is still open' : document.activeElement?.textContent;
    })()`);
    expect(focused).toBe('Create a route');
    expect(errors).toEqual([]);
  }, TIMEOUT);
});
