import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// MCP tool names may hold dots and slashes and run to 128 characters (MCP 2025-11-25, "Tool names"); the function
// names models take may not: OpenAI's and Anthropic's are [a-zA-Z0-9_-] (OpenAI's 64 at most), Gemini's start with a
// letter or `_` and stop at 64. A tool offered to a model under a name its vendor refuses fails every request.

const DOTTED = 'issues.search';
const LONG = `summarise_${'the_whole_thread_'.repeat(5)}`;
const VENDOR_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

async function startNotes(): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const build = (): McpServer => {
    const server = new McpServer({ name: 'notes', version: '1.0.0' });
    for (const name of [DOTTED, LONG, 'plain']) {
      server.registerTool(name, { description: `The ${name} tool`, inputSchema: { query: z.string() } }, async ({ query }) => {
        calls.push(`${name}:${query}`);
        return { content: [{ type: 'text', text: `${name} found ${query}` }] };
      });
    }
    return server;
  };
  return { ...(await serveMcpOverHttp(build)), calls };
}

let upstream: ScriptedUpstream;
let notes: Awaited<ReturnType<typeof startNotes>>;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  notes = await startNotes();
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { notes: { type: 'http', url: notes.url } } },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const view = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { tools: unknown[] };
    if (view.tools.length === 3) break;
    await new Promise((done) => setTimeout(done, 50));
  }
});
afterAll(async () => {
  await tg?.stop();
  await notes?.close();
  await upstream?.close();
});
afterEach(() => {
  upstream.reset();
  notes.calls.length = 0;
});

const offered = (): string[] => (upstream.calls[0]?.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name);

describe('MCP tool names offered to models', () => {
  it('offers every tool under a name each vendor accepts, distinct, a valid name unchanged', async () => {
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { headers: { 'x-tollgate-mcp': 'notes' } });
    const names = offered();
    expect(names).toHaveLength(3);
    for (const name of names) expect(name).toMatch(VENDOR_NAME);
    expect(new Set(names).size).toBe(3);
    expect(names).toContain('notes__plain');
  });

  it('runs the tool behind a rewritten name in agent mode, and on POST /v1/mcp/tools/call in client mode', async () => {
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { headers: { 'x-tollgate-mcp': 'notes' } });
    const [dotted, long] = offered() as [string, string];
    upstream.reset();

    const answer = await tg.client.chat.completions.create(
      { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'pluto' }], tool_choice: { type: 'function', function: { name: long } } },
      { headers: { 'x-tollgate-mcp': 'notes', 'x-tollgate-mcp-mode': 'auto' } },
    );
    expect(notes.calls).toEqual([`${LONG}:pluto`]);
    expect(answer.choices[0]?.message.content).toBe(`echo: ${LONG} found pluto`);

    // Client mode: the client gets the name the model used, and runs it with that name.
    const handed = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'mars' }] }, { headers: { 'x-tollgate-mcp': 'notes' } });
    const call = handed.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe(dotted);
    const res = await fetch(`${tg.url}/v1/mcp/tools/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: call.function.name, arguments: JSON.parse(call.function.arguments) }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { text: string }).text).toBe(`${DOTTED} found mars`);
  });
});
