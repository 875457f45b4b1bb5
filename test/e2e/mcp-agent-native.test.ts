import Anthropic from '@anthropic-ai/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, thinkingSignature, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An agent run on /anthropic to an Anthropic upstream whose last turn is the client's: the answer must be Claude's
// own (signed thinking and all), or the client cannot go on. The scripted upstream calls a tool a message names
// ("call <tool>"), and refuses a thinking block whose signature is not the one it gave (as Anthropic does).

let claude: AnthropicUpstream;
let geo: { url: string; close(): Promise<void> };
let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  claude = await startAnthropicUpstream({ apiKey: 'sk-ant-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  geo = await serveMcpOverHttp(() => {
    const server = new McpServer({ name: 'geo', version: '1.0.0' });
    server.registerTool('locate', { description: 'Where a place is', inputSchema: { query: z.string() } }, async () => ({
      content: [{ type: 'text', text: 'oslo is at 59.9N; now call get_weather' }],
    }));
    return server;
  });
  tg = await startGateway({
    providers: { anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-key' }, openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { geo: { type: 'http', url: geo.url } } },
    routes: { mixed: { targets: [{ model: 'anthropic/claude-sonnet-4-5' }], fallbacks: ['openai/gpt-4o-mini'] } },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && !((await (await fetch(`${tg.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  await geo?.close();
  await claude?.close();
  await openai?.close();
});
afterEach(() => {
  claude.reset();
  openai.reset();
});

/** A first turn that says something, then calls the MCP tool, as Claude streams it. */
function textThenCall(): string {
  const frame = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const usage = { input_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
  return [
    frame('message_start', { message: { id: 'msg_first', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage } }),
    frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    frame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Let me look. ' } }),
    frame('content_block_stop', { index: 0 }),
    frame('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_first', name: 'geo__locate', input: {} } }),
    frame('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"query":"oslo"}' } }),
    frame('content_block_stop', { index: 1 }),
    frame('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 12 } }),
    frame('message_stop', {}),
  ].join('');
}

const params = {
  model: 'anthropic/claude-sonnet-4-5',
  max_tokens: 2000,
  thinking: { type: 'enabled' as const, budget_tokens: 1024 },
  tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } } }],
  messages: [{ role: 'user' as const, content: 'call geo__locate for oslo' }],
};

/** Every turn's usage added up, as the run's client is to get it. */
function runUsage(): Record<string, number> {
  const turns = claude.sent.map((answer) => answer.message.usage as Record<string, number>);
  expect(turns).toHaveLength(2);
  const sum = (field: string): number => turns.reduce((total, usage) => total + (usage[field] ?? 0), 0);
  return { input_tokens: sum('input_tokens'), output_tokens: sum('output_tokens'), cache_read_input_tokens: sum('cache_read_input_tokens'), cache_creation_input_tokens: sum('cache_creation_input_tokens') };
}

describe("MCP agent mode: the last turn as Claude wrote it", () => {
  const anthropic = (): Anthropic =>
    new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: { 'x-tollgate-mcp': 'geo', 'x-tollgate-mcp-mode': 'auto' } });

  /** The run's answer is the upstream's second message, signed thinking and all; the client's follow-up is accepted. */
  async function check(message: Anthropic.Message): Promise<void> {
    expect(claude.calls).toHaveLength(2);
    const final = claude.sent[1]?.message as { id: string; content: Array<Record<string, unknown>> };
    expect(message.id).toBe(final.id);
    expect(message.model).toBe(params.model);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual(final.content);
    const thinking = message.content[0] as Anthropic.ThinkingBlock;
    expect(thinking).toMatchObject({ type: 'thinking', signature: thinkingSignature(thinking.thinking) });
    expect(message.usage).toMatchObject(runUsage());
    const call = message.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(call.name).toBe('get_weather');
    // Anthropic wants the tool-use turn's signed thinking back, unchanged, with the tool's result.
    claude.reset();
    const followUp = await anthropic().messages.create({
      ...params,
      messages: [...params.messages, { role: 'assistant', content: message.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }],
    });
    expect(followUp.stop_reason).toBe('end_turn');
    expect(claude.calls).toHaveLength(1);
  }

  it('gives the client the last turn of a two-turn run as the upstream wrote it, with the run\'s usage, so its follow-up is accepted', async () => {
    await check(await anthropic().messages.create(params));
  });

  it('streams the last turn of a two-turn run as the upstream streamed it, the run\'s usage in message_start and message_delta', async () => {
    const stream = anthropic().messages.stream(params);
    const events: Anthropic.MessageStreamEvent[] = [];
    stream.on('streamEvent', (event) => events.push(event));
    const message = await stream.finalMessage();
    expect(events.filter((event) => event.type === 'message_start')).toHaveLength(1);
    const start = events.find((event) => event.type === 'message_start') as Anthropic.RawMessageStartEvent;
    expect(start.message.usage.input_tokens).toBe(runUsage().input_tokens);
    // The signature came as Claude sends it, in a signature_delta.
    expect(events).toContainEqual(expect.objectContaining({ type: 'content_block_delta', delta: expect.objectContaining({ type: 'signature_delta' }) }));
    expect(JSON.stringify(events)).not.toContain('geo__locate');
    await check(message);
  });

  it('continues the message a turn began streaming when that turn then calls an MCP tool: its text, then the next turn\'s blocks', async () => {
    claude.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: textThenCall() });
    const { thinking: _thinking, tools: _tools, ...plain } = params;
    const stream = anthropic().messages.stream({ ...plain, messages: [{ role: 'user', content: 'where is oslo' }] });
    const events: Anthropic.MessageStreamEvent[] = [];
    stream.on('streamEvent', (event) => events.push(event));
    const message = await stream.finalMessage();
    expect(claude.calls).toHaveLength(2);
    expect(message.content.map((block) => block.type)).toEqual(['text', 'text']);
    expect(message.content.map((block) => (block.type === 'text' ? block.text : ''))).toEqual(['Let me look. ', expect.stringContaining('oslo is at 59.9N')]);
    expect(events.filter((event) => event.type === 'message_start')).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain('geo__locate');
    const second = claude.sent[0]?.message.usage as { input_tokens: number; output_tokens: number };
    expect(message.usage).toMatchObject({ input_tokens: 30 + second.input_tokens, output_tokens: 12 + second.output_tokens });
  });

  it('fails the stream saying why when a later turn is answered in another format (a fallback) than the one the client is reading', async () => {
    claude.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: textThenCall() }, ...Array.from({ length: 4 }, () => ({ kind: 'error' as const, status: 500 })));
    const { thinking: _thinking, tools: _tools, ...plain } = params;
    const stream = anthropic().messages.stream({ ...plain, model: 'mixed', messages: [{ role: 'user', content: 'where is oslo' }] });
    const failure = await stream.finalMessage().catch((err: unknown) => err);
    expect(String(failure)).toMatch(/another format/);
    expect(openai.calls).toHaveLength(1);
  });
});
