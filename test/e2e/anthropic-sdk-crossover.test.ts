import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An Anthropic-format client talking to models of other wire formats, translated both ways by the gateway.
const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
/** A Bedrock model other than Claude: an Anthropic client's request to Claude on Bedrock is passed through (bedrock-claude-native.test.ts). */
const BEDROCK_MODEL = 'bedrock/us.amazon.nova-pro-v1:0';
const BEDROCK_CLAUDE = 'bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0';

let openai: ScriptedUpstream;
let gemini: GeminiUpstream;
let bedrock: BedrockUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let client: Anthropic;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
      bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
    },
  });
  client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await gemini?.close();
  await bedrock?.close();
  await anthropic?.close();
});

beforeEach(() => {
  openai.reset();
  gemini.reset();
  bedrock.reset();
  anthropic.reset();
});

function lastOpenAIBody(): any {
  const call = openai.calls.at(-1);
  if (!call) throw new Error('the OpenAI upstream saw no call');
  return call.body;
}

const lookup: Anthropic.Tool = {
  name: 'lookup',
  description: 'Looks things up',
  input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

describe('Anthropic SDK -> OpenAI model', () => {
  it('answers a message, translating the request to chat completions and the answer back', async () => {
    const message = await client.messages.create({
      model: 'openai/gpt-4o-mini',
      max_tokens: 50,
      system: 'be brief',
      top_k: 3,
      thinking: { type: 'enabled', budget_tokens: 4096 },
      messages: [{ role: 'user', content: 'hello gpt' }],
      // This SDK version's types leave the sampling fields out; the API still takes them.
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(message).toMatchObject({
      type: 'message',
      model: 'openai/gpt-4o-mini',
      content: [{ type: 'text', text: 'echo: hello gpt' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBe(3);
    // Anthropic-only fields OpenAI would refuse stay behind; so does the effort the thinking budget becomes, which
    // gpt-4o-mini (a chat model, not a reasoning one) refuses (the next test shows it reaching a reasoning model).
    expect(lastOpenAIBody()).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello gpt' },
      ],
      max_completion_tokens: 50,
    });
  });

  it('reaches an OpenAI reasoning model: the required max_tokens travels as max_completion_tokens', async () => {
    // OpenAI's o-series and gpt-5 refuse the deprecated max_tokens, and the thinking budget becomes a
    // reasoning_effort only those models take: an Anthropic client's limit must arrive in the field they read.
    const message = await client.messages.create({
      model: 'openai/o4-mini',
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'think it over' }],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: think it over' }]);
    expect(lastOpenAIBody()).toMatchObject({ model: 'o4-mini', max_completion_tokens: 3000, reasoning_effort: 'medium' });
    expect(lastOpenAIBody()).not.toHaveProperty('max_tokens');
  });

  it('gives an adaptive-thinking client’s output_config.effort to an OpenAI reasoning model as its reasoning_effort', async () => {
    // Claude's current models take thinking as { type: 'adaptive' } with the depth in output_config.effort (no budget):
    // that effort is the client's reasoning_effort for a model of another vendor; xhigh and max are OpenAI's high.
    for (const [effort, expected] of [['low', 'low'], ['medium', 'medium'], ['max', 'high']] as const) {
      const message = await client.messages.create({
        model: 'openai/o4-mini',
        max_tokens: 3000,
        thinking: { type: 'adaptive' },
        output_config: { effort },
        messages: [{ role: 'user', content: 'think it over' }],
      });
      expect(message.content).toEqual([{ type: 'text', text: 'echo: think it over' }]);
      expect(lastOpenAIBody()).toMatchObject({ model: 'o4-mini', reasoning_effort: expected });
      expect(lastOpenAIBody()).not.toHaveProperty('output_config');
      expect(lastOpenAIBody()).not.toHaveProperty('thinking');
    }
    // The explicit effort is the client's word on depth, over the level a budget would give.
    await client.messages.create({
      model: 'openai/o4-mini',
      max_tokens: 8000,
      thinking: { type: 'enabled', budget_tokens: 6000 },
      output_config: { effort: 'low' },
      messages: [{ role: 'user', content: 'think it over' }],
    });
    expect(lastOpenAIBody()).toMatchObject({ reasoning_effort: 'low' });
  });

  it('gives an OpenAI model a plain-text document as text, Chat Completions taking only PDFs as files', async () => {
    const messages: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'document', title: 'notes.txt', source: { type: 'text', media_type: 'text/plain', data: 'The launch moved to May.' } },
          { type: 'text', text: 'When is the launch?' },
        ],
      },
    ];
    const message = await client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 50, messages });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: The launch moved to May. When is the launch?' }]);
    expect(lastOpenAIBody().messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'The launch moved to May.' }, { type: 'text', text: 'When is the launch?' }] },
    ]);
    // Converse takes no file part either; Gemini reads the document as the text/plain file it is.
    await client.messages.create({ model: BEDROCK_MODEL, max_tokens: 50, messages });
    expect(bedrock.calls.at(-1)?.body.messages).toEqual([{ role: 'user', content: [{ text: 'The launch moved to May.' }, { text: 'When is the launch?' }] }]);
    await client.messages.create({ model: 'gemini/gemini-2.5-flash', max_tokens: 50, messages });
    expect(gemini.calls.at(-1)?.body.contents[0].parts[0]).toEqual({ inlineData: { mimeType: 'text/plain', data: Buffer.from('The launch moved to May.').toString('base64') } });
  });

  it('gives an OpenAI model the image a tool answered with, in a user message after the tool message', async () => {
    // Claude Code's Read tool answers a screenshot as an image in the tool_result; a tool message takes only text in
    // Chat Completions, so the image follows it in a user message, before the turn's own text.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'look at the screenshot' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { query: 'shot.png' } }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [
              { type: 'text', text: 'shot.png' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
            ],
          },
          { type: 'text', text: 'what does it show?' },
        ],
      },
    ];
    await client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 50, tools: [lookup], messages });
    expect(lastOpenAIBody().messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'toolu_1', content: 'shot.png' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }, { type: 'text', text: 'what does it show?' }] },
    ]);
    // Gemini gets the image beside the function's response, in the same turn.
    await client.messages.create({ model: 'gemini/gemini-2.5-flash', max_tokens: 50, tools: [lookup], messages });
    expect(gemini.calls.at(-1)?.body.contents.at(-1)).toEqual({
      role: 'user',
      parts: [{ functionResponse: { name: 'lookup', response: { result: 'shot.png' } } }, { inlineData: { mimeType: 'image/png', data: png } }, { text: 'what does it show?' }],
    });
  });

  it('maps a length cut to max_tokens', async () => {
    const message = await client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 2, messages: [{ role: 'user', content: 'one two three four' }] });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.content).toEqual([{ type: 'text', text: 'echo: one' }]);
  });

  it('streams, asking the upstream for usage and reporting it in message_delta', async () => {
    const stream = client.messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'stream it' }] });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const final = await stream.finalMessage();
    expect(final).toMatchObject({ model: 'openai/gpt-4o-mini', stop_reason: 'end_turn', content: [{ type: 'text', text: 'echo: stream it' }] });
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBe(3);
    // The SDK's stream helper does not pass pings on.
    expect(types).toEqual([
      'message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta',
      'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(lastOpenAIBody()).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('carries a tool round trip, non-streaming then streaming', async () => {
    const first = await client.messages.create({
      model: 'openai/gpt-4o-mini',
      max_tokens: 100,
      tools: [lookup],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'find tollgate' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'lookup', input: { query: 'find tollgate' } }]);
    expect(lastOpenAIBody()).toMatchObject({
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks things up', parameters: lookup.input_schema } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    const toolUse = first.content[0] as Anthropic.ToolUseBlock;

    const stream = client.messages.stream({
      model: 'openai/gpt-4o-mini',
      max_tokens: 100,
      tools: [lookup],
      messages: [
        { role: 'user', content: 'find tollgate' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: [{ type: 'text', text: 'a gateway' }] }] },
      ],
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'echo: a gateway' }]);
    expect(lastOpenAIBody().messages).toEqual([
      { role: 'user', content: 'find tollgate' },
      { role: 'assistant', content: null, tool_calls: [{ id: toolUse.id, type: 'function', function: { name: 'lookup', arguments: '{"query":"find tollgate"}' } }] },
      { role: 'tool', tool_call_id: toolUse.id, content: 'a gateway' },
    ]);
  });

  it('passes on a refusal the OpenAI model streams in its own field, as a whole answer does', async () => {
    // OpenAI sends a structured-output refusal in `delta.refusal` (and `message.refusal`), not in content.
    const refusal = "I'm sorry, I can't help with that.";
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-r1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const body = [
      chunk({ role: 'assistant', content: null, refusal: '' }),
      chunk({ refusal: "I'm sorry, " }),
      chunk({ refusal: "I can't help with that." }),
      chunk({}, 'stop'),
      `data: ${JSON.stringify({ id: 'chatcmpl-r1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } })}\n\n`,
      'data: [DONE]\n\n',
    ].join('');
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const params = {
      model: 'openai/gpt-4o-mini',
      max_tokens: 100,
      output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { plan: { type: 'string' } } } } },
      messages: [{ role: 'user', content: 'plan something bad' }],
    } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const final = await client.messages.stream(params).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: refusal }]);
    // The same answer whole reads the same.
    const whole = { id: 'chatcmpl-r2', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    expect((await client.messages.create(params)).content).toEqual(final.content);
  });

  it('streams a tool call with its arguments in fragments', async () => {
    const stream = client.messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 100, tools: [lookup], messages: [{ role: 'user', content: 'find streams' }] });
    const fragments: string[] = [];
    stream.on('inputJson', (partial) => fragments.push(partial));
    const final = await stream.finalMessage();
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.join('')).toBe('{"query":"find streams"}');
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'lookup', input: { query: 'find streams' } }]);
  });

  it('keeps parallel tool calls apart when the server numbers them all 0 or not at all', async () => {
    // Ollama streams every call of a parallel batch with index 0 (ollama/ollama#15457), older builds and other
    // servers with no index (ollama/ollama#7881); the calls still differ by id. Merged by index, both calls became
    // one tool_use whose input was the two argument objects run together, which the SDK cannot parse.
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-p1', object: 'chat.completion.chunk', created: 1, model: 'qwen3', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const call = (id: string, name: string, args: string, index?: number) => ({ ...(index === undefined ? {} : { index }), id, type: 'function', function: { name, arguments: args } });
    const more = (args: string, index?: number) => ({ ...(index === undefined ? {} : { index }), function: { arguments: args } });
    const tools: Anthropic.Tool[] = [lookup, { name: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const expected = [
      { type: 'tool_use', id: 'call_a', name: 'lookup', input: { query: 'tollgate' } },
      { type: 'tool_use', id: 'call_b', name: 'weather', input: { city: 'Oslo' } },
    ];
    for (const index of [0, undefined]) {
      const body = [
        chunk({ role: 'assistant', content: '' }),
        chunk({ tool_calls: [call('call_a', 'lookup', '{"query":', index)] }),
        chunk({ tool_calls: [more('"tollgate"}', index)] }),
        chunk({ tool_calls: [call('call_b', 'weather', '{"city":', index)] }),
        chunk({ tool_calls: [more('"Oslo"}', index)] }),
        chunk({}, 'tool_calls'),
        `data: ${JSON.stringify({ id: 'chatcmpl-p1', object: 'chat.completion.chunk', created: 1, model: 'qwen3', choices: [], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 } })}\n\n`,
        'data: [DONE]\n\n',
      ].join('');
      openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
      const final = await client.messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 100, tools, messages: [{ role: 'user', content: 'both' }] }).finalMessage();
      expect(final.content).toEqual(expected);
      expect(final.stop_reason).toBe('tool_use');
    }
    // Both calls whole in one delta, each numbered 0, as Ollama sends a batch.
    const body = [
      chunk({ role: 'assistant', content: '', tool_calls: [call('call_a', 'lookup', '{"query":"tollgate"}', 0), call('call_b', 'weather', '{"city":"Oslo"}', 0)] }),
      chunk({}, 'tool_calls'),
      'data: [DONE]\n\n',
    ].join('');
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const final = await client.messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 100, tools, messages: [{ role: 'user', content: 'both' }] }).finalMessage();
    expect(final.content).toEqual(expected);
  });

  it('names a streamed tool call whose name comes after its first fragment, as the whole answer does', async () => {
    // Some OpenAI-compatible servers open a tool call with its id and an empty (or no) name and send the name in a
    // later delta (vercel/ai#14722, jjang-ai/vmlx#244); OpenAI's SDK takes the name from whichever delta has it.
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-n1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const body = [
      chunk({ role: 'assistant', content: null }),
      chunk({ tool_calls: [{ index: 0, id: 'call_late', type: 'function', function: { name: '', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"query":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'lookup', arguments: '"late names"}' } }] }),
      chunk({}, 'tool_calls'),
      `data: ${JSON.stringify({ id: 'chatcmpl-n1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 } })}\n\n`,
      'data: [DONE]\n\n',
    ].join('');
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const params = { model: 'openai/gpt-4o-mini', max_tokens: 100, tools: [lookup], messages: [{ role: 'user' as const, content: 'find late names' }] };
    const final = await client.messages.stream(params).finalMessage();
    expect(final.content).toEqual([{ type: 'tool_use', id: 'call_late', name: 'lookup', input: { query: 'late names' } }]);
    const whole = {
      id: 'chatcmpl-n2', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_late', type: 'function', function: { name: 'lookup', arguments: '{"query":"late names"}' } }] }, finish_reason: 'tool_calls', logprobs: null }],
      usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
    };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    expect((await client.messages.create(params)).content).toEqual(final.content);
  });

  it('aborts the upstream call when the client hangs up mid-stream', async () => {
    openai.enqueue({ kind: 'slow-chunks', delayMs: 100 });
    const controller = new AbortController();
    const stream = await client.messages.create(
      { model: 'openai/gpt-4o-mini', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'a b c d e f g h' }] },
      { signal: controller.signal },
    );
    const seen: string[] = [];
    for await (const event of stream) {
      seen.push(event.type);
      if (event.type === 'content_block_delta') {
        controller.abort();
        break;
      }
    }
    expect(seen).toContain('content_block_delta');
    expect(await openai.waitForClose(0, 3000)).toBe(true);
  });

  it('turns an OpenAI 429 into an Anthropic RateLimitError', async () => {
    openai.enqueue({ kind: 'error', status: 429 });
    const error = await client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect((error as InstanceType<typeof Anthropic.RateLimitError>).error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });
});

describe('Anthropic SDK -> Gemini model', () => {
  it('answers a message', async () => {
    const message = await client.messages.create({ model: 'gemini/gemini-2.5-flash', max_tokens: 50, system: 'be brief', messages: [{ role: 'user', content: 'hi gemini' }] });
    expect(message).toMatchObject({ model: 'gemini/gemini-2.5-flash', content: [{ type: 'text', text: 'echo: hi gemini' }], stop_reason: 'end_turn' });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    const call = gemini.calls.at(-1);
    expect(call?.path).toContain('gemini-2.5-flash:generateContent');
    expect(call?.body.systemInstruction).toEqual({ parts: [{ text: 'be brief' }] });
  });

  it('thinks at the effort an adaptive-thinking client asked for, and shows the thoughts as thinking blocks', async () => {
    gemini.setUsage({ thoughtText: 'weighing it', thoughtsTokenCount: 5 });
    try {
      const message = await client.messages.create({
        model: 'gemini/gemini-2.5-flash',
        max_tokens: 3000,
        thinking: { type: 'adaptive' },
        output_config: { effort: 'high' },
        messages: [{ role: 'user', content: 'think hard' }],
      });
      expect(message.content).toEqual([
        { type: 'thinking', thinking: 'weighing it', signature: '' },
        { type: 'text', text: 'echo: think hard' },
      ]);
      expect(gemini.calls.at(-1)?.body.generationConfig).toEqual({ maxOutputTokens: 3000, thinkingConfig: { thinkingBudget: 24576, includeThoughts: true } });
    } finally {
      gemini.setUsage({});
    }
  });

  it('samples with the client’s top_k (Gemini’s topK)', async () => {
    const params = { model: 'gemini/gemini-2.5-flash', max_tokens: 50, temperature: 0.5, top_k: 3, messages: [{ role: 'user', content: 'few words' }] };
    const message = await client.messages.create(params as Anthropic.MessageCreateParamsNonStreaming);
    expect(message.content).toEqual([{ type: 'text', text: 'echo: few words' }]);
    expect(gemini.calls.at(-1)?.body.generationConfig).toEqual({ maxOutputTokens: 50, temperature: 0.5, topK: 3 });
  });

  it('streams a message', async () => {
    const final = await client.messages.stream({ model: 'gemini/gemini-2.5-flash', max_tokens: 50, messages: [{ role: 'user', content: 'stream gemini' }] }).finalMessage();
    expect(final).toMatchObject({ content: [{ type: 'text', text: 'echo: stream gemini' }], stop_reason: 'end_turn' });
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(gemini.calls.at(-1)?.path).toContain(':streamGenerateContent');
  });
});

describe('Anthropic SDK -> Bedrock model', () => {
  it('answers a message', async () => {
    const message = await client.messages.create({ model: BEDROCK_MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'hi bedrock' }] });
    expect(message).toMatchObject({ model: BEDROCK_MODEL, content: [{ type: 'text', text: 'echo: hi bedrock' }], stop_reason: 'end_turn' });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(bedrock.calls.at(-1)?.action).toBe('converse');
  });

  it('gives Claude the client’s top_k as written, in its own Messages body (InvokeModel)', async () => {
    const params = { model: BEDROCK_CLAUDE, max_tokens: 50, top_k: 3, messages: [{ role: 'user', content: 'few words' }] };
    const message = await client.messages.create(params as Anthropic.MessageCreateParamsNonStreaming);
    expect(message.content).toEqual([{ type: 'text', text: 'echo: few words' }]);
    expect(bedrock.calls.at(-1)?.action).toBe('invoke');
    expect(bedrock.calls.at(-1)?.body.top_k).toBe(3);
  });

  it('streams a message', async () => {
    const final = await client.messages.stream({ model: BEDROCK_MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'stream bedrock' }] }).finalMessage();
    expect(final).toMatchObject({ content: [{ type: 'text', text: 'echo: stream bedrock' }], stop_reason: 'end_turn' });
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(bedrock.calls.at(-1)?.action).toBe('converse-stream');
  });
});

describe('the reverse: OpenAI SDK -> Anthropic model', () => {
  it('answers in OpenAI shape from the Anthropic upstream', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'hello from openai' }] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toBe('echo: hello from openai');
    expect(anthropic.calls.at(-1)?.path).toBe('/v1/messages');
  });
});
