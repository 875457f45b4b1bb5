// Anthropic SDK -> tollgate /anthropic -> Anthropic: what the canonical (OpenAI-shaped) request cannot express
// (server tools, their blocks sent back, images by file id in tool results) still reaches an Anthropic upstream unchanged,
// and its answer reaches the client unchanged. Only an attempt that would have to translate fails, with the 400
// naming what cannot be translated, and malformed requests are refused before any upstream call.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';
import { WEB_SEARCH_TOOL, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import type { ScriptedUpstream } from '../upstream/openai-upstream.js';

const MODEL = 'anthropic/claude-sonnet-4-5';
const UPSTREAM_MODEL = 'claude-sonnet-4-5';
const OPENAI_MODEL = 'openai/gpt-4o-mini';

let rig: AnthropicRig;
let upstream: AnthropicUpstream;
let openai: ScriptedUpstream;
let client: Anthropic;

beforeAll(async () => {
  rig = await startAnthropicRig({ routes: { mixed: { targets: [{ model: OPENAI_MODEL, weight: 1 }, { model: MODEL, weight: 1 }] } } });
  ({ upstream, openai, client } = rig);
});
afterAll(() => rig?.stop());
beforeEach(() => rig.reset());

const lastCall = (): ReturnType<AnthropicRig['lastCall']> => rig.lastCall();
const lastSent = (): ReturnType<AnthropicRig['lastSent']> => rig.lastSent();
const post = (body: Record<string, unknown>): Promise<Response> => rig.post(body);

const webSearch = { type: WEB_SEARCH_TOOL, name: 'web_search', max_uses: 3 } as const;
const weather: Anthropic.Tool = { name: 'weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { query: { type: 'string' } } } };
const SEARCH_TOOL_ERROR = `tools.0.type: The server tool '${WEB_SEARCH_TOOL}' cannot be translated by the gateway; only client tools are supported.`;

function searchRequest(model: string): Anthropic.MessageCreateParamsNonStreaming {
  return { model, max_tokens: 300, tools: [webSearch], messages: [{ role: 'user', content: 'search the web for tollgate' }] };
}

/** A tool round trip whose result holds an image (by default one uploaded to Anthropic's Files API, which only Anthropic can read). */
function imageResultRequest(model: string, source: Record<string, unknown> = { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' }): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model,
    max_tokens: 300,
    tools: [weather],
    messages: [
      { role: 'user', content: 'use the tool' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { query: 'Paris' } }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [
              { type: 'text', text: 'radar map' },
              { type: 'image', source } as unknown as Anthropic.ImageBlockParam,
            ],
          },
        ],
      },
    ],
  };
}

async function badRequest(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.BadRequestError>> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(Anthropic.BadRequestError);
  return error as InstanceType<typeof Anthropic.BadRequestError>;
}

describe('server tools to Anthropic', () => {
  it('sends a web search request unchanged and returns the server tool blocks and usage unchanged', async () => {
    const params = searchRequest(MODEL);
    const message = await client.messages.create(params);
    expect(lastCall().body).toEqual({ ...params, model: UPSTREAM_MODEL });
    const sent = lastSent().message;
    expect(sent.content.map((block: { type: string }) => block.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    expect(message).toEqual({ ...sent, model: MODEL });
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    expect(openai.calls).toHaveLength(0);
  });

  it('streams the same answer: the frames come through unchanged but for the model name', async () => {
    const params = { ...searchRequest(MODEL), stream: true };
    const response = await post(params);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(lastCall().body).toEqual({ ...params, model: UPSTREAM_MODEL });
    const frames = lastSent().frames;
    if (!frames) throw new Error('the upstream did not stream');
    const expected = frames.join('').replace(`"model":"${UPSTREAM_MODEL}"`, `"model":"${MODEL}"`);
    expect(text).toBe(expected);
    expect(text).toContain('"type":"server_tool_use"');
    expect(text).toContain('"type":"web_search_tool_result"');
    expect(text).toContain('"server_tool_use":{"web_search_requests":1}');

    // The SDK assembles the same message from the stream.
    const streamed = await client.messages.stream(searchRequest(MODEL)).finalMessage();
    const sent = lastSent().message;
    expect(streamed.content).toEqual(sent.content);
    expect(streamed.usage.server_tool_use).toEqual({ web_search_requests: 1 });
  });

  it('takes the server tool blocks back in the next turn', async () => {
    const first = await client.messages.create(searchRequest(MODEL));
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: MODEL,
      max_tokens: 300,
      tools: [webSearch],
      messages: [
        { role: 'user', content: 'search the web for tollgate' },
        { role: 'assistant', content: first.content as unknown as Anthropic.ContentBlockParam[] },
        { role: 'user', content: 'thanks, and the second result?' },
      ],
    };
    const second = await client.messages.create(params);
    expect(lastCall().body).toEqual({ ...params, model: UPSTREAM_MODEL });
    expect(second.content).toEqual(lastSent().message.content);
  });

  it('sends an image inside a tool result to Anthropic', async () => {
    const params = imageResultRequest(MODEL, { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' });
    const message = await client.messages.create(params);
    expect(lastCall().body).toEqual({ ...params, model: UPSTREAM_MODEL });
    expect(message.content).toEqual(lastSent().message.content);
  });

  it('on a route mixing formats, passes over the target that would have to translate', async () => {
    for (let i = 0; i < 4; i++) {
      const response = await post({ ...searchRequest('mixed') });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-tollgate-provider')).toBe('anthropic');
      expect(((await response.json()) as { content: Array<{ type: string }> }).content[0]?.type).toBe('server_tool_use');
    }
    expect(upstream.calls).toHaveLength(4);
    expect(openai.calls).toHaveLength(0);
  });

  it('leaves a target that would have to translate out of the plan: the Anthropic target is retried, the fallback never called', async () => {
    upstream.enqueue({ kind: 'error', status: 529 });
    const response = await post({ ...searchRequest(MODEL), fallbacks: [OPENAI_MODEL] });
    expect(response.status).toBe(200);
    expect(upstream.calls).toHaveLength(2);
    expect(openai.calls).toHaveLength(0);
    // When it fails every time, Anthropic's own error comes back (not a failover, not the translation's 400).
    upstream.reset();
    upstream.enqueue({ kind: 'error', status: 529 }, { kind: 'error', status: 529 }, { kind: 'error', status: 529 });
    const failed = await post({ ...searchRequest(MODEL), fallbacks: [OPENAI_MODEL] });
    expect(failed.status).toBe(529);
    expect(((await failed.json()) as { error: { type: string } }).error.type).toBe('overloaded_error');
    expect(openai.calls).toHaveLength(0);
  });
});

describe('what another format cannot take', () => {
  it('refuses a server tool for an OpenAI model with the 400 naming it, without calling the upstream', async () => {
    const error = await badRequest(client.messages.create(searchRequest(OPENAI_MODEL)));
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: SEARCH_TOOL_ERROR } });
    expect(openai.calls).toHaveLength(0);
    expect(upstream.calls).toHaveLength(0);
  });

  it('refuses an image by file id in a tool result for an OpenAI model, streamed too', async () => {
    const message = "messages.2.content.0.content.1.source: An image source of type 'file' (only base64 and url are) cannot be translated by the gateway.";
    const error = await badRequest(client.messages.create(imageResultRequest(OPENAI_MODEL)));
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message } });
    const streamed = await post({ ...imageResultRequest(OPENAI_MODEL), stream: true });
    expect(streamed.status).toBe(400);
    expect(await streamed.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message } });
    expect(openai.calls).toHaveLength(0);
  });

  it('refuses the MCP connector (mcp_servers) for an OpenAI model instead of answering without its tools', async () => {
    // Anthropic's API connects to these servers and runs their tools itself (its deprecated mcp-client-2025-04-04
    // form has no tool entry for them): an OpenAI model answering without them would answer another question.
    const mcp = { type: 'url', url: 'https://mcp.example.com/sse', name: 'tickets' };
    const body = { model: OPENAI_MODEL, max_tokens: 100, mcp_servers: [mcp], messages: [{ role: 'user', content: 'list my open tickets' }] };
    const response = await post(body);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'mcp_servers: The MCP connector (mcp_servers) runs inside Anthropic\'s API and cannot be translated by the gateway.' },
    });
    expect(openai.calls).toHaveLength(0);
    // On a route mixing formats, the Anthropic target takes it as written.
    for (let i = 0; i < 3; i++) expect((await post({ ...body, model: 'mixed' })).status).toBe(200);
    expect(openai.calls).toHaveLength(0);
    expect(lastCall().body.mcp_servers).toEqual([mcp]);
  });

  it('refuses server tool blocks sent back to an OpenAI model', async () => {
    const response = await post({
      model: OPENAI_MODEL,
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'search' },
        { role: 'assistant', content: [{ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } }] },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toBe("messages.1.content.0.type: An assistant content block of type 'server_tool_use' cannot be translated by the gateway.");
    expect(openai.calls).toHaveLength(0);
    expect(upstream.calls).toHaveLength(0);
  });
});

describe('malformed requests', () => {
  it('are still refused before any upstream call, server tools or not', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: MODEL, max_tokens: 10, tools: [webSearch] }, 'messages: Field required'],
      [{ max_tokens: 10, tools: [webSearch], messages: [{ role: 'user', content: 'x' }] }, 'model: Field required'],
      [{ model: 7, max_tokens: 10, tools: [webSearch], messages: [{ role: 'user', content: 'x' }] }, 'model: Input should be a valid string'],
      [{ model: MODEL, max_tokens: 10, tools: [webSearch], messages: [{ role: 'system', content: 'x' }] }, "messages.0.role: Input should be 'user' or 'assistant'"],
      [{ model: MODEL, max_tokens: 10, tools: [webSearch], messages: [{ role: 'user', content: 7 }] }, 'messages.0.content: Input should be a valid string or list'],
      [{ model: MODEL, max_tokens: 10, tools: [webSearch, { name: '' }], messages: [{ role: 'user', content: 'x' }] }, 'tools.1.name: Field required'],
      [{ model: MODEL, max_tokens: 10, tools: [webSearch], tool_choice: { type: 'sometimes' }, messages: [{ role: 'user', content: 'x' }] }, "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"],
    ];
    for (const [body, message] of cases) {
      const response = await post(body);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message } });
    }
    expect(upstream.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(0);
  });
});
