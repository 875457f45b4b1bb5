import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectPageErrors, openBrowserPage, screenshot } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * The guardrails page, in Chromium against a real gateway and a scripted upstream that echoes the user's message:
 * a payment card rule added through the form blocks the very next request (no restart), an unsafe regex is refused
 * with the API's message next to its field, the card rule edited to redact shows in the next answer, a key skips it
 * from the keys page (and gets a rule of its own from the same form), a blocked request's log entry says which rule
 * acted, and deleting the rule lets the number through again.
 */

const TIMEOUT = 60_000;
const CARD = '4111 1111 1111 1111';
const ASK = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: `my card ${CARD}` }] };

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});

/** Chromium logs every 4xx/5xx answer as a console error; a test that asks for one takes exactly those off. */
function expectOnlyRefusals(statuses: number[]): void {
  const expected = statuses.map((status) => expect.stringMatching(new RegExp(`^console: Failed to load resource: the server responded with a status of ${status} `)));
  expect(errors).toEqual(expected);
  errors.length = 0;
}

const apiLayer = async (): Promise<any> => (await api('GET', '/api/config?layer=api')).body;

/** What a request with the card number gets: the answer's text, or the refusal's status and code. */
async function askWithCard(client = tg.client): Promise<{ text?: string | null; status?: number; code?: string }> {
  try {
    const answer = await client.chat.completions.create(ASK);
    return { text: answer.choices[0]?.message.content };
  } catch (err) {
    const failure = err as { status?: number; code?: string };
    return { status: failure.status, code: failure.code };
  }
}

describe('the guardrails page', () => {
  it('adds a payment card block rule through the form, and the next request is refused without a restart', async () => {
    expect(await askWithCard()).toEqual({ text: `echo: my card ${CARD}` });

    await page.goto(tg.url + '/#/guardrails');
    await page.getByRole('heading', { level: 1, name: 'Guardrails' }).waitFor();
    expect(await page.getByRole('link', { name: 'Guardrails', exact: true }).getAttribute('aria-current')).toBe('page');
    await page.getByTestId('guardrails-source').getByText('none configured').waitFor();
    await page.getByText('No rules:').waitFor();

    await page.getByRole('button', { name: 'Add a rule' }).click();
    const form = page.getByRole('form', { name: 'Add a rule' });
    await form.getByLabel('Rule name').fill('cards');
    await form.getByLabel('Kind').selectOption('payment_card');
    await form.getByLabel('Only known card brands').waitFor();
    expect(await form.getByLabel('Action').inputValue()).toBe('block');
    await form.getByRole('button', { name: 'Add rule' }).click();

    const row = page.locator('tr[data-rule="cards"]');
    await row.waitFor();
    expect(await row.locator('td[data-col="options"]').textContent()).toBe('any number passing the Luhn check');
    expect(await row.locator('td[data-col="action"]').textContent()).toBe('block');
    await page.getByTestId('guardrails-source').getByText('from the API').waitFor();
    expect((await apiLayer()).guardrails).toEqual({ rules: [{ name: 'cards', kind: 'payment_card', action: 'block' }], output_block: 'content_filter' });

    expect(await askWithCard()).toEqual({ status: 400, code: 'guardrail_blocked' });
    await screenshot(page, 'guardrails');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('refuses a regex rule whose pattern could backtrack catastrophically, with the API’s message next to the patterns', async () => {
    await page.getByRole('button', { name: 'Add a rule' }).click();
    const form = page.getByRole('form', { name: 'Add a rule' });
    await form.getByLabel('Rule name').fill('nested');
    await form.getByLabel('Kind').selectOption('regex');
    await form.getByLabel('Patterns').fill('(a+)+$');
    await form.getByLabel('Case-insensitive').check();
    await form.getByRole('button', { name: 'Add rule' }).click();
    const message = form.locator('#new-guardrail-patterns-error');
    await message.waitFor();
    expect(await message.textContent()).toContain('guardrails.rules');
    expect(await message.textContent()).toContain('(a+)+$');
    expect(await form.getByLabel('Patterns').getAttribute('aria-invalid')).toBe('true');
    expectOnlyRefusals([400]);
    await screenshot(page, 'guardrails-regex-refused');
    await form.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('form', { name: 'Add a rule' }).count()).toBe(0);
    expect((await apiLayer()).guardrails.rules.map((rule: { name: string }) => rule.name)).toEqual(['cards']);
  }, TIMEOUT);

  it('edits the card rule to redact, and the next answer carries the placeholder', async () => {
    await page.getByRole('button', { name: 'Edit rule cards' }).click();
    const form = page.getByRole('form', { name: 'Edit rule cards' });
    expect(await form.getByLabel('Kind').inputValue()).toBe('payment_card');
    await form.getByLabel('Action').selectOption('redact');
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText('Rule cards saved').waitFor();
    await expect.poll(() => page.locator('tr[data-rule="cards"] td[data-col="action"]').textContent()).toBe('redact');
    expect((await apiLayer()).guardrails.rules).toEqual([{ name: 'cards', kind: 'payment_card', action: 'redact' }]);

    expect(await askWithCard()).toEqual({ text: 'echo: my card [REDACTED:payment_card]' });
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('lets a key skip the card rule from the keys page, and gives it a rule of its own with the same form', async () => {
    const { id, key } = await createKey({ name: 'card-ok' });
    await page.goto(tg.url + '/#/keys');
    await page.getByRole('button', { name: 'Guardrails of card-ok' }).click();
    const editor = page.getByRole('region', { name: 'Guardrails of the key “card-ok”' });
    const skips = editor.getByRole('form', { name: 'Skipped rules of card-ok' });
    await skips.getByRole('checkbox', { name: 'cards' }).check();
    await skips.getByRole('button', { name: 'Save skips' }).click();
    await editor.getByText('Saved:').waitFor();
    expect((await api('GET', `/api/keys/${id}`)).body.guardrails).toEqual({ skip: ['cards'] });
    expect(await askWithCard(clientFor(key))).toEqual({ text: `echo: my card ${CARD}` });
    // Everyone else still gets it redacted.
    expect(await askWithCard()).toEqual({ text: 'echo: my card [REDACTED:payment_card]' });

    await editor.getByRole('button', { name: 'Add a rule to card-ok' }).click();
    const form = editor.getByRole('form', { name: 'Add a rule' });
    await form.getByLabel('Rule name').fill('no-zephyr');
    await form.getByLabel('Kind').selectOption('keyword');
    await form.getByLabel('Keywords').fill('project zephyr');
    await form.getByRole('button', { name: 'Add rule' }).click();
    await editor.locator('tr[data-rule="no-zephyr"]').waitFor();
    expect((await api('GET', `/api/keys/${id}`)).body.guardrails).toEqual({ skip: ['cards'], rules: [{ name: 'no-zephyr', kind: 'keyword', keywords: ['project zephyr'], action: 'block' }] });
    await expect(clientFor(key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'tell me about Project Zephyr' }] })).rejects.toMatchObject({ status: 400, code: 'guardrail_blocked' });
    await page.getByRole('row', { name: /card-ok/ }).getByText('guardrails', { exact: true }).waitFor();
    await screenshot(page, 'keys-guardrails');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows which rule acted on a blocked request in its log entry', async () => {
    let blockedId: string | undefined;
    await expect
      .poll(async () => {
        const logs = (await api('GET', '/api/logs?limit=50')).body.data as { id: string; error_code?: string; guardrails?: string[] }[];
        blockedId = logs.find((entry) => entry.guardrails?.includes('input:cards:blocked'))?.id;
        return blockedId;
      })
      .toBeDefined();
    await page.goto(`${tg.url}/#/logs/${encodeURIComponent(blockedId ?? '')}`);
    const line = page.getByTestId('log-guardrails');
    await line.waitFor();
    expect(await line.textContent()).toBe('input: cards blocked');
    await page.getByText('guardrail_blocked').waitFor();
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('deletes the rule only after confirming, and the number goes through again', async () => {
    await page.goto(tg.url + '/#/guardrails');
    const row = page.locator('tr[data-rule="cards"]');
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete rule' }).click();
    await page.getByText('No rules:').waitFor();
    expect((await apiLayer()).guardrails.rules).toEqual([]);
    expect(await askWithCard()).toEqual({ text: `echo: my card ${CARD}` });
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows options of every sort in words, a custom format’s rows in the form, the routes that change the rules, and fits a phone', async () => {
    const patched = await api('PATCH', '/api/config', {
      guardrails: {
        rules: [
          { name: 'ids', kind: 'national_id', action: 'redact', formats: ['us_ssn', 'nl_bsn'], custom_formats: [{ name: 'staff', pattern: 'EMP-\\d{6}' }] },
          { name: 'judge', kind: 'moderation', action: 'block', model: 'openai/gpt-4o-mini', on_error: 'block', timeout_ms: 2000, disabled: true },
        ],
      },
      routes: { support: { targets: [{ model: 'openai/gpt-4o-mini' }], guardrails: { skip: ['judge'], rules: [{ name: 'refunds', kind: 'keyword', keywords: ['refund'], action: 'flag' }] } } },
    });
    expect(patched.status).toBe(200);
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const small = await phone.newPage();
      const smallErrors = collectPageErrors(small);
      await small.goto(tg.url + '/#/guardrails');
      expect(await small.locator('tr[data-rule="ids"] td[data-col="options"]').textContent()).toBe('formats us_ssn, nl_bsn, staff · replaced by [REDACTED:national_id]');
      expect(await small.locator('tr[data-rule="judge"] td[data-col="options"]').textContent()).toBe('classified by openai/gpt-4o-mini · timeout 2000 ms · blocks when it fails (fail closed)');
      expect(await small.locator('tr[data-rule="judge"] td[data-col="status"]').textContent()).toBe('disabled');
      const route = small.locator('tr[data-route="support"]');
      expect(await route.textContent()).toContain('refunds (Keywords, flag)');
      expect(await route.textContent()).toContain('judge');
      await small.getByRole('button', { name: 'Edit rule ids' }).click();
      const form = small.getByRole('form', { name: 'Edit rule ids' });
      expect(await form.getByLabel('Pattern 1').inputValue()).toBe('EMP-\\d{6}');
      expect(await form.getByRole('checkbox', { name: 'nl_bsn' }).isChecked()).toBe(true);
      expect(await form.getByRole('checkbox', { name: 'uk_nino' }).isChecked()).toBe(false);
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, '#/guardrails is wider than the screen').toBeLessThanOrEqual(0);
      await screenshot(small, 'phone-guardrails');
      // Saved unchanged, the rule is what it was.
      await form.getByRole('button', { name: 'Save rule' }).click();
      await small.getByText('Rule ids saved').waitFor();
      expect((await apiLayer()).guardrails.rules[0]).toEqual({ name: 'ids', kind: 'national_id', action: 'redact', formats: ['us_ssn', 'nl_bsn'], custom_formats: [{ name: 'staff', pattern: 'EMP-\\d{6}' }] });
      expect(smallErrors).toEqual([]);
    } finally {
      await phone.close();
    }
  }, TIMEOUT);
});
