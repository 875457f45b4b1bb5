// The official OpenAI SDK's Responses API (client.responses.create) -> tollgate /v1/responses: a documented request
// field with a value of the wrong type, out of the range OpenAI's CreateResponse schema states, or outside a fixed list
// of values is OpenAI's 400 (invalid_request_error, `param` naming the field) before any upstream call, whether the
// request would be passed through to OpenAI or translated (here for Claude). Before, such a value was dropped by the
// translation, or left to the upstream, and the request answered 200: a client with a bug never learned its setting
// was ignored. Values OpenAI takes (null for "unset", the ends of each range, values newer than a closed list would
// know) still reach an OpenAI upstream exactly as written, and so do fields tollgate does not know.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const OPENAI_MODEL = 'openai/gpt-5';
const CLAUDE = 'anthropic/claude-sonnet-4-5';

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
    },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await anthropic?.close();
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

type Body = Record<string, unknown>;

/** The request as the SDK sends it, wrong values and all (its types would refuse them at compile time). */
function create(model: string, fields: Body): Promise<unknown> {
  return client.responses.create({ model, input: 'hi', ...fields } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
}

const fn = { type: 'function', name: 'f', parameters: { type: 'object', properties: {} } };

describe('a documented field with a value OpenAI refuses', () => {
  // [fields, the param named, the code]. None of these was refused before on the pass-through to OpenAI.
  it.each<[Body, string, string]>([
    [{ temperature: 'hot' }, 'temperature', 'invalid_type'],
    [{ temperature: 2.5 }, 'temperature', 'invalid_value'],
    [{ temperature: -0.1 }, 'temperature', 'invalid_value'],
    [{ top_p: '0.9' }, 'top_p', 'invalid_type'],
    [{ top_p: 1.01 }, 'top_p', 'invalid_value'],
    [{ top_logprobs: 21 }, 'top_logprobs', 'invalid_value'],
    [{ top_logprobs: -1 }, 'top_logprobs', 'invalid_value'],
    [{ top_logprobs: 1.5 }, 'top_logprobs', 'invalid_type'],
    [{ top_logprobs: '2' }, 'top_logprobs', 'invalid_type'],
    [{ reasoning: 'high' }, 'reasoning', 'invalid_type'],
    [{ reasoning: { effort: 5 } }, 'reasoning.effort', 'invalid_type'],
    [{ reasoning: { effort: 'low', summary: true } }, 'reasoning.summary', 'invalid_type'],
    [{ text: 'json' }, 'text', 'invalid_type'],
    [{ text: { verbosity: 1 } }, 'text.verbosity', 'invalid_type'],
    [{ parallel_tool_calls: 'yes', tools: [fn] }, 'parallel_tool_calls', 'invalid_type'],
    [{ store: 'no' }, 'store', 'invalid_type'],
    [{ background: 'yes' }, 'background', 'invalid_type'],
    [{ truncation: 'sometimes' }, 'truncation', 'invalid_value'],
    [{ truncation: true }, 'truncation', 'invalid_type'],
    [{ service_tier: 1 }, 'service_tier', 'invalid_type'],
    [{ tool_choice: 'any', tools: [fn] }, 'tool_choice', 'invalid_value'],
    [{ tool_choice: 5, tools: [fn] }, 'tool_choice', 'invalid_type'],
    [{ tool_choice: {}, tools: [fn] }, 'tool_choice.type', 'missing_required_parameter'],
    [{ tool_choice: { type: 7 }, tools: [fn] }, 'tool_choice.type', 'invalid_type'],
    [{ tool_choice: { type: 'function' }, tools: [fn] }, 'tool_choice.name', 'missing_required_parameter'],
    [{ tool_choice: { type: 'function', name: ['f'] }, tools: [fn] }, 'tool_choice.name', 'invalid_type'],
    [{ tool_choice: { type: 'allowed_tools', mode: 'any', tools: [{ type: 'function', name: 'f' }] }, tools: [fn] }, 'tool_choice.mode', 'invalid_value'],
    [{ tool_choice: { type: 'allowed_tools', mode: 'auto', tools: 'f' }, tools: [fn] }, 'tool_choice.tools', 'invalid_type'],
    [{ tool_choice: { type: 'mcp' } }, 'tool_choice.server_label', 'missing_required_parameter'],
    [{ tools: [fn, 'f'] }, 'tools[1]', 'invalid_type'],
    [{ include: 'message.output_text.logprobs' }, 'include', 'invalid_type'],
    [{ include: ['message.output_text.logprobs', 5] }, 'include[1]', 'invalid_type'],
    [{ metadata: { ticket: 42 } }, 'metadata.ticket', 'invalid_type'],
    [{ user: 5 }, 'user', 'invalid_type'],
    [{ safety_identifier: 5 }, 'safety_identifier', 'invalid_type'],
    [{ safety_identifier: 'x'.repeat(65) }, 'safety_identifier', 'invalid_value'],
    [{ prompt_cache_key: { key: 'k' } }, 'prompt_cache_key', 'invalid_type'],
  ])('%j is a 400 naming %s, passed through or translated, and no upstream is called', async (fields, param, code) => {
    for (const model of [OPENAI_MODEL, CLAUDE]) {
      const error = await create(model, fields).catch((err: unknown) => err);
      expect(error, model).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error, model).toMatchObject({ status: 400, type: 'invalid_request_error', param, code, message: expect.stringContaining(`'${param}'`) });
    }
    expect(openai.calls).toHaveLength(0);
    expect(anthropic.calls).toHaveLength(0);
  });

  it('is refused streamed too, before the stream begins', async () => {
    const error = await client.responses.create({ model: OPENAI_MODEL, input: 'hi', stream: true, temperature: 'hot' } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, param: 'temperature', code: 'invalid_type' });
    expect(openai.calls).toHaveLength(0);
  });
});

describe('a value OpenAI takes', () => {
  it.each<[Body]>([
    // Null is "unset" for each of these (the schema allows it, and the SDK's types do).
    [{ temperature: null, top_p: null, top_logprobs: null, max_output_tokens: null, reasoning: null, parallel_tool_calls: null, store: null }],
    [{ stream: null, truncation: null, tool_choice: null, include: null, metadata: null, service_tier: null, background: null }],
    [{ instructions: null, previous_response_id: null, safety_identifier: null, prompt_cache_key: null, text: { verbosity: null } }],
    [{ reasoning: { effort: null, summary: null } }],
    // The ends of each range.
    [{ temperature: 0, top_p: 0, top_logprobs: 0 }],
    [{ temperature: 2, top_p: 1, top_logprobs: 20 }],
    [{ temperature: 0.7, top_p: 0.95, max_output_tokens: 16 }],
    [{ safety_identifier: 'x'.repeat(64), prompt_cache_key: 'pc-1', user: 'user-1234' }],
    // Values of lists OpenAI keeps growing pass as strings (the newest levels and tiers at the time of writing).
    [{ reasoning: { effort: 'xhigh', summary: 'detailed' }, include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] }],
    [{ reasoning: { effort: 'minimal', summary: 'concise' }, text: { verbosity: 'high' }, service_tier: 'ultrafast' }],
    [{ truncation: 'auto', store: false, background: false, stream: false, parallel_tool_calls: false, tools: [fn] }],
    [{ truncation: 'disabled', metadata: { ticket: 'T-1', empty: '' }, include: [] }],
    // Every kind of tool_choice: the modes, a function, allowed_tools, a hosted tool, an MCP server's.
    [{ tool_choice: 'none', tools: [fn] }],
    [{ tool_choice: 'required', tools: [fn] }],
    [{ tool_choice: { type: 'function', name: 'f' }, tools: [fn] }],
    [{ tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'f' }] }, tools: [fn] }],
    [{ tool_choice: { type: 'web_search_preview' } }],
    [{ tool_choice: { type: 'mcp', server_label: 'deepwiki', name: null } }],
    // Fields inside a checked object that tollgate does not know travel too.
    [{ reasoning: { effort: 'low', some_future_knob: 3 }, text: { verbosity: 'low', format: { type: 'text' } } }],
  ])('%j reaches an OpenAI upstream unchanged', async (fields) => {
    const response = await create(OPENAI_MODEL, fields);
    expect(response).toMatchObject({ object: 'response' });
    expect(openai.calls).toHaveLength(1);
    expect(openai.calls[0]?.body).toEqual({ model: 'gpt-5', input: 'hi', ...fields });
  });

  it('a field tollgate does not know reaches OpenAI unchanged (and its refusal comes back)', async () => {
    const error = await create(OPENAI_MODEL, { bogus_field: { nested: [1, 'two'] }, temperature: 1 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("Unknown parameter: 'bogus_field'.");
    expect(openai.calls[0]?.body).toEqual({ model: 'gpt-5', input: 'hi', bogus_field: { nested: [1, 'two'] }, temperature: 1 });
  });

  it('translated, a valid value is taken and travels (null as unset)', async () => {
    const response = await create(CLAUDE, { temperature: 0, top_p: 1, parallel_tool_calls: null, store: null, truncation: 'auto', metadata: { ticket: 'T-1' }, reasoning: null });
    expect(response).toMatchObject({ object: 'response', status: 'completed' });
    expect(anthropic.calls).toHaveLength(1);
    expect(anthropic.calls[0]?.body).toMatchObject({ temperature: 0, top_p: 1 });
  });
});
