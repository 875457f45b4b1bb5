import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage, screenshot } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { startEntraEndpoint, type ScriptedEntra } from '../upstream/entra-token-endpoint.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * Azure providers authenticated with Microsoft Entra ID in the dashboard: the Providers page names the method (never
 * "no key", never the secret), and the forms create and edit one. A scripted Entra token endpoint issues the tokens a
 * scripted Azure resource takes, so a request through the gateway with the official OpenAI client proves what the
 * form stored: the secret typed, kept when the field is left empty, never its masked value.
 */

const TIMEOUT = 60_000;
const SECRET = 'entra-client-secret-value-xyz';

let entra: ScriptedEntra;
let azure: AzureUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  entra = await startEntraEndpoint();
  azure = await startAzureUpstream({ acceptsBearer: (token) => entra.accepts(token) });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      'az-file': { type: 'azure', base_url: azure.url, auth: { type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-1', client_secret: SECRET, authority_host: entra.url } },
      'az-ref': { type: 'azure', base_url: azure.url, auth: { type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'env:AZ_SECRET', authority_host: entra.url } },
      'az-keys': { type: 'azure', base_url: azure.url, api_key: 'azure-api-key-1234' },
    },
  }, { AZ_SECRET: SECRET });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await azure?.close();
  await entra?.close();
});

const client = () => new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const ask = (model: string) => client().chat.completions.create({ model, messages: [{ role: 'user', content: 'hello entra' }] });

async function providerAuth(name: string): Promise<Record<string, string> | undefined> {
  return ((await (await fetch(`${tg.url}/api/providers/${name}`)).json()) as { auth?: Record<string, string> }).auth;
}

describe('Entra ID providers in the dashboard', () => {
  it('lists a provider authenticated with Entra ID by its method, not as having no key, and never shows its secret', async () => {
    await page.goto(`${tg.url}/#/providers`);
    const row = page.locator('tr[data-provider="az-file"]');
    await row.waitFor();
    expect(await row.locator('td').nth(2).textContent()).toBe('Entra ID (client secret)');
    expect(await page.content()).not.toContain(SECRET);

    await row.getByRole('link', { name: 'az-file' }).click();
    await page.getByRole('heading', { level: 1, name: 'Provider az-file' }).waitFor();
    const keys = page.getByRole('region', { name: 'Keys' });
    await keys.getByText('No key: the provider authenticates with Entra ID (client secret), which replaces its keys.').waitFor();
    expect(await keys.getByRole('form', { name: 'Add a key' }).count()).toBe(0);
    const form = page.getByRole('form', { name: 'Connection' });
    expect(await form.getByLabel('Authentication').inputValue()).toBe('client_secret');
    expect(await form.getByLabel('Tenant id').inputValue()).toBe('tenant-1');
    expect(await form.getByLabel('Client secret').inputValue()).toBe('');
    await form.getByText('stored: ****-xyz; empty keeps it').waitFor();
    expect(await page.content()).not.toContain(SECRET);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('creates an Entra provider with the Add form (the credential chosen shows its fields) that serves requests', async () => {
    await page.goto(`${tg.url}/#/providers`);
    const form = page.getByRole('form', { name: 'Add a provider' });
    expect(await form.getByLabel('Authentication').count()).toBe(0);
    await form.getByLabel('Name').fill('az-ui');
    await form.getByLabel('Type').fill('azure');
    await form.getByLabel('Base URL').fill(azure.url);
    await form.getByLabel('Authentication').selectOption('managed_identity');
    await form.getByLabel('Client id').waitFor();
    expect(await form.getByLabel('Tenant id').count()).toBe(0);
    expect(await form.getByLabel('Client secret').count()).toBe(0);
    await form.getByLabel('Authentication').selectOption('client_secret');
    expect(await form.getByLabel('API key').count()).toBe(0);
    // A wrong client id first: the edit below fixes it with the secret left empty.
    await form.getByLabel('Tenant id').fill('tenant-1');
    await form.getByLabel('Client id').fill('client-0');
    await form.getByLabel('Client secret').fill(SECRET);
    await form.getByLabel('Authority host').fill(entra.url);
    await form.getByRole('button', { name: 'Add provider' }).click();
    await page.getByRole('heading', { level: 1, name: 'Provider az-ui' }).waitFor();

    expect(await providerAuth('az-ui')).toEqual({ type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-0', client_secret: '****-xyz', authority_host: entra.url });
    await expect(ask('az-ui/gpt-4o-prod')).rejects.toMatchObject({ status: 502 });
    await screenshot(page, 'provider-entra');

    // The secret field left empty keeps the stored secret: the request is served with the corrected client id.
    const edit = page.getByRole('form', { name: 'Connection' });
    await edit.getByLabel('Client id').fill('client-1');
    await edit.getByRole('button', { name: 'Save connection' }).click();
    await edit.getByText('Saved: the next request uses it.').waitFor();
    await expect.poll(async () => (await providerAuth('az-ui'))?.client_id).toBe('client-1');
    expect((await providerAuth('az-ui'))?.client_secret).toBe('****-xyz');
    expect((await ask('az-ui/gpt-4o-prod')).choices[0]?.message.content).toBeTruthy();
    expect(await page.content()).not.toContain(SECRET);

    // Another credential: the secret is removed with the fields that credential does not read.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Provider az-ui' }).waitFor();
    const again = page.getByRole('form', { name: 'Connection' });
    await again.getByLabel('Authentication').selectOption('managed_identity');
    await again.getByRole('button', { name: 'Save connection' }).click();
    await again.getByText('Saved: the next request uses it.').waitFor();
    await expect.poll(() => providerAuth('az-ui')).toEqual({ type: 'entra', credential: 'managed_identity', client_id: 'client-1' });
    expect(errors.filter((error) => !error.includes('status of 502'))).toEqual([]);
  }, TIMEOUT);

  it('saves a file provider’s base URL without copying its Entra identity into the API layer', async () => {
    await page.goto(`${tg.url}/#/providers/az-file`);
    const form = page.getByRole('form', { name: 'Connection' });
    await form.getByLabel('Base URL').fill(`${azure.url}/`);
    await form.getByRole('button', { name: 'Save connection' }).click();
    await form.getByText('Saved: the next request uses it.').waitFor();
    const layer = (await (await fetch(`${tg.url}/api/config?layer=api`)).json()) as { providers: Record<string, unknown> };
    expect(layer.providers['az-file']).toEqual({ base_url: `${azure.url}/` });
    expect((await ask('az-file/gpt-4o-prod')).choices[0]?.message.content).toBeTruthy();
  }, TIMEOUT);

  it('says under the field why an identity cannot be changed here, instead of saving nothing', async () => {
    // The file's secret is a reference the API cannot take: given back, the change would be left to the file unsaid.
    await page.goto(`${tg.url}/#/providers/az-ref`);
    const form = page.getByRole('form', { name: 'Connection' });
    await form.getByText('stored: env:AZ_SECRET; empty keeps it').waitFor();
    await form.getByLabel('Client id').fill('client-9');
    await form.getByRole('button', { name: 'Save connection' }).click();
    await form.getByText("The client secret is the config file's env:AZ_SECRET, which the API cannot take: enter the secret itself, or change this identity in the file.").waitFor();
    expect(await form.getByLabel('Client secret').getAttribute('aria-invalid')).toBe('true');
    expect((await providerAuth('az-ref'))?.client_id).toBe('client-1');

    // Nor can the API take the file's identity away: API keys chosen, the page says where it is, not Saved.
    await form.getByLabel('Authentication').selectOption('');
    await form.getByRole('button', { name: 'Save connection' }).click();
    await form.getByText('The Entra identity is the config file’s: remove its auth there to use API keys.').waitFor();
    expect(await form.getByText('Saved: the next request uses it.').count()).toBe(0);
    expect((await providerAuth('az-ref'))?.credential).toBe('client_secret');

    // Keys and an identity do not go together: the API's reason is shown under the choice.
    await page.goto(`${tg.url}/#/providers/az-keys`);
    const keyed = page.getByRole('form', { name: 'Connection' });
    await keyed.getByLabel('Authentication').selectOption('managed_identity');
    await keyed.getByRole('button', { name: 'Save connection' }).click();
    await keyed.getByText(/an Entra identity replaces API keys/).waitFor();
    expect(await keyed.getByLabel('Authentication').getAttribute('aria-invalid')).toBe('true');
    expect(await providerAuth('az-keys')).toBeUndefined();
    expect(errors.filter((error) => !/status of (400|502)/.test(error))).toEqual([]);
  }, TIMEOUT);
});
