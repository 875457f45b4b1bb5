import Anthropic from '@anthropic-ai/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

// MCP servers written in any language publish input schemas with `anyOf` / `oneOf` / `allOf` at the top ("exactly
// one of paths or scopes"): MCP allows it, model APIs do not. OpenAI answers 400 "schema must have type 'object' and
// not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level", Anthropic 400 "input_schema does not support
// oneOf, allOf, or anyOf at the top level": one such tool fails every request it is offered to.

const SCHEMAS: Record<string, Record<string, unknown>> = {
  // Any of two fields must be given.
  coverage: {
    type: 'object',
    properties: { project: { type: 'string' }, paths: { type: 'array', items: { type: 'string' } }, scopes: { type: 'array', items: { type: 'string' } } },
    required: ['project'],
    anyOf: [{ required: ['paths'] }, { required: ['scopes'] }],
  },
  // One of two shapes, each with a field of its own.
  move: {
    type: 'object',
    properties: { target: { type: 'string' } },
    oneOf: [
      { properties: { path: { type: 'string', description: 'a file path' } }, required: ['path'] },
      { properties: { url: { type: 'string' } }, required: ['url'] },
    ],
  },
  // Composed of parts, each required.
  tag: {
    type: 'object',
    allOf: [
      { properties: { id: { type: 'string' } }, required: ['id'] },
      { properties: { label: { type: 'string' } }, required: ['label'] },
    ],
  },
};

/** An MCP server publishing the schemas above as they are (the SDK's McpServer only writes plain object schemas). */
async function startFiles(): Promise<{ url: string; calls: Array<{ name: string; arguments: unknown }>; close(): Promise<void> }> {
  const calls: Array<{ name: string; arguments: unknown }> = [];
  const build = (): McpServer => {
    const mcp = new McpServer({ name: 'files', version: '1.0.0' });
    mcp.server.registerCapabilities({ tools: {} });
    mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: Object.entries(SCHEMAS).map(([name, inputSchema]) => ({ name, description: `The ${name} tool`, inputSchema: inputSchema as never })),
    }));
    mcp.server.setRequestHandler(CallToolRequestSchema, (request) => {
      calls.push({ name: request.params.name, arguments: request.params.arguments });
      return { content: [{ type: 'text', text: `${request.params.name} done` }] };
    });
    return mcp;
  };
  return { ...(await serveMcpOverHttp(build)), calls };
}

let upstream: ScriptedUpstream;
let claude: AnthropicUpstream;
let files: Awaited<ReturnType<typeof startFiles>>;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  claude = await startAnthropicUpstream({ apiKey: 'sk-ant-key' });
  files = await startFiles();
  tg = await startGateway({
    providers: {
      openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
      anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-key' },
    },
    mcp: { servers: { files: { type: 'http', url: files.url } } },
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
  await files?.close();
  await upstream?.close();
  await claude?.close();
});
afterEach(() => {
  upstream.reset();
  claude.reset();
  files.calls.length = 0;
});

const TOP_LEVEL_REFUSED = ['oneOf', 'anyOf', 'allOf', 'enum', 'not'];

describe('MCP tool schemas offered to models', () => {
  it('offers a schema with a top-level anyOf, oneOf or allOf to an OpenAI model as a plain object schema, the fields of every variant kept', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { headers: { 'x-tollgate-mcp': 'files' } });
    expect(answer.choices[0]?.finish_reason).toBe('tool_calls');
    const offered = new Map((upstream.calls[0]?.body.tools as Array<{ function: { name: string; parameters: Record<string, any> } }>).map((tool) => [tool.function.name, tool.function.parameters]));
    for (const parameters of offered.values()) {
      expect(parameters.type).toBe('object');
      for (const key of TOP_LEVEL_REFUSED) expect(parameters).not.toHaveProperty(key);
    }
    expect(offered.get('files__coverage')).toEqual({ type: 'object', properties: SCHEMAS.coverage?.properties, required: ['project'] });
    // A variant's own field is offered, not required (the model may pick either shape), described as the server did.
    expect(offered.get('files__move')).toEqual({ type: 'object', properties: { target: { type: 'string' }, path: { type: 'string', description: 'a file path' }, url: { type: 'string' } } });
    // What every part of an allOf requires is required.
    expect(offered.get('files__tag')).toEqual({ type: 'object', properties: { id: { type: 'string' }, label: { type: 'string' } }, required: ['id', 'label'] });
  });

  it("offers them to an Anthropic model too, and the model's call reaches the server with its arguments as written", async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, defaultHeaders: { 'x-tollgate-mcp': 'files', 'x-tollgate-mcp-mode': 'auto' } });
    const message = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'use the tool for venus' }] });
    expect(message.stop_reason).toBe('end_turn');
    const offered = claude.calls[0]?.body.tools as Array<{ name: string; input_schema: Record<string, unknown> }>;
    expect(offered.map((tool) => tool.name)).toEqual(['files__coverage', 'files__move', 'files__tag']);
    for (const tool of offered) for (const key of TOP_LEVEL_REFUSED) expect(tool.input_schema).not.toHaveProperty(key);
    // The server validates against its own schema: it gets the call as the model made it.
    expect(files.calls).toHaveLength(1);
    expect(files.calls[0]?.name).toBe('coverage');
  });

  it('lists the schemas to MCP clients and in /api/mcp as their server gave them', async () => {
    const view = (await (await fetch(`${tg.url}/api/mcp/tools`)).json()) as { tools: Array<{ tool: string; input_schema: unknown }> };
    for (const tool of view.tools) expect(tool.input_schema).toEqual(SCHEMAS[tool.tool]);
  });
});
