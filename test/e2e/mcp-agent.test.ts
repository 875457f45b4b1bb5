import Anthropic from '@anthropic-ai/sdk';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { GatewayEvents } from '../../src/core/events.js';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { GoogleGenAI } from '@google/genai';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

// MCP tools for models, through the official SDKs: the scripted upstream plays a model that calls the first tool it
// is offered (arguments {"query": <the user's text>}) and, given a tool result, answers "echo: <the result>".

const hi = (content: string): OpenAI.ChatCompletionMessageParam[] => [{ role: 'user', content }];

/** An MCP server over streamable HTTP (stateless: a server per request, as the SDK recommends), in this process. */
async function startKnowledgeBase(): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const build = (): McpServer => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up in the knowledge base', inputSchema: { query: z.string() } }, async ({ query }) => {
      calls.push(`lookup:${query}`);
      return { content: [{ type: 'text', text: `found: ${query.toUpperCase()}` }] };
    });
    server.registerTool('stall', { description: 'Never answers', inputSchema: { query: z.string() } }, async () => {
      calls.push('stall');
      return new Promise<never>(() => undefined);
    });
    return server;
  };
  return { ...(await serveMcpOverHttp(build)), calls };
}

let upstream: ScriptedUpstream;
let gemini: GeminiUpstream;
let claude: AnthropicUpstream;
let kb: Awaited<ReturnType<typeof startKnowledgeBase>>;
let tg: RunningGateway;
const { createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  claude = await startAnthropicUpstream({ apiKey: 'sk-ant-key' });
  kb = await startKnowledgeBase();
  tg = await startGateway({
    providers: {
      openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-key' },
    },
    mcp: { servers: { kb: { type: 'http', url: kb.url } }, call_timeout_ms: 400 },
    routes: { researcher: { targets: [{ model: 'openai/gpt-4o-mini' }], mcp: { servers: ['kb'], mode: 'auto' } } },
  });
  // The hub connects in the background: wait until the server's tools are listed.
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const health = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string; tools: number }> };
    if (health.servers.some((server) => server.name === 'kb' && server.state === 'ready' && server.tools >= 2)) break;
    await new Promise((done) => setTimeout(done, 50));
  }
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await upstream?.close();
  await gemini?.close();
  await claude?.close();
});
afterEach(() => {
  upstream.reset();
  claude.reset();
  kb.calls.length = 0;
});

describe('MCP tools for models', () => {
  it('adds the tools of the servers a request names, namespaced, and hands the model\'s tool call back to the client (client mode)', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('pluto') }, { headers: { 'x-tollgate-mcp': 'kb' } });
    const tools = upstream.calls[0]?.body.tools as Array<{ type: string; function: { name: string; description: string; parameters: { properties: Record<string, unknown> } } }>;
    expect(tools.map((tool) => tool.function.name)).toEqual(['kb__lookup', 'kb__stall']);
    expect(tools[0]?.function).toMatchObject({ description: 'Looks a topic up in the knowledge base', parameters: { type: 'object', properties: { query: { type: 'string' } } } });
    expect(answer.choices[0]?.finish_reason).toBe('tool_calls');
    const call = answer.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function).toEqual({ name: 'kb__lookup', arguments: JSON.stringify({ query: 'pluto' }) });
    expect(kb.calls).toEqual([]);
    // Without the header (and no route or key attaching servers) the request is left as it came.
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('pluto') });
    expect(upstream.calls[1]?.body.tools).toBeUndefined();
  });

  it('runs the MCP tool call itself in agent mode and answers with the final message', async () => {
    const called: Array<GatewayEvents['mcp.tool.called']> = [];
    const stop = tg.gateway.bus.on('mcp.tool.called', (event) => called.push(event));
    const answer = await tg.client.chat.completions.create(
      { model: 'openai/gpt-4o-mini', messages: hi('pluto') },
      { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } },
    );
    stop();
    expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'echo: found: PLUTO' } });
    expect(kb.calls).toEqual(['lookup:pluto']);
    expect(upstream.calls).toHaveLength(2);
    const second = upstream.calls[1]?.body.messages as Array<Record<string, any>>;
    expect(second.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(second[1]?.tool_calls[0].function.name).toBe('kb__lookup');
    expect(second[2]).toMatchObject({ role: 'tool', tool_call_id: second[1]?.tool_calls[0].id, content: 'found: PLUTO' });
    // Both turns are counted in the usage the client gets.
    expect(answer.usage?.completion_tokens).toBeGreaterThan(3);
    expect(called).toEqual([expect.objectContaining({ server: 'kb', tool: 'lookup', via: 'agent', status: 'ok' })]);
  });

  it('forces a tool call on the first turn only, when the client forces one, so the model can answer from the result', async () => {
    // Forced again on every turn, the model would call a tool each time until max_steps, and the client would get
    // a call to a tool it never offered; agent loops (the OpenAI Agents SDK's reset_tool_choice) let it choose after.
    const headers = { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' };
    for (const choice of ['required', { type: 'function', function: { name: 'kb__lookup' } }] as const) {
      const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('pluto'), tool_choice: choice }, { headers });
      expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'echo: found: PLUTO' } });
      expect(kb.calls).toEqual(['lookup:pluto']);
      expect(upstream.calls.map((call) => call.body.tool_choice)).toEqual([choice, 'auto']);
      upstream.reset();
      kb.calls.length = 0;
    }

    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: headers });
    const anyTool = { type: 'any' as const, disable_parallel_tool_use: true };
    const message = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 200, tool_choice: anyTool, messages: [{ role: 'user', content: 'venus' }] });
    expect(message.stop_reason).toBe('end_turn');
    expect(kb.calls).toEqual(['lookup:venus']);
    expect(claude.calls.map((call) => call.body.tool_choice)).toEqual([anyTool, { type: 'auto', disable_parallel_tool_use: true }]);
    claude.reset();
    kb.calls.length = 0;

    const response = await fetch(`${tg.url}/genai/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'venus' }] }], toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['kb__lookup'] } } }),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { candidates: Array<{ content: { parts: Array<{ text?: string; functionCall?: unknown }> } }> };
    expect(answer.candidates[0]?.content.parts.some((part) => part.functionCall)).toBe(false);
    expect(kb.calls).toEqual(['lookup:venus']);
    expect(gemini.calls.map((call) => call.body.toolConfig)).toEqual([{ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['kb__lookup'] } }, { functionCallingConfig: { mode: 'AUTO' } }]);
    gemini.reset();
  });

  it('refuses an x-tollgate-mcp-mode it does not know with a 400 naming it, rather than running in client mode', async () => {
    for (const mode of ['agent', 'on']) {
      const refused = await tg.client.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: hi('pluto') }, { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': mode } })
        .catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect(refused).toMatchObject({ status: 400, param: 'x-tollgate-mcp-mode' });
    }
    expect(upstream.calls).toHaveLength(0);
    // Header values are read as written, in any case.
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('pluto') }, { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'Auto' } });
    expect(answer.choices[0]?.message.content).toBe('echo: found: PLUTO');
  });

  it("counts an agent run as one request of its virtual key, however many turns it took", async () => {
    const created = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'agent-key' }) });
    const key = (await created.json()) as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.key, maxRetries: 0 });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('pluto') }, { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } });
    expect(upstream.calls).toHaveLength(2);
    const view = (await (await fetch(`${tg.url}/api/keys/${key.id}`)).json()) as { requests: number; total_requests: number };
    expect(view).toMatchObject({ requests: 1, total_requests: 1 });
  });

  it('streams the final turn of an agent run, with no tool call chunks shown to the client', async () => {
    const stream = await tg.client.chat.completions.create({ model: 'researcher', messages: hi('mars'), stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let sawToolCall = false;
    let usage: OpenAI.CompletionUsage | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.choices[0]?.delta.tool_calls) sawToolCall = true;
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('echo: found: MARS');
    expect(finish).toBe('stop');
    expect(sawToolCall).toBe(false);
    expect(usage?.total_tokens).toBeGreaterThan(0);
    expect(kb.calls).toEqual(['lookup:mars']);
  });

  it('runs a streamed tool call whose name the provider repeats in every delta (Fireworks, NVIDIA NIM) under that name once', async () => {
    const delta = (args: string, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-rep', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_rep', type: 'function', function: { name: 'kb__lookup', arguments: args } }] }, finish_reason: finish }] })}\n\n`;
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: delta('{"query":') + delta('"ceres"}', 'tool_calls') + 'data: [DONE]\n\n' });
    const stream = await tg.client.chat.completions.create({ model: 'researcher', messages: hi('ceres'), stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(kb.calls).toEqual(['lookup:ceres']);
    expect(text).toBe('echo: found: CERES');
  });

  it('streams the final turn live: its chunks reach the client as the upstream sends them, not all at the end', async () => {
    const slow = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 60 });
    const paced = await startGateway({
      providers: { openai: { base_url: `${slow.url}/v1`, api_key: 'sk-upstream' } },
      mcp: { servers: { kb: { type: 'http', url: kb.url } } },
      routes: { researcher: { targets: [{ model: 'openai/gpt-4o-mini' }], mcp: { servers: ['kb'], mode: 'auto' } } },
    });
    try {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !((await (await fetch(`${paced.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length) await new Promise((done) => setTimeout(done, 50));
      const stream = await paced.client.chat.completions.create({ model: 'researcher', messages: hi('one two three four'), stream: true });
      const arrivals: number[] = [];
      let text = '';
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta.content;
        if (piece) {
          arrivals.push(performance.now());
          text += piece;
        }
      }
      expect(text).toBe('echo: found: ONE TWO THREE FOUR');
      // Six pieces sent 60 ms apart: received live, the first and the last are well apart.
      expect(arrivals.length).toBeGreaterThanOrEqual(5);
      expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThan(150);
    } finally {
      await paced.stop();
      await slow.close();
    }
  });

  it('gives the model a tool error when a tool hangs past the call timeout, and still answers', async () => {
    const answer = await tg.client.chat.completions.create(
      { model: 'openai/gpt-4o-mini', messages: hi('anything'), tool_choice: { type: 'function', function: { name: 'kb__stall' } } },
      { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } },
    );
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(answer.choices[0]?.message.content).toMatch(/^echo: Error: .*(time|400 ms)/i);
    expect(kb.calls).toEqual(['stall']);
    // The call log keeps it: through which door, how it ended and why, never the arguments.
    const deadline = Date.now() + 3_000;
    let calls: Array<Record<string, unknown>> = [];
    while (Date.now() < deadline) {
      calls = ((await (await fetch(`${tg.url}/api/mcp/calls?server=kb&limit=5`)).json()) as { data: Array<Record<string, unknown>> }).data;
      if (calls[0]?.tool === 'stall') break;
      await new Promise((done) => setTimeout(done, 20));
    }
    expect(calls[0]).toMatchObject({ server: 'kb', tool: 'stall', via: 'agent', status: 'error', error: expect.stringContaining('did not answer within 400 ms'), keyId: null });
    expect(JSON.stringify(calls)).not.toContain('anything');
  });

  it('stops waiting for a tool when the agent time budget runs out, though the call timeout is longer', async () => {
    // A tool that never answers, a call timeout far past the budget: the budget bounds the run, tools included.
    const budgeted = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      mcp: { servers: { kb: { type: 'http', url: kb.url } }, call_timeout_ms: 60_000, agent: { time_budget_ms: 300 } },
    });
    try {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !((await (await fetch(`${budgeted.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length) await new Promise((done) => setTimeout(done, 50));
      const started = Date.now();
      const answer = await budgeted.client.chat.completions.create(
        { model: 'openai/gpt-4o-mini', messages: hi('anything'), tool_choice: { type: 'function', function: { name: 'kb__stall' } } },
        { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' }, timeout: 20_000 },
      );
      expect(kb.calls).toEqual(['stall']);
      expect(answer.choices[0]?.finish_reason).toBe('stop');
      expect(answer.choices[0]?.message.content).toMatch(/^echo: Error: .*time budget/);
      // Well under the 60 s call timeout (the budget is 0.3 s; the margin is for a busy machine).
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await budgeted.stop();
    }
  }, 30_000);

  it('lets the last turn a run may take answer, not call an MCP tool the client would get and never offered', async () => {
    // A paged search: each page asks to be called again, and the model would go on for ever.
    let pages = 0;
    const pager = await serveMcpOverHttp(() => {
      const server = new McpServer({ name: 'pager', version: '1.0.0' });
      server.registerTool('next', { description: 'The next page of results', inputSchema: { query: z.string() } }, async () => ({ content: [{ type: 'text', text: `page ${++pages}; call me again for more` }] }));
      return server;
    });
    const bounded = await startGateway({
      providers: {
        openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
        anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-key' },
        gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      },
      mcp: { servers: { pager: { type: 'http', url: pager.url } }, agent: { max_steps: 3 } },
    });
    const headers = { 'x-tollgate-mcp': 'pager', 'x-tollgate-mcp-mode': 'auto' };
    try {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !((await (await fetch(`${bounded.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length) await new Promise((done) => setTimeout(done, 50));
      const answer = await bounded.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('mars') }, { headers });
      expect(upstream.calls).toHaveLength(3);
      expect(pages).toBe(2);
      expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'echo: page 2; call me again for more' } });
      expect(upstream.calls.map((call) => call.body.tool_choice)).toEqual([undefined, undefined, 'none']);

      pages = 0;
      const anthropic = new Anthropic({ baseURL: `${bounded.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: headers });
      const message = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'use the tool for mars' }] });
      expect(claude.calls).toHaveLength(3);
      expect(pages).toBe(2);
      expect(message.stop_reason).toBe('end_turn');
      expect(message.content).toEqual([expect.objectContaining({ type: 'text' })]);
      expect(claude.calls.map((call) => call.body.tool_choice)).toEqual([undefined, undefined, { type: 'none' }]);

      pages = 0;
      const response = await fetch(`${bounded.url}/genai/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'use the tool for mars' }] }], toolConfig: { retrievalConfig: { languageCode: 'en' } } }),
      });
      expect(response.status).toBe(200);
      const candidate = ((await response.json()) as { candidates: Array<{ content: { parts: Array<{ text?: string; functionCall?: unknown }> } }> }).candidates[0];
      expect(gemini.calls).toHaveLength(3);
      expect(pages).toBe(2);
      expect(candidate?.content.parts.some((part) => part.functionCall)).toBe(false);
      expect(gemini.calls.map((call) => call.body.toolConfig)).toEqual([
        { retrievalConfig: { languageCode: 'en' } },
        { retrievalConfig: { languageCode: 'en' } },
        { retrievalConfig: { languageCode: 'en' }, functionCallingConfig: { mode: 'NONE' } },
      ]);
    } finally {
      await bounded.stop();
      await pager.close();
      claude.reset();
      gemini.reset();
    }
  });

  describe('with prices ($1 a token, so each turn shows)', () => {
    let priced: RunningGateway;
    beforeAll(async () => {
      priced = await startGateway({
        providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } } } },
        mcp: { servers: { kb: { type: 'http', url: kb.url } } },
      });
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !((await (await fetch(`${priced.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length) await new Promise((done) => setTimeout(done, 50));
    });
    afterAll(async () => {
      await priced?.stop();
    });

    const spendOf = async (id: string): Promise<number> => ((await (await fetch(`${priced.url}/api/keys/${id}`)).json()) as { spend: number }).spend;
    const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> =>
      fetch(`${priced.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-tollgate-mcp': 'kb', ...headers },
        body: JSON.stringify({ model: 'openai/priced-model', ...body }),
      });

    it('charges a turn that failed nothing: not the tokens of the turn before it', async () => {
      const created = (await (await fetch(`${priced.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'turns' }) })).json()) as { id: string; key: string };
      // What the first turn costs alone: the same request in client mode (the model's tool call comes back).
      expect((await chat(created.key, { messages: hi('mars') })).status).toBe(200);
      const firstTurn = await spendOf(created.id);
      expect(firstTurn).toBeGreaterThan(0);
      // In agent mode the first turn calls kb__lookup and the second fails upstream (no tokens used).
      upstream.enqueue({ kind: 'ok' }, { kind: 'error', status: 400, message: 'no more' });
      expect((await chat(created.key, { messages: hi('mars') }, { 'x-tollgate-mcp-mode': 'auto' })).status).toBe(400);
      expect(upstream.calls).toHaveLength(3);
      expect(kb.calls).toEqual(['lookup:mars']);
      expect((await spendOf(created.id)) - firstTurn).toBe(firstTurn);
    });

    /** The request's log entry (written just after the answer ends). */
    const logEntry = async (requestId: string): Promise<{ status: number; cost_usd: number }> => {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const entry = await fetch(`${priced.url}/api/logs/${encodeURIComponent(requestId)}`);
        if (entry.status === 200) return (await entry.json()) as { status: number; cost_usd: number };
        if (Date.now() > deadline) throw new Error(`no log entry for ${requestId}`);
        await new Promise((done) => setTimeout(done, 20));
      }
    };

    it("logs an agent run that failed or was cancelled with every turn's cost, as its key was charged", async () => {
      const created = (await (await fetch(`${priced.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'logged' }) })).json()) as { id: string; key: string };
      // The second turn fails upstream: the error is logged with the first turn's cost, which the key paid.
      upstream.enqueue({ kind: 'ok' }, { kind: 'error', status: 400, message: 'no more' });
      const failing = await chat(created.key, { messages: hi('mars') }, { 'x-tollgate-mcp-mode': 'auto' });
      expect(failing.status).toBe(400);
      const afterFailed = await spendOf(created.id);
      expect(afterFailed).toBeGreaterThan(0);
      expect(await logEntry(failing.headers.get('x-request-id') as string)).toMatchObject({ status: 400, cost_usd: afterFailed });

      // The second turn starts answering, then stalls: the client leaves in the middle of it.
      upstream.enqueue({ kind: 'ok' }, { kind: 'stall-after', chunks: 3 });
      const response = await chat(created.key, { messages: hi('pluto'), stream: true }, { 'x-tollgate-mcp-mode': 'auto' });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let received = '';
      while (!received.includes('echo:')) received += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      const logged = await logEntry(response.headers.get('x-request-id') as string);
      expect(kb.calls).toEqual(['lookup:mars', 'lookup:pluto']);
      expect(logged.status).toBe(499);
      expect(logged.cost_usd).toBe((await spendOf(created.id)) - afterFailed);
    });
  });

  it('shows MCP tools to Anthropic clients as Anthropic tools', async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: { 'x-tollgate-mcp': 'kb' } });
    const message = await anthropic.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'venus' }] });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toContainEqual(expect.objectContaining({ type: 'tool_use', name: 'kb__lookup', input: { query: 'venus' } }));
  });

  it('adds MCP tools to a Gemini client\'s own body as function declarations (native pass-through)', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, headers: { 'x-tollgate-mcp': 'kb' } } });
    const response = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'use the tool for venus', config: { tools: [{ googleSearch: {} }] } });
    expect(response.functionCalls?.[0]?.name).toBe('kb__lookup');
    const tools = gemini.calls[0]?.body.tools;
    // The client's own built-in tool stays, and the MCP tools come as one more tool of declarations.
    expect(tools[0]).toEqual({ googleSearch: {} });
    const declarations = tools[1].functionDeclarations as Array<{ name: string; parametersJsonSchema?: { properties?: object } }>;
    expect(declarations.map((declaration) => declaration.name)).toContain('kb__lookup');
    expect(declarations.find((declaration) => declaration.name === 'kb__lookup')?.parametersJsonSchema?.properties).toHaveProperty('query');
    gemini.reset();
  });

  it('streams an agent run to a Gemini client: text before a tool call, then the final turn, no tool call shown', async () => {
    // The first turn says something, then calls the MCP tool, in one read; the second turn answers from the result.
    const event = (parts: unknown[], finish?: string): string =>
      `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 }, modelVersion: 'gemini-2.5-flash' })}\r\n\r\n`;
    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: event([{ text: 'Let me look. ' }]) + event([{ functionCall: { name: 'kb__lookup', args: { query: 'venus' } } }], 'STOP') });
    const response = await fetch(`${tg.url}/genai/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'venus' }] }] }),
    });
    const text = await response.text();
    expect(kb.calls).toEqual(['lookup:venus']);
    expect(gemini.calls).toHaveLength(2);
    const said = text.split('\r\n\r\n').filter(Boolean).map((frame) => JSON.parse(frame.replace(/^data: /, '')));
    const words = said.map((frame) => frame.candidates?.[0]?.content?.parts?.map((part: { text?: string }) => part.text ?? '').join('') ?? '').join('');
    // The tool's result came back through the scripted upstream's second turn.
    expect(words).toContain('Let me look. ');
    expect(words).toMatch(/^Let me look. result: .*found: VENUS/);
    expect(text).not.toContain('kb__lookup');
    gemini.reset();
  });

  it('goes on in Anthropic\'s own format in agent mode: signed thinking handed back, server tools kept, the result as a tool_result', async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } });
    const params = {
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 2000,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const }],
      messages: [{ role: 'user' as const, content: 'use the tool for venus' }],
    };
    const check = (finalText: string): void => {
      expect(kb.calls).toEqual(['lookup:use the tool for venus']);
      expect(claude.calls).toHaveLength(2);
      const second = claude.calls[1]?.body;
      // The scripted upstream refuses a tool-use turn under thinking without its signed thinking block (as Anthropic does).
      expect(second.thinking).toEqual(params.thinking);
      expect(second.tools[0]).toEqual(params.tools[0]);
      expect(second.messages[1].role).toBe('assistant');
      expect(second.messages[1].content[0]).toMatchObject({ type: 'thinking', signature: expect.stringMatching(/^sig_/) });
      expect(second.messages[1].content.at(-1)).toMatchObject({ type: 'tool_use', name: 'kb__lookup' });
      expect(second.messages[2].content).toEqual([{ type: 'tool_result', tool_use_id: second.messages[1].content.at(-1).id, content: 'found: USE THE TOOL FOR VENUS' }]);
      expect(finalText).toBe('echo: tool said found: USE THE TOOL FOR VENUS');
    };
    const message = await anthropic.messages.create(params);
    check(message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join(''));
    claude.reset();
    kb.calls.length = 0;
    const streamed = await anthropic.messages.stream(params).finalMessage();
    check(streamed.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join(''));
  });

  it("adds every turn's cache reads and writes up in the usage an agent run's Anthropic client gets, not the last turn's alone", async () => {
    // Every later turn of an agent run reads the growing prompt from the cache: the cached part is most of its input.
    claude.setCacheTokens(100, 20);
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } });
    const params = { model: 'anthropic/claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user' as const, content: 'use the tool for venus' }] };
    const expected = (): Record<string, number> => {
      const turns = claude.sent.map((answer) => answer.message.usage as Record<string, number>);
      expect(turns).toHaveLength(2);
      const sum = (field: string): number => turns.reduce((total, usage) => total + (usage[field] ?? 0), 0);
      return { input_tokens: sum('input_tokens'), output_tokens: sum('output_tokens'), cache_read_input_tokens: 200, cache_creation_input_tokens: 40 };
    };
    const message = await anthropic.messages.create(params);
    expect(message.usage).toMatchObject(expected());
    claude.sent.length = 0;
    const streamed = await anthropic.messages.stream(params).finalMessage();
    expect(streamed.usage).toMatchObject(expected());
    claude.reset();
  });

  it("gives an Anthropic client the upstream's own answer in agent mode when one turn ran: its signed thinking survives for the client's own tool call", async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } });
    const params = {
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 2000,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      // The client's own tool comes first: the model calls it, so the run ends at its first turn and the client runs it.
      tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } } }],
      messages: [{ role: 'user' as const, content: 'use the tool for oslo' }],
    };
    const message = await anthropic.messages.create(params);
    expect(message.stop_reason).toBe('tool_use');
    expect(kb.calls).toEqual([]);
    expect(message.content[0]).toMatchObject({ type: 'thinking', signature: expect.stringMatching(/^sig_/) });
    const call = message.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(call.name).toBe('get_weather');
    // Anthropic wants a tool-use turn's signed thinking back, unchanged, with the tool's result.
    const followUp = await anthropic.messages.create({
      ...params,
      messages: [...params.messages, { role: 'assistant', content: message.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }],
    });
    expect(followUp.stop_reason).toBe('end_turn');
    claude.reset();
  });

  it('goes on in Gemini\'s own format in agent mode: built-in tools kept, the call\'s thought signature handed back', async () => {
    const response = await fetch(`${tg.url}/genai/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'use the tool for venus' }] }], tools: [{ googleSearch: {} }], safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }] }),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { candidates: Array<{ content: { parts: Array<{ text?: string }> } }>; usageMetadata: Record<string, any> };
    // The last turn's answer is Gemini's own (its counts by modality, which the canonical form drops, kept), with
    // the usage of both turns added up, the details with the totals.
    const usage = answer.usageMetadata;
    expect(usage.promptTokensDetails).toEqual([{ modality: 'TEXT', tokenCount: usage.promptTokenCount }]);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount + usage.candidatesTokenCount);
    expect(usage.candidatesTokenCount).toBeGreaterThan(8);
    expect(kb.calls).toEqual(['lookup:use the tool for venus']);
    expect(gemini.calls).toHaveLength(2);
    const second = gemini.calls[1]?.body;
    expect(second.tools[0]).toEqual({ googleSearch: {} });
    expect(second.safetySettings).toEqual([{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }]);
    expect(second.contents[1]).toEqual({ role: 'model', parts: [{ functionCall: { name: 'kb__lookup', args: expect.any(Object) }, thoughtSignature: 'c2lnbmF0dXJlLW9mLXRoZS1jYWxs' }] });
    expect(second.contents[2]).toEqual({ role: 'user', parts: [{ functionResponse: { name: 'kb__lookup', response: { result: 'found: USE THE TOOL FOR VENUS' } } }] });
    expect(answer.candidates[0]?.content.parts.map((part) => part.text ?? '').join('')).toContain('found: USE THE TOOL FOR VENUS');
    gemini.reset();
  });

  it("keeps a key to its allow-list: a server outside it is refused, a listed tool alone is offered", async () => {
    // An allow-list names configured servers only (a 400 otherwise): one allowed none is outside every server.
    const outsider = await createKey({ name: 'outsider', mcp: { allow: [] } });
    const refused = await clientFor(outsider.key)
      .chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x') }, { headers: { 'x-tollgate-mcp': 'kb' } })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(refused).toMatchObject({ code: 'mcp_tool_not_allowed' });
    const narrow = await createKey({ name: 'narrow', mcp: { allow: ['kb__lookup'] } });
    await clientFor(narrow.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x') }, { headers: { 'x-tollgate-mcp': 'kb' } });
    expect((upstream.calls[0]?.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name)).toEqual(['kb__lookup']);
    const unknown = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x') }, { headers: { 'x-tollgate-mcp': 'nowhere' } }).catch((err: unknown) => err);
    expect(unknown).toMatchObject({ status: 400, param: 'x-tollgate-mcp' });
  });

  it('lets a key allowed one tool of a server through while that server is down, as a key allowed the whole server is', async () => {
    // A port nothing listens on: the server is configured, its connection fails and is retried.
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((done) => closed.close(() => done()));
    const down = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      // `kb` is configured (disabled) so that an allow-list may name it: a key allowed only kb is outside notes.
      mcp: { servers: { notes: { type: 'http', url: `http://127.0.0.1:${port}/mcp` }, kb: { type: 'http', url: `http://127.0.0.1:${port}/mcp`, disabled: true } } },
    });
    try {
      const chat = async (allow: string[]): Promise<Response> => {
        const created = await fetch(`${down.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `allow-${allow.join('-')}`, mcp: { allow } }) });
        const { key } = (await created.json()) as { key: string };
        return fetch(`${down.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-tollgate-mcp': 'notes' },
          body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: hi('x') }),
        });
      };
      expect((await chat(['notes'])).status).toBe(200);
      const oneTool = await chat(['notes__search']);
      expect(oneTool.status).toBe(200);
      const other = await chat(['kb']);
      expect(other.status).toBe(403);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe('mcp_tool_not_allowed');
    } finally {
      await down.stop();
    }
  });
});
