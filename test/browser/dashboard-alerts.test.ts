import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { collectPageErrors, openBrowserPage, screenshot } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * The alerts page, in Chromium against a real gateway and a webhook receiver: a channel and a budget rule created
 * through its forms, an invalid rule refused with the API's message next to its field, a real request that
 * crosses a key's budget showing up as an open alert without a reload (and reaching the receiver), a test
 * delivery, the delivery log and its filters, deleting a rule, and going back to the file's section.
 */

const TIMEOUT = 60_000;
const HOOK_SECRET = 'whsec-set-in-the-dashboard-4321';
/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2, half of a $4 budget. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
const { createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  receiver = await startReceiver();
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } } });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

/** Chromium logs every 4xx/5xx answer as a console error; a test that asks for one takes exactly those off. */
function expectOnlyRefusals(statuses: number[]): void {
  const expected = statuses.map((status) => expect.stringMatching(new RegExp(`^console: Failed to load resource: the server responded with a status of ${status} `)));
  expect(errors).toEqual(expected);
  errors.length = 0;
}

const alertsJson = async (): Promise<any> => (await fetch(`${tg.url}/api/alerts`)).json();

describe('the alerts page', () => {
  it('adds a webhook channel through the form; its secret is shown masked from then on', async () => {
    await page.goto(tg.url + '/#/alerts');
    await page.getByRole('heading', { level: 1, name: 'Alerts' }).waitFor();
    expect(await page.getByRole('link', { name: 'Alerts', exact: true }).getAttribute('aria-current')).toBe('page');
    await page.getByTestId('alerts-source').getByText('none configured').waitFor();
    await page.getByText('Nothing is firing.').waitFor();
    await page.getByText('No channels').waitFor();

    await page.getByRole('button', { name: 'Add a channel' }).click();
    const form = page.getByRole('form', { name: 'Add a channel' });
    await form.getByLabel('Channel name').fill('ops');
    expect(await form.getByLabel('Type').inputValue()).toBe('webhook');
    await form.getByLabel('URL', { exact: true }).fill(receiver.url);
    await form.getByLabel('Signing secret').fill(HOOK_SECRET);
    await form.getByLabel('First retry after (ms)').fill('50');
    await form.getByRole('button', { name: 'Add channel' }).click();

    const row = page.locator('tr[data-channel="ops"]');
    await row.waitFor();
    await row.getByText(receiver.url).waitFor();
    await row.getByText('****4321').waitFor();
    await page.getByTestId('alerts-source').getByText('from the API').waitFor();
    expect(await page.content()).not.toContain(HOOK_SECRET);
    expect(await alertsJson()).toMatchObject({
      source: 'api',
      channels: [{ name: 'ops', type: 'webhook', url: receiver.url, secret: '****4321', retry: { initial_delay_ms: 50 } }],
    });
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('adds a budget rule through the form, and shows its condition in words', async () => {
    await page.getByRole('button', { name: 'Add a rule' }).click();
    const form = page.getByRole('form', { name: 'Add a rule' });
    await form.getByLabel('Rule name').fill('budget-half');
    expect(await form.getByLabel('Kind').inputValue()).toBe('budget');
    await form.getByRole('checkbox', { name: '50' }).check();
    await form.getByLabel('Severity').selectOption('critical');
    await form.getByLabel('Cooldown (ms)').fill('0');
    await form.getByRole('checkbox', { name: 'ops' }).check();
    await form.getByRole('button', { name: 'Add rule' }).click();

    const row = page.locator('tr[data-rule="budget-half"]');
    await row.waitFor();
    expect(await row.locator('td[data-col="condition"]').textContent()).toBe('a key or team spends 50% of its budget');
    await row.getByText('critical').waitFor();
    expect((await alertsJson()).rules).toEqual([{ name: 'budget-half', kind: 'budget', thresholds: [50], severity: 'critical', cooldown_ms: 0, channels: ['ops'] }]);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('refuses an invalid rule with the API’s message next to the field it names', async () => {
    await page.getByRole('button', { name: 'Add a rule' }).click();
    const form = page.getByRole('form', { name: 'Add a rule' });
    await form.getByLabel('Rule name').fill('too-much');
    await form.getByLabel('Kind').selectOption('error_rate');
    await form.getByLabel('Error rate over (%)').fill('200');
    await form.getByRole('button', { name: 'Add rule' }).click();
    const message = form.locator('#new-rule-threshold_pct-error');
    await message.waitFor();
    expect(await message.textContent()).toMatch(/threshold_pct.*100/);
    expect(await form.getByLabel('Error rate over (%)').getAttribute('aria-invalid')).toBe('true');
    expectOnlyRefusals([400]);
    await screenshot(page, 'alerts-rule-invalid');
    await form.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('form', { name: 'Add a rule' }).count()).toBe(0);
    expect((await alertsJson()).rules.map((rule: { name: string }) => rule.name)).toEqual(['budget-half']);
  }, TIMEOUT);

  it('shows the open alert of a key that crossed half its budget without a reload, and the receiver gets it', async () => {
    const { id, key } = await createKey({ name: 'watched', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });

    const row = page.locator('tr[data-rule="budget-half"][data-alert]');
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain(`key ${id}`);
    expect(await row.textContent()).toContain('50% of its budget');
    await row.getByText('critical').waitFor();
    await row.getByText('yes', { exact: true }).waitFor();
    const firing = await until('the budget notification', () => receiver.deliveries.find((d) => d.json.rule === 'budget-half'), 10_000);
    expect(firing.json).toMatchObject({ status: 'firing', subject: { key: id } });
    await screenshot(page, 'alerts');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('lists deliveries newest first, filtered by channel and rule', async () => {
    const log = page.locator('tr[data-delivery-rule="budget-half"]');
    await log.first().waitFor({ timeout: 15_000 });
    await log.first().getByText('delivered').waitFor();
    expect(await log.first().locator('td').nth(6).textContent()).toBe('200');

    await page.getByRole('search', { name: 'Filter the delivery log' }).getByLabel('Channel').selectOption('ops');
    await page.getByRole('search', { name: 'Filter the delivery log' }).getByLabel('Rule').selectOption('budget-half');
    await log.first().waitFor();
    expect(await page.locator('tr[data-delivery-rule]:not([data-delivery-rule="budget-half"])').count()).toBe(0);
    // Back to everything, for the test delivery below.
    await page.getByRole('search', { name: 'Filter the delivery log' }).getByLabel('Rule').selectOption('');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('sends a test delivery from the channel’s row and shows it delivered, then in the log', async () => {
    const before = receiver.deliveries.length;
    await page.getByRole('button', { name: 'Test channel ops' }).click();
    const outcome = page.getByTestId('channel-test-ops');
    // Whatever the answer, the row says it inline: delivered (HTTP status, duration), failed (the error), or the API's refusal.
    await outcome.locator('.badge').waitFor({ timeout: 15_000 });
    const said = await outcome.textContent();
    // Taken off here so that a failure stays this test's own.
    const seen = errors.splice(0);
    expect(said).toMatch(/^delivered · HTTP 200 · \d/);
    expect(seen).toEqual([]);
    expect(receiver.deliveries[before]?.json).toMatchObject({ rule: 'test' });
    await page.locator('tr[data-delivery-rule="test"]').first().waitFor({ timeout: 15_000 });
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('edits a channel and a rule in place: a secret left empty keeps the stored one, fields not shown are kept', async () => {
    await page.getByRole('button', { name: 'Edit channel ops' }).click();
    const channelForm = page.getByRole('form', { name: 'Edit channel ops' });
    expect(await channelForm.getByLabel('URL', { exact: true }).inputValue()).toBe(receiver.url);
    expect(await channelForm.getByLabel('Signing secret').inputValue()).toBe('');
    await channelForm.getByText('stored: ****4321; leave empty to keep it').waitFor();
    await channelForm.getByLabel('Timeout (ms)').fill('5000');
    await channelForm.getByRole('button', { name: 'Save channel' }).click();
    await page.getByText('Channel ops saved').waitFor();
    expect((await alertsJson()).channels).toEqual([{ name: 'ops', type: 'webhook', url: receiver.url, secret: '****4321', timeout_ms: 5000, retry: { initial_delay_ms: 50 } }]);

    await page.locator('tr[data-rule="budget-half"]:not([data-alert])').getByRole('button', { name: 'Edit rule budget-half' }).click();
    const ruleForm = page.getByRole('form', { name: 'Edit rule budget-half' });
    expect(await ruleForm.getByRole('checkbox', { name: '50' }).isChecked()).toBe(true);
    await ruleForm.getByRole('checkbox', { name: '80' }).check();
    await ruleForm.getByRole('button', { name: 'Save rule' }).click();
    await page.getByText('Rule budget-half saved').waitFor();
    expect((await alertsJson()).rules).toEqual([{ name: 'budget-half', kind: 'budget', thresholds: [50, 80], severity: 'critical', cooldown_ms: 0, channels: ['ops'] }]);
    // The table follows once the section is read again.
    await expect.poll(() => page.locator('tr[data-rule="budget-half"]:not([data-alert]) td[data-col="condition"]').textContent()).toBe('a key or team spends 50% / 80% of its budget');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('refuses a number the browser cannot read next to its field, instead of dropping the field to its default', async () => {
    await page.locator('tr[data-rule="budget-half"]:not([data-alert])').getByRole('button', { name: 'Edit rule budget-half' }).click();
    const ruleForm = page.getByRole('form', { name: 'Edit rule budget-half' });
    const cooldown = ruleForm.getByLabel('Cooldown (ms)');
    await cooldown.fill('');
    // "6e" (a typo of 6e5) is no number: the input reports the value '', which read as empty, dropped cooldown_ms.
    await cooldown.pressSequentially('6e');
    await ruleForm.getByRole('button', { name: 'Save rule' }).click();
    await expect.poll(() => cooldown.getAttribute('aria-invalid')).toBe('true');
    expect(await ruleForm.locator('#edit-rule-cooldown_ms-error').textContent()).toMatch(/number/);
    expect((await alertsJson()).rules).toEqual([{ name: 'budget-half', kind: 'budget', thresholds: [50, 80], severity: 'critical', cooldown_ms: 0, channels: ['ops'] }]);
    await ruleForm.getByRole('button', { name: 'Cancel' }).click();
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('deletes a rule only after confirming, then reverts to the file’s section', async () => {
    const row = page.locator('tr[data-rule="budget-half"]:not([data-alert])');
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete rule' }).click();
    await page.getByText('No rules: nothing alerts yet.').waitFor();
    expect((await fetch(`${tg.url}/api/alerts/rules/budget-half`)).status).toBe(404);

    await page.getByRole('button', { name: 'Revert to file' }).click();
    await page.getByRole('dialog', { name: 'Revert alerts to the config file?' }).getByRole('button', { name: 'Revert to file' }).click();
    await page.getByTestId('alerts-source').getByText('none configured').waitFor();
    await page.getByText('No channels').waitFor();
    expect((await alertsJson()).source).toBe('none');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows a config-file section that reads env: secrets as not editable here, still testable, and fits a phone', async () => {
    const fileGateway = await startGateway(
      {
        alerts: {
          channels: { ops: { type: 'webhook', url: receiver.url, secret: 'env:HOOK_SECRET' } },
          rules: [{ name: 'slow', kind: 'latency_p95', threshold_ms: 900 }],
        },
      },
      { HOOK_SECRET: HOOK_SECRET },
    );
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const small = await phone.newPage();
      const smallErrors = collectPageErrors(small);
      await small.goto(fileGateway.url + '/#/alerts');
      await small.getByTestId('alerts-source').getByText('from the config file').waitFor();
      await small.getByTestId('alerts-locked').waitFor();
      await small.locator('tr[data-channel="ops"]').getByText('env:HOOK_SECRET').waitFor();
      expect(await small.locator('tr[data-rule="slow"] td[data-col="condition"]').textContent()).toBe('latency p95 > 900 ms for 60 s (window 5 min, ≥ 10 answers)');
      // Nothing is offered that the API would refuse with 409; the test delivery is not a change, so it stays.
      for (const name of ['Add a channel', 'Add a rule', 'Revert to file', 'Edit channel ops', 'Edit rule slow']) expect(await small.getByRole('button', { name }).count(), name).toBe(0);
      expect(await small.getByRole('button', { name: 'Test channel ops' }).count()).toBe(1);
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, '#/alerts is wider than the screen').toBeLessThanOrEqual(0);
      await screenshot(small, 'phone-alerts');
      expect(await small.content()).not.toContain(HOOK_SECRET);
      expect(smallErrors).toEqual([]);
    } finally {
      await phone.close();
      await fileGateway.stop();
    }
  }, TIMEOUT);
});
