// An answer cut short on a translated Responses request (an Anthropic `max_tokens` stop, a Gemini `MAX_TOKENS` or
// `SAFETY` finish, a chat completion's `finish_reason: "length"`) reads as OpenAI's own does: the Response `incomplete`
// with its reason and no `completed_at` (OpenAI: "Only present when the status is `completed`"), the item the cut
// interrupted `incomplete` too (in the Response, in the stream's output_item.done, in the stored Response and its
// replay), and a stream ending in `response.incomplete`. Read through the official OpenAI SDK.
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
const GEMINI = 'gemini/gemini-2.5-flash';
const CHAT_VENDOR = 'deepseek/deepseek-chat';

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      // A vendor of OpenAI's chat format without the Responses API: it gets chat completions.
      deepseek: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await gemini?.close();
  await openai?.close();
});
beforeEach(() => {
  anthropic.reset();
  gemini.reset();
  openai.reset();
});

/** A stream read through the SDK's own parser (which checks the event sequence): its events and the final Response. */
async function streamed(params: OpenAI.Responses.ResponseCreateParamsStreaming): Promise<{ events: any[]; final: OpenAI.Responses.Response }> {
  const stream = client.responses.stream(params);
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  return { events, final };
}

/** A stored Response replayed as its event stream (GET /v1/responses/{id}?stream=true). */
async function replayed(id: string): Promise<any[]> {
  const stream = await client.responses.retrieve(id, { stream: true });
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function messageOf(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseOutputMessage {
  const message = response.output.find((item) => item.type === 'message');
  if (!message) throw new Error(`no message item in ${JSON.stringify(response.output)}`);
  return message as OpenAI.Responses.ResponseOutputMessage;
}

/** What every cut Response says, whole or streamed: incomplete with the reason, no completed_at, its message item incomplete. */
function expectCut(response: OpenAI.Responses.Response, reason: 'max_output_tokens' | 'content_filter'): void {
  expect(response.status).toBe('incomplete');
  expect(response.incomplete_details).toEqual({ reason });
  expect(response.completed_at ?? null).toBeNull();
  expect(messageOf(response).status).toBe('incomplete');
}

/** A stream's events for a cut answer: the message's output_item.done incomplete, response.incomplete last and no response.completed. */
function expectCutEvents(events: any[], reason: 'max_output_tokens' | 'content_filter'): void {
  const types = events.map((event) => event.type);
  expect(types.at(-1)).toBe('response.incomplete');
  expect(types).not.toContain('response.completed');
  const added = events.find((event) => event.type === 'response.output_item.added' && event.item.type === 'message');
  expect(added.item.status).toBe('in_progress');
  const done = events.find((event) => event.type === 'response.output_item.done' && event.item.type === 'message');
  expect(done.item.status).toBe('incomplete');
  expectCut(events.at(-1).response, reason);
}

/** Gemini's answer cut by its finishReason, as generateContent writes it (the text so far, then the reason). */
function geminiCut(text: string, finishReason: string): Record<string, unknown> {
  return {
    candidates: [{ content: { parts: [{ text }], role: 'model' }, finishReason, index: 0 }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'gemini-cut-1',
  };
}

/** The same as a streamGenerateContent (`alt=sse`) answer: the text in two events, the reason on the last. */
function geminiCutStream(text: string, finishReason: string): string {
  const half = Math.ceil(text.length / 2);
  const first = { candidates: [{ content: { parts: [{ text: text.slice(0, half) }], role: 'model' }, index: 0 }], usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 }, modelVersion: 'gemini-2.5-flash', responseId: 'gemini-cut-2' };
  const last = { ...geminiCut(text.slice(half), finishReason), responseId: 'gemini-cut-2' };
  return [first, last].map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join('');
}

describe('a length stop on a translated Responses request', () => {
  it('Anthropic max_tokens: the Response, its message item and the stored Response are incomplete', async () => {
    const response = await client.responses.create({ model: CLAUDE, input: 'one two three four five six', max_output_tokens: 2 });
    expect(anthropic.calls.at(-1)?.body.max_tokens).toBe(2);
    expectCut(response, 'max_output_tokens');
    expect(response.output_text).toBe('echo: one');
    // Kept and read back as it was answered, whole and replayed as its events.
    const stored = await client.responses.retrieve(response.id);
    expectCut(stored, 'max_output_tokens');
    expectCutEvents(await replayed(response.id), 'max_output_tokens');
  });

  it('Anthropic max_tokens streamed: the message item is done as incomplete, then response.incomplete', async () => {
    const { events, final } = await streamed({ model: CLAUDE, input: 'one two three four five six', max_output_tokens: 2, stream: true });
    expectCutEvents(events, 'max_output_tokens');
    expectCut(final, 'max_output_tokens');
    const stored = await client.responses.retrieve(final.id);
    expectCut(stored, 'max_output_tokens');
  });

  it('an answer that ends on its own stays completed, its message item too', async () => {
    const response = await client.responses.create({ model: CLAUDE, input: 'one two', max_output_tokens: 50 });
    expect(response.status).toBe('completed');
    expect(response.incomplete_details).toBeNull();
    expect(typeof response.completed_at).toBe('number');
    expect(messageOf(response).status).toBe('completed');
    const { events, final } = await streamed({ model: CLAUDE, input: 'one two', max_output_tokens: 50, stream: true });
    expect(events.at(-1).type).toBe('response.completed');
    expect(messageOf(final).status).toBe('completed');
  });

  it('Gemini MAX_TOKENS, whole and streamed', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(geminiCut('The answer is cut', 'MAX_TOKENS')) });
    const response = await client.responses.create({ model: GEMINI, input: 'tell me everything', max_output_tokens: 3 });
    expectCut(response, 'max_output_tokens');
    expect(response.output_text).toBe('The answer is cut');

    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: geminiCutStream('The answer is cut', 'MAX_TOKENS') });
    const { events, final } = await streamed({ model: GEMINI, input: 'tell me everything', max_output_tokens: 3, stream: true });
    expect(gemini.calls.at(-1)?.path).toContain(':streamGenerateContent');
    expectCutEvents(events, 'max_output_tokens');
    expect(final.output_text).toBe('The answer is cut');
  });

  it('a chat vendor’s finish_reason "length", whole and streamed', async () => {
    const response = await client.responses.create({ model: CHAT_VENDOR, input: 'one two three four five six', max_output_tokens: 2 });
    expect(openai.calls.at(-1)?.path).toBe('/v1/chat/completions');
    expectCut(response, 'max_output_tokens');
    const { events } = await streamed({ model: CHAT_VENDOR, input: 'one two three four five six', max_output_tokens: 2, stream: true });
    expectCutEvents(events, 'max_output_tokens');
  });
});

describe('a filtered answer on a translated Responses request', () => {
  it('Gemini SAFETY: incomplete for content_filter, whole, streamed and stored', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(geminiCut('Here is how', 'SAFETY')) });
    const response = await client.responses.create({ model: GEMINI, input: 'something filtered' });
    expectCut(response, 'content_filter');
    expectCut(await client.responses.retrieve(response.id), 'content_filter');

    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: geminiCutStream('Here is how', 'SAFETY') });
    const { events } = await streamed({ model: GEMINI, input: 'something filtered', stream: true });
    expectCutEvents(events, 'content_filter');
  });
});

describe('a cut tool call', () => {
  it('the function_call item the length stop interrupted is incomplete, the message before it completed', async () => {
    // Claude wrote some text, then began a tool call and ran out of tokens in its arguments.
    const message = {
      id: 'msg_cut_tool',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_cut', name: 'weather', input: {} },
      ],
      stop_reason: 'max_tokens',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 8 },
    };
    anthropic.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(message) });
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'weather', parameters: { type: 'object', properties: {} }, strict: false }];
    const response = await client.responses.create({ model: CLAUDE, input: 'weather?', tools, max_output_tokens: 8 });
    expect(response.status).toBe('incomplete');
    expect(response.output.map((item) => [item.type, (item as { status?: string }).status])).toEqual([
      ['message', 'completed'],
      ['function_call', 'incomplete'],
    ]);
  });

  it('streamed: the message is done as completed, the cut call as incomplete, then response.incomplete', async () => {
    const frame = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const frames = [
      frame('message_start', { message: { id: 'msg_cut_stream', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
      frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      frame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Let me look.' } }),
      frame('content_block_stop', { index: 0 }),
      frame('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_cut', name: 'weather', input: {} } }),
      frame('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"city": "Par' } }),
      frame('content_block_stop', { index: 1 }),
      frame('message_delta', { delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 8 } }),
      frame('message_stop', {}),
    ];
    anthropic.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: frames.join('') });
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'weather', parameters: { type: 'object', properties: {} }, strict: false }];
    const { events, final } = await streamed({ model: CLAUDE, input: 'weather?', tools, max_output_tokens: 8, stream: true });
    const done = events.filter((event) => event.type === 'response.output_item.done').map((event) => [event.item.type, event.item.status]);
    expect(done).toEqual([
      ['message', 'completed'],
      ['function_call', 'incomplete'],
    ]);
    expect(events.at(-1).type).toBe('response.incomplete');
    expect(final.output.map((item) => (item as { status?: string }).status)).toEqual(['completed', 'incomplete']);
    expect((final.output[1] as OpenAI.Responses.ResponseFunctionToolCall).arguments).toBe('{"city": "Par');
  });
});
