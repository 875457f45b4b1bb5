import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Agent mode ran all of a turn's MCP tool calls at once: a model that asked for 40 in one turn sent the server 40
// calls in one burst. They now run 8 at a time, every one still answered, in the order the model asked.

const CALLS = 40;
const AUTO = { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' };

let upstream: ScriptedUpstream;
let kb: { url: string; close(): Promise<void> };
let tg: RunningGateway;
let running = 0;
let most = 0;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  const build = (): McpServer => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('slow', { description: 'Answers after a moment', inputSchema: { n: z.number() } }, async ({ n }) => {
      running++;
      most = Math.max(most, running);
      await new Promise((done) => setTimeout(done, 30));
      running--;
      return { content: [{ type: 'text', text: `done ${n}` }] };
    });
    return server;
  };
  kb = await serveMcpOverHttp(build);
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { kb: { type: 'http', url: kb.url } }, call_timeout_ms: 10_000 },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await (await fetch(`${tg.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length < 1) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await upstream?.close();
});

describe("agent mode, a turn with many tool calls", () => {
  it('runs them a few at a time, and answers every one in order', async () => {
    const body = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: Array.from({ length: CALLS }, (_, i) => ({ id: `call_${i}`, type: 'function', function: { name: 'kb__slow', arguments: JSON.stringify({ n: i }) } })) },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
    };
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { headers: AUTO });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const results = (upstream.calls[1]?.body.messages as Array<{ role: string; tool_call_id: string; content: string }>).filter((message) => message.role === 'tool');
    expect(results.map((message) => message.tool_call_id)).toEqual(Array.from({ length: CALLS }, (_, i) => `call_${i}`));
    expect(results.map((message) => message.content)).toEqual(Array.from({ length: CALLS }, (_, i) => `done ${i}`));
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(8);
  });
});
