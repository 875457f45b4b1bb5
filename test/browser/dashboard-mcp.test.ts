import { resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js';
import { collectPageErrors, openBrowserPage, screenshot } from '../helpers/browser.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Code run in the page is passed as strings: this file is type-checked for Node, without the DOM's types.

/**
 * The MCP page, in Chromium against a real gateway connected to the HTTP MCP fixture (from the config file): the
 * server shows ready with its tools; the stdio fixture added through the form connects without a restart (the file's
 * server keeps its connection) and an edit of its environment restarts it with the new value; a tool call shows in
 * the call log, filtered by server and key; a key's MCP editor saves an allow-list the API then enforces; and
 * removing the stdio server through the page ends its process and takes its tools away. It fits a phone.
 */

const TIMEOUT = 60_000;
const STDIO_SERVER = resolve(import.meta.dirname, '../fixtures/mcp/stdio-server.mjs');
const TOKEN = 'mcp-dashboard-token-1234567890';

interface ServerView {
  name: string;
  type: string;
  state: string;
  tools: number;
  connected_at: string | null;
  pid: number | null;
  config: Record<string, any>;
}

let http: HttpMcpServer;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];
/** Every stdio process the gateway started for the test: none may outlive it. */
const pids = new Set<number>();
const { api, createKey } = gatewayApi(() => tg.url);

async function mcpView(): Promise<{ servers: ServerView[]; tools: { name: string; server: string }[] }> {
  const view = (await api('GET', '/api/mcp')).body as { servers: ServerView[]; tools: { name: string; server: string }[] };
  for (const server of view.servers) if (server.pid) pids.add(server.pid);
  return view;
}

async function serverNamed(name: string): Promise<ServerView | undefined> {
  return (await mcpView()).servers.find((server) => server.name === name);
}

async function callTool(key: string | null, name: string, args: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ name, arguments: args }),
  });
  return { status: res.status, body: await res.json() };
}

async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  http = await startHttpMcpServer(TOKEN);
  tg = await startGateway({ mcp: { servers: { remote: { type: 'http', url: http.url, token: TOKEN } } } });
  await until('the HTTP MCP server ready', async () => (await serverNamed('remote'))?.state === 'ready');
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await http?.close();
  // Closing the gateway ends every stdio server's process.
  await until(`no stdio server process left (${[...pids].join(', ')})`, () => ![...pids].some(alive), 10_000);
});

describe('the MCP page', () => {
  it('shows the configured server as ready, with its tools and their arguments, its token masked', async () => {
    await page.goto(tg.url + '/#/mcp');
    await page.getByRole('heading', { level: 1, name: 'MCP' }).waitFor();
    expect(await page.getByRole('link', { name: 'MCP', exact: true }).getAttribute('aria-current')).toBe('page');
    await page.getByTestId('mcp-source').getByText('from the config file').waitFor();
    const row = page.locator('tr[data-server="remote"]');
    await row.waitFor();
    expect(await row.locator('td[data-col="state"]').textContent()).toBe('ready');
    expect(await row.locator('td[data-col="tools"]').textContent()).toBe('2');
    expect(await row.locator('td[data-col="pid"]').textContent()).toBe('—');
    const where = await row.locator('td[data-col="destination"]').textContent();
    expect(where).toContain(http.url);
    expect(where).toContain('token ');
    expect(where).not.toContain(TOKEN);

    const lookup = page.locator('[data-tools-of="remote"] tr[data-tool="remote__lookup"]');
    expect(await lookup.textContent()).toContain('Looks a key up.');
    expect(await lookup.locator('td[data-col="arguments"]').textContent()).toBe('key*');
    await page.locator('tr[data-tool="remote__secret"]').waitFor();
    await screenshot(page, 'mcp');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('adds the stdio server through the form: it connects without a restart, and the file’s server keeps its connection', async () => {
    const remoteBefore = await serverNamed('remote');
    await page.getByRole('button', { name: 'Add a server' }).click();
    const form = page.getByRole('form', { name: 'Add a server' });
    await form.getByLabel('Server name').fill('local');
    expect(await form.getByLabel('Type').inputValue()).toBe('stdio');
    await form.getByLabel('Command').fill(process.execPath);
    await form.getByLabel('Arguments').fill(STDIO_SERVER);
    await form.getByLabel('Environment').fill('FIXTURE_GREETING=hello from the form');
    await form.getByRole('button', { name: 'Add server' }).click();
    await page.getByText('Server local saved').waitFor();

    const row = page.locator('tr[data-server="local"]');
    await expect.poll(() => row.locator('td[data-col="state"]').textContent(), { timeout: 15_000 }).toBe('ready');
    expect(Number(await row.locator('td[data-col="pid"]').textContent())).toBeGreaterThan(0);
    await page.locator('[data-tools-of="local"] tr[data-tool="local__add"] td[data-col="arguments"]').getByText('a*, b*').waitFor();
    await page.getByTestId('mcp-source').getByText('from the API').waitFor();

    const local = await serverNamed('local');
    expect(local).toMatchObject({ state: 'ready', type: 'stdio', config: { type: 'stdio', command: process.execPath, args: [STDIO_SERVER] } });
    expect(local?.config.env.FIXTURE_GREETING).not.toBe('hello from the form');
    // The file's server went into the API's section with its token restored from the masked value: unchanged, not reconnected.
    const remote = await serverNamed('remote');
    expect(remote).toMatchObject({ state: 'ready', connected_at: remoteBefore?.connected_at });
    expect((await callTool(null, 'remote__lookup', { key: 'k1' })).body.text).toBe('value-of-k1');
    expect((await callTool(null, 'local__env', { name: 'FIXTURE_GREETING' })).body.text).toBe('hello from the form');
    expect(Object.keys((await api('GET', '/api/config?layer=api')).body.mcp.servers).sort()).toEqual(['local', 'remote']);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('edits the stdio server’s environment with one patch: it restarts with the new value, its masked args and env kept', async () => {
    const before = await serverNamed('local');
    await page.getByRole('button', { name: 'Edit server local' }).click();
    const form = page.getByRole('form', { name: 'Edit server local' });
    const env = await form.getByLabel('Environment').inputValue();
    expect(env).toMatch(/^FIXTURE_GREETING=/);
    expect(env).not.toContain('hello from the form');
    await form.getByLabel('Environment').fill(`${env}\nFIXTURE_OTHER=second`);
    await form.getByRole('button', { name: 'Save server' }).click();
    await page.getByText('Server local saved').waitFor();
    await expect.poll(async () => {
      const now = await serverNamed('local');
      return now?.state === 'ready' && now.pid !== before?.pid;
    }, { timeout: 15_000 }).toBe(true);
    // The masked value sent back kept the stored one; the new variable is there too.
    expect((await callTool(null, 'local__env', { name: 'FIXTURE_GREETING' })).body.text).toBe('hello from the form');
    expect((await callTool(null, 'local__env', { name: 'FIXTURE_OTHER' })).body.text).toBe('second');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('shows a tool call in the call log, filtered by server', async () => {
    const call = await callTool(null, 'local__add', { a: 2, b: 3 });
    expect(call).toMatchObject({ status: 200, body: { status: 'ok', text: '5' } });
    const row = page.locator('tr[data-call-tool="local__add"]');
    await row.first().waitFor({ timeout: 10_000 });
    expect(await row.first().locator('td[data-col="status"]').textContent()).toBe('ok');
    expect(await row.first().textContent()).toContain('api');

    const filters = page.getByRole('search', { name: 'Filter the tool calls' });
    await filters.getByLabel('Server').selectOption('remote');
    await expect.poll(() => row.count()).toBe(0);
    await page.locator('tr[data-call-tool="remote__lookup"]').first().waitFor();
    await filters.getByLabel('Server').selectOption('local');
    await row.first().waitFor();
    expect(await page.locator('tr[data-call-tool="remote__lookup"]').count()).toBe(0);
    await filters.getByLabel('Server').selectOption('');
    await screenshot(page, 'mcp-calls');
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('saves a key’s allow-list from the keys page, and the API enforces it', async () => {
    const { id, key } = await createKey({ name: 'mcp-limited' });
    await page.goto(tg.url + '/#/keys');
    await page.getByRole('button', { name: 'MCP of mcp-limited' }).click();
    const editor = page.getByRole('region', { name: 'MCP of the key “mcp-limited”' });
    const form = editor.getByRole('form', { name: 'MCP policy of mcp-limited' });
    await form.getByRole('checkbox', { name: 'remote__lookup' }).check();
    // The server attached to its chat requests is one its allow-list lets it use (another is a 400 when saved).
    await form.getByRole('checkbox', { name: 'remote', exact: true }).check();
    await form.getByLabel('Tool calls per minute').fill('30');
    await form.getByRole('button', { name: 'Save MCP policy' }).click();
    await editor.getByText('Saved:').waitFor();
    expect((await api('GET', `/api/keys/${id}`)).body.mcp).toEqual({ allow: ['remote__lookup'], servers: ['remote'], tool_calls_per_minute: 30 });
    await page.getByRole('row', { name: /mcp-limited/ }).getByText('mcp', { exact: true }).waitFor();
    await screenshot(page, 'keys-mcp');

    expect(await callTool(key, 'local__add', { a: 1, b: 1 })).toMatchObject({ status: 403, body: { error: { code: 'mcp_tool_not_allowed' } } });
    expect(await callTool(key, 'remote__lookup', { key: 'k2' })).toMatchObject({ status: 200, body: { text: 'value-of-k2' } });

    // The call log filtered by the key shows its call.
    await page.goto(tg.url + '/#/mcp');
    await page.getByRole('search', { name: 'Filter the tool calls' }).getByLabel('Key id').fill(id);
    // The log row is written just after the call and the table reloads on its own: wait for the key's row.
    await expect
      .poll(
        async () => [
          await page.locator(`tr[data-call-key="${id}"][data-call-tool="remote__lookup"][data-call-status="ok"]`).count(),
          await page.locator(`tr[data-call-tool]:not([data-call-key="${id}"])`).count(),
        ],
        { timeout: 10_000 },
      )
      .toEqual([1, 0]);
    expect(await page.locator(`tr[data-call-key="${id}"][data-call-tool="local__add"][data-call-status="ok"]`).count()).toBe(0);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('refuses a tool-call limit the browser cannot read, instead of saving the key without a limit', async () => {
    const id = ((await api('GET', '/api/keys?q=mcp-limited')).body.data as { id: string }[])[0]!.id;
    await page.goto(tg.url + '/#/keys');
    await page.getByRole('button', { name: 'MCP of mcp-limited' }).click();
    const form = page.getByRole('form', { name: 'MCP policy of mcp-limited' });
    const limit = form.getByLabel('Tool calls per minute');
    // The form is drawn again once the MCP servers are loaded: type into that one.
    await form.getByRole('checkbox', { name: 'remote__lookup' }).waitFor();
    await limit.fill('');
    // "3e" is no number: the input reports the value '', which read as empty, and the policy was saved unlimited.
    await limit.pressSequentially('3e');
    await form.getByRole('button', { name: 'Save MCP policy' }).click();
    await expect.poll(() => limit.getAttribute('aria-invalid')).toBe('true');
    expect((await api('GET', `/api/keys/${id}`)).body.mcp).toEqual({ allow: ['remote__lookup'], servers: ['remote'], tool_calls_per_minute: 30 });
    expect(errors).toEqual([]);
    await page.goto(tg.url + '/#/mcp');
    await page.locator('tr[data-server="local"]').waitFor();
  }, TIMEOUT);

  it('removes the stdio server only after confirming: its process ends and its tools are gone', async () => {
    const pid = (await serverNamed('local'))?.pid;
    expect(pid).toEqual(expect.any(Number));
    const row = page.locator('tr[data-server="local"]');
    await row.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove server' }).click();
    await page.getByText('Server local removed').waitFor();
    await expect.poll(() => row.count()).toBe(0);

    const view = await mcpView();
    expect(view.servers.map((server) => server.name)).toEqual(['remote']);
    expect(view.tools.filter((tool) => tool.server === 'local')).toEqual([]);
    await expect.poll(() => alive(pid!), { timeout: 10_000 }).toBe(false);
    expect(await page.locator('[data-tools-of="local"]').count()).toBe(0);
    expect(errors).toEqual([]);
  }, TIMEOUT);

  it('fits a phone', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      const small = await phone.newPage();
      const smallErrors = collectPageErrors(small);
      await small.goto(tg.url + '/#/mcp');
      await small.locator('tr[data-server="remote"]').waitFor();
      await small.getByRole('button', { name: 'Add a server' }).click();
      await small.getByRole('form', { name: 'Add a server' }).waitFor();
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, '#/mcp is wider than the screen').toBeLessThanOrEqual(0);
      await screenshot(small, 'phone-mcp');
      expect(smallErrors).toEqual([]);
    } finally {
      await phone.close();
    }
  }, TIMEOUT);
});
