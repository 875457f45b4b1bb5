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

  it('in agent mode, tollgate runs the call and the client gets the final answer as a Response', async () => {
    const response = await tg.client.responses.create({ model: 'openai/gpt-5', input: 'use the tool for pluto' }, { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } });
    expect(kb.calls).toEqual(['lookup:use the tool for pluto']);
    expect(response.object).toBe('response');
    expect(response.output_text).toContain('found: USE THE TOOL FOR PLUTO');
    expect(response.output.map((item) => item.type)).toEqual(['message']);
  });
});
