/**
 * What the output guardrails did to a tool called directly (`POST /v1/mcp/tools/call`, `tools/call` on `/mcp`) is
 * kept with the call: `guardrails` (`<side>:<rule>:<action>`, as in the request log) in the MCP call log
 * (`GET /api/mcp/calls`) and on `mcp.tool.called`, so an operator can tell which results were redacted, withheld or
 * flagged; null for a result no rule touched, and for lines written before the field existed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { GatewayEvents } from '../../src/core/events.js';
import { openRecords } from '../../src/store/records.js';
import { Store } from '../../src/store/store.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { waitForMcpTools } from '../helpers/mcp-ready.js';

const SECRET = `sk-proj-${'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy'}`; // sk-proj- and 30 characters
const CARD = '4242 4242 4242 4242';
const EMAIL = 'ops.lead@tickets.example.com';
const LEAKY_STRUCTURED = { note: 'creds', key: SECRET, nested: { cards: [CARD, 'none'] }, count: 2 };

function buildServer(): McpServer {
  const server = new McpServer({ name: 'docs-fixture', version: '1.0.0' });
  server.registerTool('leaky', { description: 'Returns a secret and a card number.' }, async () => ({
    content: [{ type: 'text', text: `Deploy notes: the key is ${SECRET}; billing card ${CARD}.` }],
  }));
  server.registerTool(
    'leaky_structured',
    { description: 'Returns a secret and a card number, structured too.', outputSchema: { note: z.string(), key: z.string(), nested: z.object({ cards: z.array(z.string()) }), count: z.number() } },
    async () => ({ content: [{ type: 'text', text: JSON.stringify(LEAKY_STRUCTURED) }], structuredContent: LEAKY_STRUCTURED }),
  );
  server.registerTool('mailer', { description: 'Returns an email address.' }, async () => ({ content: [{ type: 'text', text: `Owner: ${EMAIL}` }] }));
  server.registerTool('mixed', { description: 'Returns an email address and a secret.' }, async () => ({
    content: [{ type: 'text', text: `Owner: ${EMAIL}, key ${SECRET}` }],
  }));
  server.registerTool('roadmap', { description: 'Returns a denied phrase and a secret.' }, async () => ({
    content: [{ type: 'text', text: `Project Zephyr launch plan; key ${SECRET}` }],
  }));
  server.registerTool('clean', { description: 'Returns nothing any rule matches.' }, async () => ({
    content: [{ type: 'text', text: 'Ticket #1234: nothing to see.' }],
  }));
  return server;
}

let fixture: { url: string; close(): Promise<void> };
let tg: RunningGateway;
const called: Array<GatewayEvents['mcp.tool.called']> = [];

async function createKey(body: Record<string, unknown> = {}): Promise<{ key: string; id: string }> {
  const res = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `k-${Math.random().toString(36).slice(2)}`, ...body }) });
  expect(res.status).toBe(201);
  return (await res.json()) as { key: string; id: string };
}

async function callTool(key: string, name: string): Promise<{ status: number; raw: string; requestId: string }> {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ name, arguments: {} }),
  });
  const requestId = res.headers.get('x-request-id');
  expect(requestId).toBeTruthy();
  return { status: res.status, raw: await res.text(), requestId: requestId! };
}

async function withMcpClient<T>(key: string, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ name: 'call-log-guardrails-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${tg.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

/** The key's MCP call log lines (newest first), once `count` of them are written. */
async function callLog(url: string, keyId: string, count: number): Promise<Array<Record<string, any>>> {
  let lines: Array<Record<string, any>> = [];
  for (let i = 0; i < 80; i++) {
    const res = await fetch(`${url}/api/mcp/calls?key_id=${keyId}`);
    expect(res.status).toBe(200);
    lines = ((await res.json()) as { data: Array<Record<string, any>> }).data;
    if (lines.length >= count) break;
    await new Promise((done) => setTimeout(done, 25));
  }
  expect(lines).toHaveLength(count);
  return lines;
}

function sorted(labels: unknown): unknown {
  return Array.isArray(labels) ? [...(labels as string[])].sort() : labels;
}

beforeAll(async () => {
  fixture = await serveMcpOverHttp(buildServer);
  tg = await startGateway({
    guardrails: {
      rules: [
        { name: 'keys', kind: 'secret', action: 'redact', applies_to: 'output' },
        { name: 'cards', kind: 'payment_card', action: 'redact' },
        { name: 'emails', kind: 'email', action: 'flag', applies_to: 'output' },
        { name: 'deny', kind: 'keyword', keywords: ['project zephyr'], action: 'block', applies_to: 'output' },
        { name: 'prompt-only', kind: 'keyword', keywords: ['ticket'], action: 'block', applies_to: 'input' },
      ],
    },
    mcp: { servers: { docs: { type: 'http', url: fixture.url } } },
  });
  tg.gateway.bus.on('mcp.tool.called', (event) => called.push(event));
  expect(await waitForMcpTools(tg.url, 'docs', 6)).toBe(true);
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await fixture?.close();
});

describe('the MCP call log and mcp.tool.called say what the output guardrails did to a direct call', () => {
  it('POST /v1/mcp/tools/call: redacted, blocked, flagged, and null for a result no rule touched', async () => {
    const { key, id } = await createKey();
    const redacted = await callTool(key, 'docs__leaky');
    const blocked = await callTool(key, 'docs__roadmap');
    const flagged = await callTool(key, 'docs__mailer');
    const mixed = await callTool(key, 'docs__mixed');
    const clean = await callTool(key, 'docs__clean');
    expect([redacted.status, blocked.status, flagged.status, mixed.status, clean.status]).toEqual([200, 400, 200, 200, 200]);
    expect(redacted.raw).not.toContain(SECRET);
    expect(blocked.raw).toContain('guardrail_blocked');

    const expected = new Map<string, unknown>([
      [redacted.requestId, ['output:cards:redacted', 'output:keys:redacted']],
      // A block withholds the whole result: only the block is reported (as the guardrail.* events do).
      [blocked.requestId, ['output:deny:blocked']],
      [flagged.requestId, ['output:emails:flagged']],
      [mixed.requestId, ['output:emails:flagged', 'output:keys:redacted']],
      [clean.requestId, null],
    ]);
    const lines = await callLog(tg.url, id, 5);
    for (const [requestId, labels] of expected) {
      const line = lines.find((entry) => entry.requestId === requestId);
      expect(line, requestId).toMatchObject({ server: 'docs', via: 'api', keyId: id });
      expect([requestId, sorted(line!.guardrails)]).toEqual([requestId, labels]);
      const event = called.find((entry) => entry.requestId === requestId);
      expect(event, requestId).toBeDefined();
      expect([requestId, sorted(event!.guardrails)]).toEqual([requestId, labels]);
    }
    // The blocked call is still an error result, as before; and the labels never carry the matched text.
    expect(lines.find((entry) => entry.requestId === blocked.requestId)).toMatchObject({ tool: 'roadmap', status: 'ok', isError: true });
    expect(JSON.stringify(lines)).not.toContain(SECRET);
    expect(JSON.stringify(lines)).not.toContain(EMAIL);
    expect(JSON.stringify(lines)).not.toMatch(/zephyr/i);
  });

  it('/mcp with the MCP SDK client: redacted (content and structured content), blocked, flagged, and null', async () => {
    const { key, id } = await createKey();
    await withMcpClient(key, async (client) => {
      for (const name of ['docs__leaky_structured', 'docs__roadmap', 'docs__mailer', 'docs__clean']) await client.callTool({ name, arguments: {} });
    });
    const expected: Record<string, unknown> = {
      leaky_structured: ['output:cards:redacted', 'output:keys:redacted'],
      roadmap: ['output:deny:blocked'],
      mailer: ['output:emails:flagged'],
      clean: null,
    };
    const lines = await callLog(tg.url, id, 4);
    for (const [tool, labels] of Object.entries(expected)) {
      const line = lines.find((entry) => entry.tool === tool);
      expect(line, tool).toMatchObject({ server: 'docs', via: 'mcp', keyId: id });
      expect([tool, sorted(line!.guardrails)]).toEqual([tool, labels]);
      const event = called.find((entry) => entry.keyId === id && entry.tool === tool);
      expect(event, tool).toBeDefined();
      expect([tool, sorted(event!.guardrails)]).toEqual([tool, labels]);
    }
  });

  it("a key's override: a rule redefined to block reports the block; a key skipping every matching rule gets null", async () => {
    const strict = await createKey({ guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block' }] } });
    const blocked = await callTool(strict.key, 'docs__leaky');
    expect(blocked.status).toBe(400);
    expect(sorted((await callLog(tg.url, strict.id, 1))[0]!.guardrails)).toEqual(['output:cards:blocked']);

    const lax = await createKey({ guardrails: { skip: ['keys', 'cards'] } });
    const open = await callTool(lax.key, 'docs__leaky');
    expect(open.status).toBe(200);
    expect(open.raw).toContain(SECRET);
    expect((await callLog(tg.url, lax.id, 1))[0]!.guardrails).toBeNull();
    expect(called.find((entry) => entry.requestId === open.requestId)?.guardrails).toBeNull();
  });

  it('a call log line written before the field existed reads with guardrails: null', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-mcp-calls-'));
    try {
      const store = await Store.open(dataDir, 'test');
      const legacy = { at: new Date().toISOString(), requestId: 'req-legacy', keyId: 'key-legacy', teamId: null, server: 'docs', tool: 'leaky', via: 'api', durationMs: 3, status: 'ok', isError: false, argumentsBytes: 2, resultBytes: 10, truncated: false, error: null };
      await openRecords<Record<string, unknown>, [number, number]>(store.root, { name: 'mcp-calls' }).put([Date.now(), 0], legacy);
      await store.close();
      const restarted = await startGateway({}, {}, { dataDir });
      try {
        const [line] = await callLog(restarted.url, 'key-legacy', 1);
        expect(line).toEqual({ ...legacy, guardrails: null });
      } finally {
        await restarted.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
