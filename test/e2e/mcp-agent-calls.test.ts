import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The model's own mistakes in agent mode, and the shapes of tool results: a scripted upstream whose first turn is
// given whole (`raw`), then answers "echo: <the tool results>".

const hi = (content: string): OpenAI.ChatCompletionMessageParam[] => [{ role: 'user', content }];
const AUTO = { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' };

/** A first turn that ends with these tool calls (name, arguments as the model wrote them). */
function toolTurn(calls: Array<[string, string]>): { kind: 'raw'; status: number; headers: Record<string, string>; body: string } {
  const body = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: null, tool_calls: calls.map(([name, args], i) => ({ id: `call_${i}`, type: 'function', function: { name, arguments: args } })) },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
  };
  return { kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

let upstream: ScriptedUpstream;
let kb: { url: string; calls: string[]; close(): Promise<void> };
let tg: RunningGateway;
const { createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  const calls: string[] = [];
  const build = (): McpServer => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => {
      calls.push(`lookup:${query}`);
      return { content: [{ type: 'text', text: `found: ${query}` }] };
    });
    server.registerTool('broken', { description: 'Reports its own failure', inputSchema: { query: z.string() } }, async () => {
      calls.push('broken');
      return { content: [{ type: 'text', text: 'the index is offline' }], isError: true };
    });
    server.registerTool('secret', { description: 'Not for everyone', inputSchema: { query: z.string() } }, async () => {
      calls.push('secret');
      return { content: [{ type: 'text', text: 'the secret' }] };
    });
    return server;
  };
  kb = { ...(await serveMcpOverHttp(build)), calls };
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { kb: { type: 'http', url: kb.url } }, call_timeout_ms: 2_000 },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await (await fetch(`${tg.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length < 3) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await upstream?.close();
});
afterEach(() => {
  upstream.reset();
  kb.calls.length = 0;
});

/** The tool messages the model read on its second turn. */
const toolMessages = (): Array<{ role: string; tool_call_id: string; content: string }> =>
  (upstream.calls[1]?.body.messages as Array<{ role: string; tool_call_id: string; content: string }>).filter((message) => message.role === 'tool');

describe('agent mode: what the model gets wrong, and what tools answer', () => {
  it('feeds arguments that are not JSON, or break the input schema, back to the model as tool errors', async () => {
    upstream.enqueue(toolTurn([['kb__lookup', '{"query": "pluto"'], ['kb__lookup', '{"query": 42}'], ['kb__lookup', '{"query": "mars"}']]));
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x') }, { headers: AUTO });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const results = toolMessages();
    expect(results.map((message) => message.tool_call_id)).toEqual(['call_0', 'call_1', 'call_2']);
    expect(results[0]?.content).toMatch(/^Error: .*not valid JSON/);
    expect(results[1]?.content).toMatch(/^Error: /);
    expect(results[2]?.content).toBe('found: mars');
    expect(kb.calls).toEqual(['lookup:mars']);
  });

  it("tells the model a tool reported its own failure", async () => {
    upstream.enqueue(toolTurn([['kb__broken', '{"query": "x"}']]));
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x') }, { headers: AUTO });
    expect(toolMessages()[0]?.content).toMatch(/^Error: .*the index is offline/);
  });

  it("refuses a tool the model made up or the key may not use with a tool error, not handing it to a client that never offered it", async () => {
    const narrow = await createKey({ name: 'narrow', mcp: { allow: ['kb__lookup'] } });
    upstream.enqueue(toolTurn([['kb__secret', '{"query": "x"}'], ['kb__nothing', '{}'], ['kb__lookup', '{"query": "venus"}']]));
    const answer = await clientFor(narrow.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x') }, { headers: AUTO });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const results = toolMessages();
    expect(results[0]?.content).toMatch(/^Error: /);
    expect(results[1]?.content).toMatch(/^Error: /);
    // Both refused alike: the key cannot tell a tool it may not use from one that does not exist.
    expect(results[0]?.content.replace('kb__secret', 'X')).toBe(results[1]?.content.replace('kb__nothing', 'X'));
    expect(results[2]?.content).toBe('found: venus');
    expect(kb.calls).toEqual(['lookup:venus']);
  });

  it('runs a streamed turn of parallel calls alike: a made-up one refused, the others run, the final turn streamed', async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
      `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const call = (index: number, name: string, args: string) => chunk({ tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name, arguments: args } }] });
    const body = chunk({ role: 'assistant', content: null }) + call(0, 'kb__made_up', '{}') + call(1, 'kb__lookup', '{"query": "io"}') + chunk({}, 'tool_calls') + 'data: [DONE]\n\n';
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x'), stream: true }, { headers: AUTO });
    let text = '';
    let finish: string | null = null;
    for await (const part of stream) {
      text += part.choices[0]?.delta.content ?? '';
      expect(part.choices[0]?.delta.tool_calls).toBeUndefined();
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('stop');
    expect(text).toContain('found: io');
    expect(toolMessages().map((message) => message.content)).toEqual([expect.stringMatching(/^Error: there is no tool 'kb__made_up'/), 'found: io']);
  });

  it("still hands a turn with a tool call of the client's own back to the client", async () => {
    const own: OpenAI.ChatCompletionTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } };
    upstream.enqueue(toolTurn([['get_weather', '{}'], ['kb__lookup', '{"query": "venus"}']]));
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi('x'), tools: [own] }, { headers: AUTO });
    expect(answer.choices[0]?.finish_reason).toBe('tool_calls');
    expect(answer.choices[0]?.message.tool_calls?.map((call) => (call as OpenAI.ChatCompletionMessageFunctionToolCall).function.name)).toEqual(['get_weather', 'kb__lookup']);
    expect(kb.calls).toEqual([]);
  });
});
