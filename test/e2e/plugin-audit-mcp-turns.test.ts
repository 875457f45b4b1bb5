import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { waitForMcpTools } from '../helpers/mcp-ready.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A plugin placed inside the `mcp` stage (the default place, just before `call`) runs on every turn of an agent run,
 * as the README says each turn runs the inner stages "like a request of its own". Each turn's request was built from
 * the one the turn before had left after those stages, so a plugin's change was made again on top of itself: a
 * system note the plugin adds reached the provider twice on the second turn (three times on the third), in the
 * canonical request and in the client's own Anthropic body alike.
 */

const examples = resolve(import.meta.dirname, '../../plugins/examples');
const NOTE = 'Answer in one sentence.';

let openai: ScriptedUpstream;
let claude: AnthropicUpstream;
let kb: { url: string; close(): Promise<void> };
let tg: RunningGateway;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-mcp-'));
  // Written as the README's skeleton: a request-side change, then next().
  writeFileSync(
    join(dir, 'note.mjs'),
    `export default {
      name: 'note',
      create: (options) => ({
        name: 'note',
        run(ctx, next) {
          if (ctx.operation === 'chat') ctx.request.messages = [{ role: 'system', content: options.text }, ...ctx.request.messages];
          return next();
        },
      }),
    };`,
  );
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  claude = await startAnthropicUpstream({ apiKey: 'sk-ant-key' });
  kb = await serveMcpOverHttp(() => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => ({
      // Not the request's words back: the scripted Claude calls a tool again when the last message says "call <tool>".
      content: [{ type: 'text', text: `found: ${query.replace('call kb__lookup for ', '')}` }],
    }));
    return server;
  });
  tg = await startGateway({
    providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' }, anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-key' } },
    mcp: { servers: { kb: { type: 'http', url: kb.url } } },
    routes: {
      plain: { targets: [{ model: 'openai/gpt-4o-mini' }], plugins: ['note'] },
      claude: { targets: [{ model: 'anthropic/claude-sonnet-4-5' }], plugins: ['team-prompt'] },
    },
    plugins: [
      // The note names no placement, so it goes just before `call`; the example's own `after: auth` is overridden.
      { name: 'note', path: join(dir, 'note.mjs'), options: { text: NOTE }, apply: 'listed' },
      { name: 'team-prompt', path: `${examples}/team-system-prompt.ts`, options: { default: NOTE }, placement: { before: 'call' }, apply: 'listed' },
    ],
  } as never);
  expect(await waitForMcpTools(tg.url, 'kb')).toBe(true);
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await openai?.close();
  await claude?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  openai.reset();
  claude.reset();
});

const agent = { 'x-tollgate-mcp': 'kb', 'x-tollgate-mcp-mode': 'auto' };

describe('a plugin inside the mcp stage, over an agent run', () => {
  it('makes its change once on each turn of /v1 chat, not once more for every turn before', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'pluto' }] }, { headers: agent });
    expect(answer.choices[0]?.message.content).toBe('echo: found: pluto');
    // Two turns: the tool call, then the answer from its result.
    expect(openai.calls).toHaveLength(2);
    const notes = openai.calls.map((call) => (call.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === 'system' && m.content === NOTE).length);
    expect(notes).toEqual([1, 1]);
    const second = openai.calls[1]?.body.messages as Array<{ role: string }>;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  });

  it("keeps the client's own Anthropic body to one system prompt on every turn (native pass-through)", async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'x', maxRetries: 0, defaultHeaders: agent });
    const answer = await client.messages.create({ model: 'claude', max_tokens: 200, messages: [{ role: 'user', content: 'call kb__lookup for pluto' }] });
    expect(answer.type).toBe('message');
    const turns = claude.calls.filter((call) => call.path.endsWith('/messages'));
    expect(turns).toHaveLength(2);
    // The example keeps the client's body in step (its prompt goes in `system`), so every turn goes upstream as
    // Anthropic's own body: each with the prompt once, whatever the turns before it got.
    for (const turn of turns) expect(JSON.stringify(turn.body.system).split(NOTE).length - 1).toBe(1);
  });
});
