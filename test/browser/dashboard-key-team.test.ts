import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A key moved between teams from the keys page (only the API could do it before): the next request of the key runs
 * under the new team's budget, and "no team" takes it out of any.
 */

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

describe("a key's team on the keys page", () => {
  it('is changed in the key editor: the key then runs under the new team, or none', async () => {
    const { api, createKey, clientFor } = gatewayApi(() => tg.url);
    const spent = (await api('POST', '/api/teams', { name: 'spent-team', budget: 0 })).body as { id: string };
    const funded = (await api('POST', '/api/teams', { name: 'funded-team', budget: 5 })).body as { id: string };
    const key = await createKey({ name: 'moving-key', team: spent.id });
    const ask = { model: 'openai/m', messages: [{ role: 'user' as const, content: 'hi' }] };
    // Under a team whose budget is $0 the key is refused.
    await expect(clientFor(key.key).chat.completions.create(ask)).rejects.toMatchObject({ status: 429 });

    await page.goto(`${tg.url}/#/keys`);
    await page.reload();
    const row = page.getByRole('row', { name: /moving-key/ });
    await row.getByText('spent-team').waitFor();
    await row.getByRole('button', { name: 'Limits of moving-key' }).click();
    const editor = page.getByRole('form', { name: 'Limits of moving-key' });
    await editor.waitFor();
    expect(await editor.getByLabel('Team').inputValue()).toBe(spent.id);

    await editor.getByLabel('Team').selectOption({ label: 'funded-team' });
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await row.getByText('funded-team').waitFor();
    expect((await api('GET', `/api/keys/${key.id}`)).body).toMatchObject({ team: funded.id });
    expect((await clientFor(key.key).chat.completions.create(ask)).choices[0]?.message.content).toBeTruthy();
    // The request was charged to the new team.
    await expect.poll(async () => (await api('GET', `/api/teams/${funded.id}`)).body.requests).toBe(1);

    // Saved again without touching the team, the key stays where it is.
    await editor.getByLabel('Requests per minute').fill('40');
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(async () => (await api('GET', `/api/keys/${key.id}`)).body.rate_limit).toBe(40);
    expect((await api('GET', `/api/keys/${key.id}`)).body).toMatchObject({ team: funded.id });

    await editor.getByLabel('Team').selectOption({ label: 'no team' });
    await editor.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(async () => (await api('GET', `/api/keys/${key.id}`)).body.team).toBe(null);
    expect(errors.filter((text) => !text.includes('400'))).toEqual([]);
  }, TIMEOUT);
});
