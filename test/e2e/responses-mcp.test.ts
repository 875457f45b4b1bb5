// MCP tools offered to a Responses API client's model on OpenAI (native pass-through): the tools of the servers a
// request names reach OpenAI in the client's own Responses body, as Responses function tools, and in agent mode
// tollgate runs the model's call and answers with the final turn as a Response.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let kb: Awaited<ReturnType<typeof serveMcpOverHttp>> & { calls: string[] };
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  const calls: string[] = [];
  const build = (): McpServer => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => {
      calls.push(`lookup:${query}`);
      return { content: [{ type: 'text', text: `found: ${query.toUpperCase()}` }] };
    });
    return server;
  };
  kb = { ...(await serveMcpOverHttp(build)), calls };
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { kb: { type: 'http', url: kb.url } } },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const health = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string; tools: number }> };
    if (health.servers.some((server) => server.name === 'kb' && server.state === 'ready' && server.tools >= 1)) break;
    await new Promise((done) => setTimeout(done, 50));
  }
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

describe('MCP tools and the Responses API on OpenAI', () => {
  it('reach OpenAI in the client’s own body as Responses function tools (client mode)', async () => {
    const response = await tg.client.responses.create({ model: 'openai/gpt-5', input: 'use the tool for pluto' }, { headers: { 'x-tollgate-mcp': 'kb' } });
    const sent = upstream.calls[0];
    expect(sent?.path).toBe('/v1/responses');
    expect(sent?.body.tools).toEqual([{ type: 'function', name: 'kb__lookup', description: 'Looks a topic up', parameters: expect.objectContaining({ type: 'object' }), strict: false }]);
    expect(response.output.find((item) => item.type === 'function_call')).toMatchObject({ name: 'kb__lookup' });
    expect(kb.calls).toEqual([]);
  });

  it('in agent mode, tollgate runs the call and the next turn goes on natively, naming the answer by previous_response_id', async () => {
    const response = await tg.client.responses.create(
      { model: 'openai/gpt-5', input: 'use the tool for pluto', previous_response_id: 'resp_earlier' },
      { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } },
    );
    expect(kb.calls).toEqual(['lookup:use the tool for pluto']);
    expect(upstream.calls.map((call) => call.path)).toEqual(['/v1/responses', '/v1/responses']);
    const first = upstream.responses[0]?.response;
    const call = first?.output.find((item: { type: string }) => item.type === 'function_call');
    // The conversation OpenAI keeps goes on: the first answer by its id, the tool's result as the input.
    expect(upstream.calls[1]?.body).toMatchObject({ previous_response_id: first?.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'found: USE THE TOOL FOR PLUTO' }] });
    expect(response.object).toBe('response');
    expect(response.output_text).toBe('tool said found: USE THE TOOL FOR PLUTO');
  });

  it('in agent mode with store: false and a stream, the next turn carries the answer’s items back itself', async () => {
    const stream = tg.client.responses.stream(
      { model: 'openai/gpt-5', input: 'use the tool for mars', store: false, reasoning: { effort: 'low' }, include: ['reasoning.encrypted_content'] },
      { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } },
    );
    for await (const _event of stream) void _event;
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('tool said found: USE THE TOOL FOR MARS');
    const first = upstream.responses[0]?.response;
    const second = upstream.calls[1]?.body;
    expect(second.previous_response_id).toBeUndefined();
    // The user's turn, the first answer's reasoning (with its encrypted content, which the upstream checks) and call, the result.
    expect(second.input.map((item: { type?: string; role?: string }) => item.type ?? item.role)).toEqual(['user', 'reasoning', 'function_call', 'function_call_output']);
    expect(second.input.slice(1, 3)).toEqual(first?.output);
  });
});
