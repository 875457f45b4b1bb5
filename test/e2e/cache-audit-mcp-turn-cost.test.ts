import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { GatewayEvents } from '../../src/core/events.js';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { waitForMcpTools } from '../helpers/mcp-ready.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Each turn of an MCP agent run passes the cache stage on its own, and each is stored as its own answer. The entry of
// the run's last turn was made after the answer had passed the mcp stage, which by then had set the request's spend
// to the whole run's: a later hit on that turn counted every turn's cost as saved. It is what that turn cost.

let upstream: ScriptedUpstream;
let kb: { url: string; close(): Promise<void> };
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  kb = await serveMcpOverHttp(() => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => ({ content: [{ type: 'text', text: `found: ${query}` }] }));
    return server;
  });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { kb: { type: 'http', url: kb.url } } },
    cache: { mode: 'on', semantic: { enabled: false } },
  });
  expect(await waitForMcpTools(tg.url, 'kb')).toBe(true);
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await upstream?.close();
});

describe('the cache under an MCP agent run', () => {
  it("stores each turn with that turn's own cost, so a hit on the last one saves what it cost, not the whole run's", async () => {
    const ask = () =>
      tg.client.chat.completions.create(
        { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'pluto' }] },
        { headers: { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' } },
      );
    const charged: number[] = [];
    let stored = 0;
    const stopCost = tg.gateway.bus.on('cost.recorded', (event) => charged.push(event.usd));
    const stopStored = tg.gateway.bus.on('cache.stored', () => stored++);
    const first = await ask();
    stopCost();
    expect(first.choices[0]?.message.content).toBe('echo: found: pluto');
    expect(upstream.calls).toHaveLength(2);
    expect(charged).toHaveLength(2);
    expect(charged.every((usd) => usd > 0)).toBe(true);
    // Both turns are stored in the background, after the request's end.
    const deadline = Date.now() + 5_000;
    while (stored < 2 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20));
    stopStored();
    expect(stored).toBe(2);
    const hits: Array<GatewayEvents['cache.hit']> = [];
    const stopHits = tg.gateway.bus.on('cache.hit', (event) => hits.push(event));
    const again = await ask();
    stopHits();
    // Both turns answered from the cache: the upstream was not called again.
    expect(upstream.calls).toHaveLength(2);
    expect(again.choices[0]?.message.content).toBe('echo: found: pluto');
    expect(hits.map((hit) => hit.savedUsd)).toEqual(charged);
  });
});
