import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBrowserPage, screenshot } from '../helpers/browser.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { waitForMcpTools } from '../helpers/mcp-ready.js';

/**
 * The MCP page's tool calls say what the output guardrails did to a directly called tool's result (the call log's
 * `guardrails`): an operator sees which results were redacted or withheld, never the result itself.
 */

const TIMEOUT = 60_000;
const SECRET = `sk-proj-${'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy'}`;

function buildServer(): McpServer {
  const server = new McpServer({ name: 'docs-fixture', version: '1.0.0' });
  server.registerTool('leaky', { description: 'Returns a secret.' }, async () => ({ content: [{ type: 'text', text: `the key is ${SECRET}` }] }));
  server.registerTool('roadmap', { description: 'Returns a denied phrase.' }, async () => ({ content: [{ type: 'text', text: 'Project Zephyr launch plan' }] }));
  server.registerTool('clean', { description: 'Returns nothing any rule matches.' }, async () => ({ content: [{ type: 'text', text: 'nothing to see' }] }));
  return server;
}

let fixture: { url: string; close(): Promise<void> };
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  fixture = await serveMcpOverHttp(buildServer);
  tg = await startGateway({
    guardrails: {
      rules: [
        { name: 'keys', kind: 'secret', action: 'redact', applies_to: 'output' },
        { name: 'deny', kind: 'keyword', keywords: ['project zephyr'], action: 'block', applies_to: 'output' },
      ],
    },
    mcp: { servers: { docs: { type: 'http', url: fixture.url } } },
  });
  expect(await waitForMcpTools(tg.url, 'docs', 3)).toBe(true);
  ({ browser, page, errors } = await openBrowserPage());
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await fixture?.close();
});

async function callTool(name: string): Promise<number> {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, arguments: {} }) });
  await res.text();
  return res.status;
}

describe('the MCP page, tool calls the output guardrails acted on', () => {
  it('shows what the rules did to each result, never the result', async () => {
    expect(await callTool('docs__leaky')).toBe(200);
    expect(await callTool('docs__roadmap')).toBe(400);
    expect(await callTool('docs__clean')).toBe(200);

    await page.goto(`${tg.url}/#/mcp`);
    const row = (tool: string) => page.locator(`tr[data-call-tool="docs__${tool}"]`);
    await row('clean').waitFor();
    await expect.poll(() => row('leaky').locator('[data-col="guardrails"]').innerText()).toBe('keys:redacted');
    expect(await row('roadmap').locator('[data-col="guardrails"]').innerText()).toBe('deny:blocked');
    expect(await row('clean').locator('[data-col="guardrails"]').innerText()).toBe('none');
    const table = await page.getByRole('table', { name: 'Tool calls' }).innerText();
    expect(table).not.toContain(SECRET);
    expect(table.toLowerCase()).not.toContain('zephyr');
    await screenshot(page, 'mcp-calls-guardrails');
    expect(errors).toEqual([]);
  }, TIMEOUT);
});
