// The official OpenAI SDK's Responses API against providers that do not serve it: tollgate translates the request
// into each provider's own format (through the canonical chat request) and renders the answer back as a Response,
// or as the documented event stream, which the SDK's own stream parser checks (it raises on a malformed sequence).
// What needs the provider's own state (built-in tools, a previous_response_id tollgate did not keep) is refused with a 400 before any call.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { ownNow } from '../helpers/own-time.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
const GEMINI = 'gemini/gemini-2.5-flash';
const BEDROCK = 'bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0';
const COHERE = 'cohere/command-a-03-2025';

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let bedrock: BedrockUpstream;
let cohere: CohereUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', apiKey: 'ABSKQmVkcm9ja0FQSUtleS10ZXN0' });
  cohere = await startCohereUpstream({ apiKey: 'co-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      bedrock: { base_url: bedrock.url, api_key: 'ABSKQmVkcm9ja0FQSUtleS10ZXN0', region: 'eu-west-1' },
      cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      // A vendor of OpenAI's chat format that does not serve the Responses API: it gets chat completions.
      deepseek: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
    routes: { 'gpt-then-claude': { targets: [{ model: 'openai/error-503' }], fallbacks: [CLAUDE] } },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await gemini?.close();
  await bedrock?.close();
  await cohere?.close();
  await openai?.close();
});
beforeEach(() => {
  anthropic.reset();
  gemini.reset();
  bedrock.reset();
  cohere.reset();
  openai.reset();
});

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { query: { type: 'string' }, units: { type: 'string' } }, required: ['query'] },
  strict: false,
};

/** The request log entry of one request, once written. */
async function logOf(id: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as Record<string, any>;
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A stream read through the SDK's own parser: its events' types in order, and the final Response. */
async function streamed(params: OpenAI.Responses.ResponseCreateParamsStreaming): Promise<{ types: string[]; final: OpenAI.Responses.Response; events: any[] }> {
  const stream = client.responses.stream(params);
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  const sequence = events.map((event) => event.sequence_number);
  expect(sequence).toEqual(sequence.map((_, i) => i));
  return { types: events.map((event) => event.type), final, events };
}

/** The second turn of a function-calling loop: the first turn's output and the tool's result. */
function nextTurn(first: OpenAI.Responses.Response, question: string, result: string): OpenAI.Responses.ResponseInput {
  const call = first.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
  if (!call) throw new Error('no function call in the first turn');
  // Another model's reasoning item goes back too, as the Agents SDK sends every item: it is dropped, not translated.
  const reasoning: OpenAI.Responses.ResponseReasoningItem = { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAAAopaque' };
  return [{ role: 'user', content: question }, reasoning, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: result }];
}

describe.each([
  ['Anthropic', CLAUDE, () => anthropic.calls.at(-1), '/v1/messages'],
  ['Gemini', GEMINI, () => gemini.calls.at(-1), ':generateContent'],
  ['Bedrock', BEDROCK, () => bedrock.calls.at(-1), '/converse'],
  ['Cohere', COHERE, () => cohere.calls.at(-1), '/v2/chat'],
])('to %s', (_name, model, lastCall, path) => {
  it('a function-calling loop, whole: the call with its call_id, then the answer to its result', async () => {
    const question = 'use the tool for Paris';
    const first = await client.responses.create({ model, instructions: 'Be brief.', input: question, tools: [weather], max_output_tokens: 400 });
    expect(first).toMatchObject({ object: 'response', model, status: 'completed', instructions: 'Be brief.', error: null, incomplete_details: null });
    expect(first.id).toMatch(/^resp_/);
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'weather' });
    expect(call.call_id).toBeTruthy();
    expect(JSON.parse(call.arguments)).toMatchObject({ query: question });
    expect(String(lastCall()?.path)).toContain(path);
    expect(first.usage?.input_tokens).toBeGreaterThan(0);
    expect(first.usage?.output_tokens).toBeGreaterThan(0);
    const log = await logOf(first._request_id ?? '');
    expect(log).toMatchObject({ prompt_tokens: first.usage?.input_tokens, completion_tokens: first.usage?.output_tokens });

    const second = await client.responses.create({ model, input: nextTurn(first, question, '21C and sunny'), tools: [weather] });
    expect(second.status).toBe('completed');
    expect(second.output_text).toContain('21C and sunny');
    expect(second.output.map((item) => item.type)).toEqual(['message']);
  });

  it('a function-calling loop, streamed through the SDK’s parser, in the documented event order', async () => {
    const question = 'use the tool for Oslo';
    const first = await streamed({ model, input: question, tools: [weather], stream: true });
    expect(first.types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(first.types.at(-1)).toBe('response.completed');
    expect(first.types).toContain('response.function_call_arguments.delta');
    expect(first.types.filter((type) => type.endsWith('.done')).slice(-2)).toEqual(['response.function_call_arguments.done', 'response.output_item.done']);
    const call = first.final.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(JSON.parse(call.arguments)).toMatchObject({ query: question });
    expect(first.final.usage?.output_tokens).toBeGreaterThan(0);

    const second = await streamed({ model, input: nextTurn(first.final, question, '3C and snow'), tools: [weather], stream: true });
    expect(second.types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...second.types.filter((type) => type === 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(second.final.output_text).toContain('3C and snow');
    const done = second.events.find((event) => event.type === 'response.output_text.done');
    expect(done.text).toBe(second.final.output_text);
    expect(second.final.usage?.input_tokens).toBeGreaterThan(0);
  });

  it('a previous_response_id tollgate did not keep is OpenAI\'s 400 previous_response_not_found before any upstream call', async () => {
    const error = await client.responses.create({ model, input: 'hi', previous_response_id: 'resp_123' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('previous_response_id');
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('previous_response_not_found');
    expect((error as Error).message).toContain("Previous response with id 'resp_123' not found.");
    expect(lastCall()).toBeUndefined();
  });
});

describe('what cannot be translated', () => {
  it('a built-in tool is refused with a 400 naming it', async () => {
    const error = await client.responses.create({ model: CLAUDE, input: 'find it', tools: [{ type: 'web_search' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("'web_search'");
    expect(anthropic.calls).toHaveLength(0);
  });

  it('a tool_choice of allowed_tools offers the model those tools alone, in its mode', async () => {
    const clock: OpenAI.Responses.FunctionTool = { type: 'function', name: 'clock', parameters: { type: 'object', properties: {} }, strict: false };
    const tool_choice: OpenAI.Responses.ToolChoiceAllowed = { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'weather' }] };
    const response = await client.responses.create({ model: CLAUDE, input: 'use the tool for Rome', tools: [clock, weather], tool_choice });
    expect(response.output.map((item) => item.type)).toEqual(['function_call']);
    expect(anthropic.calls.at(-1)?.body).toMatchObject({ tools: [{ name: 'weather' }], tool_choice: { type: 'any' } });
    expect(anthropic.calls.at(-1)?.body.tools).toHaveLength(1);
    const auto = await client.responses.create({ model: GEMINI, input: 'hello', tools: [clock, weather], tool_choice: { ...tool_choice, mode: 'auto', tools: [{ type: 'function', name: 'clock' }] } });
    expect(auto.status).toBe('completed');
    expect(gemini.calls.at(-1)?.body.tools).toMatchObject([{ functionDeclarations: [{ name: 'clock' }] }]);
    expect(gemini.calls.at(-1)?.body.tools[0].functionDeclarations).toHaveLength(1);
  });

  it('a text.format the translation cannot read is a 400 naming its field, never an answer in another format', async () => {
    const misspelt = await client.responses.create({ model: CLAUDE, input: 'hi', text: { format: { type: 'json_schem' } as never } }).catch((err: unknown) => err);
    expect(misspelt).toBeInstanceOf(OpenAI.BadRequestError);
    expect((misspelt as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('text.format.type');
    const unnamed = await client.responses.create({ model: CLAUDE, input: 'hi', text: { format: { type: 'json_schema', schema: { type: 'object' } } as never } }).catch((err: unknown) => err);
    expect(unnamed).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unnamed as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('text.format.name');
    expect(anthropic.calls).toHaveLength(0);
  });

  it('a request the translation refuses is told so in the Responses API’s own field names', async () => {
    // Claude's thinking budget needs room for an answer: the limit is the client's max_output_tokens.
    const small = await client.responses.create({ model: CLAUDE, input: 'hi', reasoning: { effort: 'low' }, max_output_tokens: 400 }).catch((err: unknown) => err);
    expect(small).toBeInstanceOf(OpenAI.BadRequestError);
    expect(small).toMatchObject({ param: 'max_output_tokens', message: expect.stringContaining('max_output_tokens') });
    expect((small as Error).message).not.toContain('max_completion_tokens');
    // A function_call item whose arguments are not JSON: Anthropic takes a tool call's input as an object.
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'hi' }, { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{not json' }, { type: 'function_call_output', call_id: 'call_1', output: 'x' }];
    const garbled = await client.responses.create({ model: CLAUDE, input, tools: [weather] }).catch((err: unknown) => err);
    expect(garbled).toBeInstanceOf(OpenAI.BadRequestError);
    expect((garbled as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input');
    expect(anthropic.calls).toHaveLength(0);
    // The upstream's own refusal keeps its words and param.
    anthropic.enqueue({ kind: 'error', status: 400, message: 'max_tokens: something the upstream refused' });
    const upstream = await client.responses.create({ model: CLAUDE, input: 'hi' }).catch((err: unknown) => err);
    expect((upstream as Error).message).toContain('max_tokens: something the upstream refused');
  });

  it('a route mixing formats sends what only the Responses API can take to its OpenAI target alone', async () => {
    const response = await client.responses.create({ model: 'gpt-then-claude', input: 'hi', previous_response_id: 'resp_1' }).catch((err: unknown) => err);
    // The OpenAI target fails (503) and the Anthropic fallback cannot take previous_response_id: the upstream's failure.
    expect(response).toBeInstanceOf(OpenAI.APIError);
    expect(anthropic.calls).toHaveLength(0);
  });
});

describe('other answers', () => {
  it('a length stop is an incomplete Response (max_output_tokens)', async () => {
    const response = await client.responses.create({ model: CLAUDE, input: 'one two three four five six', max_output_tokens: 2 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(anthropic.calls.at(-1)?.body.max_tokens).toBe(2);
  });

  it('a length stop streamed ends with response.incomplete', async () => {
    const { types, final } = await streamed({ model: CLAUDE, input: 'one two three four five six', max_output_tokens: 2, stream: true });
    expect(types.at(-1)).toBe('response.incomplete');
    expect(final.status).toBe('incomplete');
  });

  it('the route’s fallback to another format answers when the OpenAI target fails, whole and streamed', async () => {
    const whole = await client.responses.create({ model: 'gpt-then-claude', input: 'hello fallback' });
    expect(whole.model).toBe('gpt-then-claude');
    expect(whole.output_text).toBe('echo: hello fallback');
    expect(openai.calls.every((call) => call.path === '/v1/responses')).toBe(true);
    const { final } = await streamed({ model: 'gpt-then-claude', input: 'hello stream', stream: true });
    expect(final.output_text).toBe('echo: hello stream');
    expect(anthropic.calls).toHaveLength(2);
  });

  it('an upstream refusal before the answer is an OpenAI-shaped error with the upstream’s message', async () => {
    anthropic.enqueue({ kind: 'error', status: 400, message: 'messages: something the upstream refused' });
    const error = await client.responses.create({ model: CLAUDE, input: 'hi' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain('something the upstream refused');
  });

  it('a failure after the stream began ends it with an error event and response.failed, never response.completed', async () => {
    anthropic.enqueue({ kind: 'stream-error', after: 4, type: 'overloaded_error', message: 'Overloaded' });
    const response = await fetch(`${tg.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: CLAUDE, input: 'a b c d e f g h', stream: true }) });
    const events = (await response.text()).split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.split('\ndata: ')[1] ?? '{}'));
    expect(events.slice(-2)).toMatchObject([
      { type: 'error', code: 'overloaded_error', message: expect.stringContaining('Overloaded') },
      { type: 'response.failed', response: { status: 'failed', error: { code: 'overloaded_error' } } },
    ]);
    expect(events.map((event) => event.type)).not.toContain('response.completed');
    // The SDK's stream rejects with the error event: no client mistakes the broken answer for a whole one.
    anthropic.enqueue({ kind: 'stream-error', after: 4, type: 'overloaded_error', message: 'Overloaded' });
    const failure = await streamed({ model: CLAUDE, input: 'a b c d e f g h', stream: true }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ type: 'error', code: 'overloaded_error', message: expect.stringContaining('Overloaded') });
  });

  it('Claude’s thinking is a reasoning item’s summary, whole and streamed, and sent back it reaches Claude as its signed block', async () => {
    const whole = await client.responses.create({ model: CLAUDE, input: 'ponder this', reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    expect(anthropic.calls.at(-1)?.body.thinking).toMatchObject({ type: 'enabled' });
    expect(whole.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(whole.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking about: ponder this' }] });
    const { types, final } = await streamed({ model: CLAUDE, input: 'ponder that', reasoning: { effort: 'low' }, max_output_tokens: 4000, stream: true });
    expect(types.slice(0, 5)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
    ]);
    expect(types).toContain('response.reasoning_summary_text.done');
    expect(final.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking about: ponder that' }] });
    expect(final.output_text).toBe('echo: ponder that');
    // The next turn sends the reasoning item back, as clients do: Claude gets its own signed block back (its
    // encrypted_content), never the summary as text.
    expect(final.output[0]).toMatchObject({ encrypted_content: expect.stringMatching(/^tg_anthropic_thinking\./) });
    await client.responses.create({ model: CLAUDE, input: [{ role: 'user', content: 'ponder that' }, ...(final.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'and more' }] });
    const turn = anthropic.calls.at(-1)?.body.messages[1];
    expect(turn.content[0]).toEqual({ type: 'thinking', thinking: 'thinking about: ponder that', signature: expect.any(String) });
    expect(turn.content.slice(1)).toEqual([{ type: 'text', text: 'echo: ponder that' }]);
  });

  it('a conversation Claude began with reasoning goes on with OpenAI: the reasoning item tollgate made is not sent to OpenAI', async () => {
    // A route's fallback answered one turn, or the user switched models: the client sends every item back.
    const first = await client.responses.create({ model: CLAUDE, input: 'ponder this', reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'ponder this' }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'and more' }];
    const second = await client.responses.create({ model: 'openai/gpt-5', input, store: false });
    expect(second.output_text).toBe('echo: and more');
    const sent = openai.calls.at(-1)?.body.input as Array<{ type?: string }>;
    expect(sent.map((item) => item.type ?? 'message')).toEqual(['message', 'message', 'message']);
  });

  it('a function-calling loop with reasoning.effort to Claude: the turn after the call hands the signed thinking back, thinking on', async () => {
    const question = 'use the tool for Rome';
    const first = await client.responses.create({ model: CLAUDE, input: question, tools: [weather], reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    expect(anthropic.calls.at(-1)?.body.thinking).toMatchObject({ type: 'enabled' });
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    // Claude's signed thinking travels in tollgate's reasoning item (encrypted_content): with thinking on, Anthropic
    // requires it first in a tool-use turn continued (the scripted upstream checks the signature as Anthropic does).
    const second = await client.responses.create({ model: CLAUDE, input: nextTurn(first, question, '18C'), tools: [weather], reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    expect(second.output_text).toContain('18C');
    expect(anthropic.calls.at(-1)?.body.thinking).toMatchObject({ type: 'enabled' });
    expect(anthropic.calls.at(-1)?.body.messages[1].content[0]).toMatchObject({ type: 'thinking', thinking: 'thinking about: use the tool for Rome' });
  });

  it('the same loop on /v1 chat completions with reasoning_effort answers too', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'weather', parameters: weather.parameters ?? {} } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'use the tool for Oslo' }];
    const first = await client.chat.completions.create({ model: CLAUDE, messages, tools, reasoning_effort: 'low', max_completion_tokens: 4000 });
    const call = first.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    const second = await client.chat.completions.create({
      model: CLAUDE,
      messages: [...messages, first.choices[0]?.message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: '2C' }],
      tools,
      reasoning_effort: 'low',
      max_completion_tokens: 4000,
    });
    expect(second.choices[0]?.message.content).toContain('2C');
  });

  it('the Vercel AI SDK’s default provider holds a conversation with store: false; its item_reference for stored items is a 400 naming it', async () => {
    const provider = createOpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key' });
    const options = { openai: { store: false } };
    const first = await generateText({ model: provider(CLAUDE), prompt: 'hello', maxRetries: 0, providerOptions: options });
    const messages = [{ role: 'user' as const, content: 'hello' }, ...first.response.messages, { role: 'user' as const, content: 'again' }];
    const second = await generateText({ model: provider(CLAUDE), messages, maxRetries: 0, providerOptions: options });
    expect(second.text).toBe('echo: again');
    expect(anthropic.calls.at(-1)?.body.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant', 'user']);
    // With the SDK's default (store: true) it names the earlier answer by id: one answered with store: false was not
    // kept (by tollgate either), so only OpenAI could have it.
    const calls = anthropic.calls.length;
    const refused = await generateText({ model: provider(CLAUDE), messages, maxRetries: 0 }).catch((err: unknown) => err);
    expect((refused as Error).message).toContain('item_reference');
    expect((refused as Error).message).toContain('store: false');
    expect(anthropic.calls).toHaveLength(calls);
  });

  it('client.responses.parse with a zod text format: the schema travels as response_format, the answer comes back parsed', async () => {
    const Answer = z.object({ echo: z.string() });
    const parsed = await client.responses.parse({ model: 'deepseek/deepseek-chat', input: 'structured please', text: { format: zodTextFormat(Answer, 'answer') } });
    expect(parsed.output_parsed).toEqual({ echo: 'structured please' });
    expect(openai.calls.at(-1)?.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'answer', strict: true, schema: { properties: { echo: { type: 'string' } } } } });
  });

  it.each([
    ['announced together, then each one’s arguments', [[0, 'call_a', '{"query":'], [1, 'call_b', ''], [0, null, '"Paris"}'], [1, null, '{"query":"Oslo"}']]],
    ['with their arguments taking turns', [[0, 'call_a', ''], [1, 'call_b', ''], [0, null, '{"query":'], [1, null, '{"query":'], [0, null, '"Paris"}'], [1, null, '"Oslo"}']]],
    ['one after the other', [[0, 'call_a', '{"query":'], [0, null, '"Paris"}'], [1, 'call_b', ''], [1, null, '{"query":"Oslo"}']]],
  ] as const)('parallel tool calls a chat-completions vendor streams %s keep every argument', async (_name, pieces) => {
    const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'deepseek-chat' };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const calls = pieces.map(([index, id, args]) => chunk({ tool_calls: [{ index, ...(id ? { id, type: 'function', function: { name: 'weather', arguments: args } } : { function: { arguments: args } }) }] }));
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: calls.join('') + chunk({}, 'tool_calls') + 'data: [DONE]\n\n' });
    const { events, final } = await streamed({ model: 'deepseek/deepseek-chat', input: 'weather in Paris and Oslo', tools: [weather], stream: true });
    const expected = [
      { type: 'function_call', call_id: 'call_a', name: 'weather', arguments: '{"query":"Paris"}' },
      { type: 'function_call', call_id: 'call_b', name: 'weather', arguments: '{"query":"Oslo"}' },
    ];
    expect(final.output).toMatchObject(expected);
    expect(events.filter((event) => event.type === 'response.output_item.done').map((event) => event.item)).toMatchObject(expected);
    for (const [i, call] of expected.entries()) {
      const deltas = events.filter((event) => event.type === 'response.function_call_arguments.delta' && event.output_index === i);
      expect(deltas.map((event) => event.delta).join('')).toBe(call.arguments);
      expect(new Set(deltas.map((event) => event.item_id))).toEqual(new Set([final.output[i]?.id]));
    }
  });

  it('parallel tool calls whose long arguments take turns stream promptly, every argument kept', async () => {
    // Each delta of the waiting call once had the open call's arguments parsed whole again: 500 KB each took 10 s.
    const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'deepseek-chat' };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const args = [JSON.stringify({ query: 'a'.repeat(500_000) }), JSON.stringify({ query: 'b'.repeat(500_000) })];
    const frames = [chunk({ tool_calls: [0, 1].map((index) => ({ index, id: `call_${index}`, type: 'function', function: { name: 'weather', arguments: '' } })) })];
    for (let at = 0; at < (args[0] as string).length; at += 20) {
      for (const index of [0, 1]) frames.push(chunk({ tool_calls: [{ index, function: { arguments: (args[index] as string).slice(at, at + 20) } }] }));
    }
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: frames.join('') + chunk({}, 'tool_calls') + 'data: [DONE]\n\n' });
    // On the thread's own clock (test/helpers/own-time.ts): the gateway runs in this process, and on a loaded two-core
    // machine the wall clock read 4.5-6.4 s for what takes it about 1.
    const started = ownNow();
    const response = await fetch(`${tg.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'deepseek/deepseek-chat', input: 'two long calls', tools: [weather], stream: true }),
    });
    const events = (await response.text()).split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)));
    const ms = ownNow() - started;
    const done = events.filter((event) => event.type === 'response.output_item.done').map((event) => event.item.arguments);
    expect(done).toEqual(args);
    expect(events.at(-1).type).toBe('response.completed');
    expect(ms).toBeLessThan(4_000);
  }, 60_000);

  it('a refusal from a chat-completions vendor is a refusal part, whole and streamed', async () => {
    const base = { id: 'chatcmpl-1', created: 1, model: 'deepseek-chat', system_fingerprint: null };
    openai.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot help with that.' }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 } }),
    });
    const whole = await client.responses.create({ model: 'deepseek/deepseek-chat', input: 'something bad' });
    expect(whole.output).toMatchObject([{ type: 'message', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] }]);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    openai.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: chunk({ role: 'assistant', refusal: 'I cannot ' }) + chunk({ refusal: 'help.' }) + chunk({}, 'stop') + 'data: [DONE]\n\n',
    });
    const { types, final } = await streamed({ model: 'deepseek/deepseek-chat', input: 'something bad', stream: true });
    expect(types).toContain('response.refusal.delta');
    expect(types).toContain('response.refusal.done');
    expect(final.output).toMatchObject([{ type: 'message', content: [{ type: 'refusal', refusal: 'I cannot help.' }] }]);
  });

  it.each([
    ['Gemini', GEMINI],
    ['a chat-completions vendor', 'deepseek/deepseek-chat'],
  ])('log probabilities asked for (include message.output_text.logprobs, top_logprobs) come back on the output_text from %s, whole and streamed', async (_name, model) => {
    const params = { model, input: 'rate this answer', include: ['message.output_text.logprobs' as const], top_logprobs: 2 };
    const whole = await client.responses.create(params);
    const part = (whole.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.logprobs?.map((logprob) => logprob.token).join('')).toBe(part.text);
    expect(part.logprobs?.[0]).toMatchObject({ token: expect.any(String), logprob: expect.any(Number), top_logprobs: [expect.anything(), expect.anything()] });
    const { events, final } = await streamed({ ...params, stream: true });
    const deltas = events.filter((event) => event.type === 'response.output_text.delta');
    expect(deltas.flatMap((event) => event.logprobs).map((logprob: { token: string }) => logprob.token).join('')).toBe(final.output_text);
    const streamedPart = (final.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText;
    expect(streamedPart.logprobs).toEqual(deltas.flatMap((event) => event.logprobs));
    expect(events.find((event) => event.type === 'response.output_text.done').logprobs).toEqual(streamedPart.logprobs);
  });

  it('a chat-completions-only vendor of OpenAI’s format gets chat completions, text.format and all', async () => {
    const response = await client.responses.create({
      model: 'deepseek/deepseek-chat',
      input: [{ role: 'developer', content: 'Answer in JSON.' }, { role: 'user', content: [{ type: 'input_text', text: 'hi there' }] }],
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } } }, strict: true } },
      temperature: 0.5,
      metadata: { run: '7' },
    });
    expect(JSON.parse(response.output_text)).toEqual({ echo: 'hi there' });
    const call = openai.calls.at(-1);
    expect(call?.path).toBe('/v1/chat/completions');
    expect(call?.body).toMatchObject({
      model: 'deepseek-chat',
      messages: [{ role: 'developer', content: 'Answer in JSON.' }, { role: 'user', content: [{ type: 'text', text: 'hi there' }] }],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true } },
      temperature: 0.5,
    });
  });
});
