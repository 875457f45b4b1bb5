/**
 * A tool called directly (`POST /v1/mcp/tools/call`, `tools/call` on tollgate's `/mcp`) gives its result to the
 * client as an answer does: the output guardrails check it (redact, block, flag; events, metric; a key's override),
 * and a result nothing matches goes out exactly as the server gave it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { GatewayEvents } from '../../src/core/events.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { waitForMcpTools } from '../helpers/mcp-ready.js';

const SECRET = `sk-proj-${'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy'}`; // sk-proj- and 30 characters
const CARD = '4242 4242 4242 4242';
const EMAIL = 'ops.lead@tickets.example.com';

/** What the fixture's tools return, kept here to compare the gateway's answers with, byte for byte. */
const LEAKY_TEXT = `Deploy notes: the key is ${SECRET}; billing card ${CARD}.`;
const LEAKY_STRUCTURED = { note: 'creds', key: SECRET, nested: { cards: [CARD, 'none'] }, count: 2 };
const CLEAN_CONTENT = [
  { type: 'text', text: 'Ticket #1234: "café" \u2014 escapes \\ / \n\t and emoji \u{1F600}; order 2024-11-30, id 5105105105105101x.' },
  { type: 'text', text: 'Second block, nothing to see.' },
];
const CLEAN_STRUCTURED = { ticket: 1234, title: 'café \u2014 "quoted"', tags: ['a', 'b'], empty: null, flag: true };

function buildServer(): McpServer {
  const server = new McpServer({ name: 'docs-fixture', version: '1.0.0' });
  server.registerTool('leaky', { description: 'Returns a secret and a card number.' }, async () => ({
    content: [{ type: 'text', text: LEAKY_TEXT }, { type: 'text', text: 'contact: nobody' }],
  }));
  server.registerTool(
    'leaky_structured',
    { description: 'Returns a secret and a card number, structured too.', outputSchema: { note: z.string(), key: z.string(), nested: z.object({ cards: z.array(z.string()) }), count: z.number() } },
    async () => ({ content: [{ type: 'text', text: JSON.stringify(LEAKY_STRUCTURED) }], structuredContent: LEAKY_STRUCTURED }),
  );
  server.registerTool('mailer', { description: 'Returns an email address.' }, async () => ({ content: [{ type: 'text', text: `Owner: ${EMAIL}` }] }));
  server.registerTool('roadmap', { description: 'Returns a denied phrase and a secret.' }, async () => ({
    content: [{ type: 'text', text: `Project Zephyr launch plan; key ${SECRET}` }],
  }));
  server.registerTool('long', { description: 'Returns a long text with a secret where max_result_bytes cuts it.' }, async () => ({
    content: [{ type: 'text', text: `${'filler '.repeat(18)}${SECRET} and more text after it` }],
  }));
  server.registerTool(
    'clean',
    { description: 'Returns nothing any rule matches.', outputSchema: { ticket: z.number(), title: z.string(), tags: z.array(z.string()), empty: z.null(), flag: z.boolean() } },
    async () => ({ content: CLEAN_CONTENT as never, structuredContent: CLEAN_STRUCTURED }),
  );
  return server;
}

let fixture: { url: string; close(): Promise<void> };
let tg: RunningGateway;
const events: Array<{ name: string; event: GatewayEvents['guardrail.redacted'] }> = [];

async function createKey(body: Record<string, unknown>): Promise<{ key: string; id: string }> {
  const res = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `k-${Math.random().toString(36).slice(2)}`, ...body }) });
  expect(res.status).toBe(201);
  return (await res.json()) as { key: string; id: string };
}

async function callTool(key: string, name: string): Promise<{ status: number; raw: string; body: Record<string, any>; requestId: string | null }> {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ name, arguments: {} }),
  });
  const raw = await res.text();
  return { status: res.status, raw, body: JSON.parse(raw) as Record<string, any>, requestId: res.headers.get('x-request-id') };
}

async function withMcpClient<T>(key: string, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ name: 'guardrail-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${tg.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

async function metric(rule: string, action: string): Promise<number> {
  const text = await (await fetch(`${tg.url}/metrics`)).text();
  const line = text.split('\n').find((entry) => entry.startsWith('tollgate_guardrail_actions_total{') && entry.includes(`rule="${rule}"`) && entry.includes(`action="${action}"`) && entry.includes('side="output"'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

function eventsOf(requestId: string | null): Array<[string, string, number]> {
  return events.filter(({ event }) => event.requestId === requestId).map(({ name, event }) => [name, event.rule, event.count]);
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
        // Input rules are for prompts: a tool's result going back to the client is not one.
        { name: 'prompt-only', kind: 'keyword', keywords: ['ticket'], action: 'block', applies_to: 'input' },
      ],
    },
    mcp: { servers: { docs: { type: 'http', url: fixture.url } } },
  });
  for (const name of ['guardrail.blocked', 'guardrail.redacted', 'guardrail.flagged'] as const) tg.gateway.bus.on(name, (event) => events.push({ name, event }));
  expect(await waitForMcpTools(tg.url, 'docs', 6)).toBe(true);
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await fixture?.close();
});

describe('output guardrails on tools called directly', () => {
  it('POST /v1/mcp/tools/call: redacts a secret and a card number in the content and the text, and reports it', async () => {
    const { key, id } = await createKey({});
    const before = { keys: await metric('keys', 'redacted'), cards: await metric('cards', 'redacted') };
    const res = await callTool(key, 'docs__leaky');
    expect(res.status).toBe(200);
    expect(res.raw).not.toContain(SECRET);
    expect(res.raw).not.toContain('4242');
    expect(res.body.is_error).toBe(false);
    expect(res.body.content).toEqual([
      { type: 'text', text: 'Deploy notes: the key is [REDACTED:secret]; billing card [REDACTED:payment_card].' },
      { type: 'text', text: 'contact: nobody' },
    ]);
    expect(res.body.text).toContain('[REDACTED:secret]');
    expect(eventsOf(res.requestId).sort()).toEqual([
      ['guardrail.redacted', 'cards', 1],
      ['guardrail.redacted', 'keys', 1],
    ]);
    const event = events.find((entry) => entry.event.requestId === res.requestId)!.event;
    expect(event).toMatchObject({ side: 'output', keyId: id, route: null });
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(await metric('keys', 'redacted')).toBe(before.keys + 1);
    expect(await metric('cards', 'redacted')).toBe(before.cards + 1);
  });

  it('POST /v1/mcp/tools/call: redacts structured content the same way (string values)', async () => {
    const { key } = await createKey({});
    const res = await callTool(key, 'docs__leaky_structured');
    expect(res.status).toBe(200);
    expect(res.raw).not.toContain(SECRET);
    expect(res.raw).not.toContain('4242');
    expect(res.body.structured_content).toEqual({ note: 'creds', key: '[REDACTED:secret]', nested: { cards: ['[REDACTED:payment_card]', 'none'] }, count: 2 });
  });

  it('POST /v1/mcp/tools/call: a block rule answers 400 guardrail_blocked naming the rule, never the text', async () => {
    const { key } = await createKey({});
    const before = await metric('deny', 'blocked');
    const res = await callTool(key, 'docs__roadmap');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'guardrail_blocked', type: 'invalid_request_error' });
    expect(res.body.error.message).toContain("'deny'");
    expect(res.raw).not.toMatch(/zephyr/i);
    expect(res.raw).not.toContain(SECRET);
    expect(eventsOf(res.requestId)).toEqual([['guardrail.blocked', 'deny', 1]]);
    expect(await metric('deny', 'blocked')).toBe(before + 1);
  });

  it('a flag rule reports and changes nothing', async () => {
    const { key } = await createKey({});
    const before = await metric('emails', 'flagged');
    const res = await callTool(key, 'docs__mailer');
    expect(res.status).toBe(200);
    expect(res.body.content).toEqual([{ type: 'text', text: `Owner: ${EMAIL}` }]);
    expect(eventsOf(res.requestId)).toEqual([['guardrail.flagged', 'emails', 1]]);
    expect(await metric('emails', 'flagged')).toBe(before + 1);
  });

  it('a result no rule matches goes out byte for byte as the server gave it (input rules do not apply)', async () => {
    const { key } = await createKey({});
    const res = await callTool(key, 'docs__clean');
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body.content)).toBe(JSON.stringify(CLEAN_CONTENT));
    expect(JSON.stringify(res.body.structured_content)).toBe(JSON.stringify(CLEAN_STRUCTURED));
    expect(eventsOf(res.requestId)).toEqual([]);
    const viaMcp = await withMcpClient(key, (client) => client.callTool({ name: 'docs__clean', arguments: {} }));
    expect(JSON.stringify(viaMcp.content)).toBe(JSON.stringify(CLEAN_CONTENT));
    expect(JSON.stringify(viaMcp.structuredContent)).toBe(JSON.stringify(CLEAN_STRUCTURED));
    expect(viaMcp.isError).toBeFalsy();
  });

  it('/mcp with the MCP SDK client: redacts content and structured content', async () => {
    const { key } = await createKey({});
    const before = await metric('keys', 'redacted');
    const [plain, structured] = await withMcpClient(key, async (client) => [
      await client.callTool({ name: 'docs__leaky', arguments: {} }),
      await client.callTool({ name: 'docs__leaky_structured', arguments: {} }),
    ]);
    expect(plain!.isError).toBeFalsy();
    expect(plain!.content).toEqual([
      { type: 'text', text: 'Deploy notes: the key is [REDACTED:secret]; billing card [REDACTED:payment_card].' },
      { type: 'text', text: 'contact: nobody' },
    ]);
    expect(JSON.stringify(structured)).not.toContain(SECRET);
    expect(JSON.stringify(structured)).not.toContain('4242');
    expect(structured!.structuredContent).toEqual({ note: 'creds', key: '[REDACTED:secret]', nested: { cards: ['[REDACTED:payment_card]', 'none'] }, count: 2 });
    // One redaction per call in the plain tool, two (text block and structured content) in the structured one.
    expect(await metric('keys', 'redacted')).toBe(before + 2);
  });

  it('/mcp with the MCP SDK client: a block is a tool error result naming the rule, never the text', async () => {
    const { key } = await createKey({});
    const result = await withMcpClient(key, (client) => client.callTool({ name: 'docs__roadmap', arguments: {} }));
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toEqual([{ type: 'text', text: expect.stringContaining("Blocked by guardrail 'deny'") }]);
    expect(JSON.stringify(result)).not.toMatch(/zephyr/i);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("a key's guardrails override applies: a rule redefined to block, and rules skipped", async () => {
    const strict = await createKey({ guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block' }] } });
    const blocked = await callTool(strict.key, 'docs__leaky');
    expect(blocked.status).toBe(400);
    expect(blocked.body.error).toMatchObject({ code: 'guardrail_blocked' });
    expect(blocked.body.error.message).toContain("'cards'");
    expect(blocked.raw).not.toContain('4242');
    expect(eventsOf(blocked.requestId)).toEqual([['guardrail.blocked', 'cards', 1]]);
    const viaMcp = await withMcpClient(strict.key, (client) => client.callTool({ name: 'docs__leaky', arguments: {} }));
    expect(viaMcp.isError).toBe(true);
    expect(JSON.stringify(viaMcp)).not.toContain('4242');

    const lax = await createKey({ guardrails: { skip: ['keys', 'cards'] } });
    const open = await callTool(lax.key, 'docs__leaky');
    expect(open.status).toBe(200);
    expect(open.body.content[0]).toEqual({ type: 'text', text: LEAKY_TEXT });
    expect(eventsOf(open.requestId)).toEqual([]);
  });

  it('the MCP call log records a blocked call as an error result', async () => {
    const { key, id } = await createKey({});
    const res = await callTool(key, 'docs__roadmap');
    expect(res.status).toBe(400);
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 40 && !line; i++) {
      const calls = ((await (await fetch(`${tg.url}/api/mcp/calls?key_id=${id}`)).json()) as { data: Array<Record<string, unknown>> }).data;
      line = calls.find((entry) => entry.requestId === res.requestId);
      if (!line) await new Promise((done) => setTimeout(done, 25));
    }
    expect(line).toMatchObject({ server: 'docs', tool: 'roadmap', via: 'api', status: 'ok', isError: true });
  });

  it('a result is checked before max_result_bytes cuts it: no part of a secret cut in two reaches the client', async () => {
    // The cut falls inside the secret (126 bytes of filler, then the 38-character key): checked after the cut, its first
    // 24 characters would be too short to be recognised, and would go out.
    const small = await startGateway({
      guardrails: { rules: [{ name: 'keys', kind: 'secret', action: 'redact', applies_to: 'output' }] },
      mcp: { servers: { docs: { type: 'http', url: fixture.url } }, max_result_bytes: 200 },
    });
    try {
      expect(await waitForMcpTools(small.url, 'docs', 6)).toBe(true);
      const res = await fetch(`${small.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'docs__long', arguments: {} }) });
      const raw = await res.text();
      expect(res.status).toBe(200);
      // Redacted first, the result is short enough to go whole.
      expect(JSON.parse(raw).content).toEqual([{ type: 'text', text: `${'filler '.repeat(18)}[REDACTED:secret] and more text after it` }]);
      expect(raw).not.toContain('sk-proj-');
      expect(raw).not.toContain(SECRET.slice(8, 20));
    } finally {
      await small.stop();
    }
  });
});
