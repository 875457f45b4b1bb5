import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js';
import { openBrowserPage, screenshot } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { waitForMcpTools } from '../helpers/mcp-ready.js';

/**
 * From a browser audit of the config pages: the settings page saves the effective view (`PUT /api/config` with what
 * `GET /api/config` answered, edited). That view shows neither the MCP servers nor the alerts, so a save of any
 * other setting deleted the MCP servers added on the MCP page and the alert channels and rules added on the alerts
 * page (their tools gone, their process or connection closed). The sections the view does not show are kept.
 * Likewise the view left out the cache's `max_bytes`: set through the API, it was not on the settings page and a
 * save lifted the cache's byte bound; it is shown, and kept.
 */

const TIMEOUT = 60_000;
const TOKEN = 'mcp-settings-audit-token-0042';

let http: HttpMcpServer;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
const { api } = gatewayApi(() => tg.url);

beforeAll(async () => {
  http = await startHttpMcpServer(TOKEN);
  tg = await startGateway({ providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-settings-audit-0042' } } });
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await http?.close();
});

describe('the settings page saving another setting', () => {
  it('keeps the MCP server added on the MCP page and the alert channel and rule set through the API', async () => {
    // An HTTP MCP server, added through the MCP page's form.
    await page.goto(tg.url + '/#/mcp');
    await page.getByRole('heading', { level: 1, name: 'MCP' }).waitFor();
    await page.getByRole('button', { name: 'Add a server' }).click();
    const form = page.getByRole('form', { name: 'Add a server' });
    await form.getByLabel('Server name').fill('remote');
    await form.getByLabel('Type').selectOption('http');
    await form.getByLabel('URL').fill(http.url);
    await form.getByLabel('Token').fill(TOKEN);
    await form.getByRole('button', { name: 'Add server' }).click();
    await page.getByText('Server remote saved').waitFor();
    expect(await waitForMcpTools(tg.url, 'remote', 2)).toBe(true);

    // An alert channel and a rule, through the alerts API (what the alerts page sends).
    expect((await api('PUT', '/api/alerts/channels/ops', { type: 'webhook', url: 'http://127.0.0.1:9/hook' })).status).toBe(201);
    expect((await api('PUT', '/api/alerts/rules/breakers', { kind: 'breaker_opened', severity: 'critical', channels: ['ops'] })).status).toBe(201);
    const before = (await api('GET', '/api/config?layer=api')).body;
    expect(Object.keys(before.mcp.servers)).toEqual(['remote']);
    expect(Object.keys(before.alerts.channels)).toEqual(['ops']);

    // One setting changed on the settings page, and saved.
    await page.goto(tg.url + '/#/settings');
    const editor = page.getByLabel('Configuration (YAML)');
    await editor.waitFor();
    const text = await editor.inputValue();
    expect(text).toContain('log_retention_days: 30');
    await editor.fill(text.replace('log_retention_days: 30', 'log_retention_days: 9'));
    await page.getByTestId('config-valid').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('config-saved').waitFor();
    await screenshot(page, 'audit-settings-sections');

    const after = (await api('GET', '/api/config?layer=api')).body;
    expect(after.settings).toEqual({ log_retention_days: 9 });
    // The sections the settings page never showed are as they were.
    expect(after.mcp).toEqual(before.mcp);
    expect(after.alerts).toEqual(before.alerts);
    expect((await api('GET', '/api/alerts/rules/breakers')).status).toBe(200);
    const mcp = (await api('GET', '/api/mcp')).body as { servers: Array<{ name: string; state: string; tools: number }> };
    expect(mcp.servers.map((server) => server.name)).toEqual(['remote']);
    const call = await api('POST', '/v1/mcp/tools/call', { name: 'remote__lookup', arguments: { key: 'k1' } });
    expect(call).toMatchObject({ status: 200, body: { text: 'value-of-k1' } });

    // The MCP page still lists it.
    await page.goto(tg.url + '/#/mcp');
    await page.locator('tr[data-server="remote"] td[data-col="state"]').getByText('ready').waitFor();
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows the cache byte bound set through the API, and keeps it when another setting is saved', async () => {
    expect((await api('PATCH', '/api/config', { cache: { mode: 'on', max_bytes: 2_000_000 } })).status).toBe(200);
    expect((await api('GET', '/api/cache')).body.max_bytes).toBe(2_000_000);

    await page.goto(tg.url + '/#/');
    await page.goto(tg.url + '/#/settings');
    const editor = page.getByLabel('Configuration (YAML)');
    await editor.waitFor();
    await expect.poll(() => editor.inputValue()).toContain('log_retention_days: 9');
    const text = await editor.inputValue();
    expect(text).toContain('max_bytes: 2000000');
    await editor.fill(text.replace('log_retention_days: 9', 'log_retention_days: 10'));
    await page.getByTestId('config-valid').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('config-saved').waitFor();

    const after = (await api('GET', '/api/config?layer=api')).body;
    expect(after.settings).toEqual({ log_retention_days: 10 });
    expect(after.cache).toEqual({ mode: 'on', max_bytes: 2_000_000 });
    expect((await api('GET', '/api/config')).body.cache.max_bytes).toBe(2_000_000);
    expect((await api('GET', '/api/cache')).body.max_bytes).toBe(2_000_000);
    expect(errors).toEqual([]);
  }, TIMEOUT);
});
