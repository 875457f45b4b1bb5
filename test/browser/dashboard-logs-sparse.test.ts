import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A page of GET /api/logs looks at a bounded number of records and of their logged bodies, so a filter that matches
 * rarely may answer an empty page with a cursor. The Request logs page said "No requests match these filters" for
 * it, though the request sought was a few records further back.
 */

const TIMEOUT = 120_000;
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
let rare: string;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up', chunkDelayMs: 0 });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } }, settings: { log_bodies: { enabled: true, max_bytes: 1_048_576 } } });
  const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
  const { response } = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  rare = response.headers.get('x-request-id') as string;
  // Newer records with 1 MiB of logged body each: more than one page reads of bodies.
  const big = 'x '.repeat(530_000);
  for (let i = 0; i < 40; i++) await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: big }] });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});

describe('the Request logs page with a filter that matches rarely', () => {
  it('shows the request further back instead of saying nothing matches', async () => {
    // The API's first page for this filter is empty, with a cursor.
    const first = (await (await fetch(`${tg.url}/api/logs?model=openai/gpt-4o&limit=50`)).json()) as { data: unknown[]; next_before: string | null };
    expect(first.data).toEqual([]);
    expect(first.next_before).not.toBeNull();

    await page.goto(`${tg.url}/#/logs?model=openai%2Fgpt-4o`);
    await page.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    await page.locator('tbody tr').first().getByRole('cell', { name: 'openai/gpt-4o', exact: true }).waitFor({ timeout: 20_000 });
    expect(await page.getByText('No requests match').count()).toBe(0);
    await page.locator('tbody tr').first().getByRole('link').click();
    await page.waitForURL(new RegExp(`#/logs/${rare}$`));

    // A filter nothing matches says so only once every record was looked at.
    await page.goto(`${tg.url}/#/logs?provider=anthropic`);
    await page.getByText('No requests match these filters').waitFor({ timeout: 20_000 });
    expect(errors).toEqual([]);
  }, TIMEOUT);
});
