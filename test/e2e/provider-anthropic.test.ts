import { calcPrice } from '@pydantic/genai-prices';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

const MODEL = 'anthropic/claude-haiku-4-5';
let upstream: AnthropicUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${upstream.url}/v1`, api_key: 'sk-ant-upstream' },
      wrongkey: { type: 'anthropic', base_url: `${upstream.url}/v1`, api_key: 'sk-ant-wrong' },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

function lastCall() {
  const call = upstream.calls.at(-1);
  if (!call) throw new Error('upstream saw no call');
  return call;
}

interface LogEntry {
  cost_usd: number;
  prompt_tokens: number;
  provider: string;
  stream: boolean;
}

/** The newest request log entry once it satisfies `ready`: without a key, the log is written after the answer ends. */
async function latestLog(ready: (entry: LogEntry) => boolean): Promise<LogEntry> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const logs = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as { data: LogEntry[] };
    const entry = logs.data[0];
    if (entry && ready(entry)) return entry;
    if (Date.now() > deadline) throw new Error(`no matching log entry; newest: ${JSON.stringify(entry)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const weatherTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'weather', description: 'Weather for a city', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
};

describe('anthropic through tollgate with the official openai client', () => {
  it('answers a text request, translated to the Messages API', async () => {
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello claude' },
      ],
      stop: ['never-there'],
      user: 'user-7',
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(MODEL);
    expect(completion.choices[0]?.message.content).toBe('echo: hello claude');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    const call = lastCall();
    expect(call.path).toBe('/v1/messages');
    expect(call.headers['x-api-key']).toBe('sk-ant-upstream');
    expect(call.headers['anthropic-version']).toBe('2023-06-01');
    expect(call.headers.authorization).toBeUndefined();
    expect(call.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 4096,
      system: 'be brief',
      messages: [{ role: 'user', content: 'hello claude' }],
      stop_sequences: ['never-there'],
      metadata: { user_id: 'user-7' },
    });
  });

  it('maps max_tokens and stop sequences to finish reasons', async () => {
    const cut = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'one two three four five' }], max_completion_tokens: 2 });
    expect(cut.choices[0]?.finish_reason).toBe('length');
    expect(lastCall().body.max_tokens).toBe(2);
    const stopped = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'alpha STOP beta' }], stop: 'STOP' });
    expect(stopped.choices[0]?.message.content).toBe('echo: alpha ');
    expect(stopped.choices[0]?.finish_reason).toBe('stop');
  });

  it('streams the answer with usage when include_usage is set', async () => {
    const stream = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'stream this please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    const finishes: string[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('echo: stream this please');
    expect(finishes).toEqual(['stop']);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
    expect(lastCall().body.stream).toBe(true);
    expect(lastCall().body).not.toHaveProperty('stream_options');
  });

  it('round-trips a tool call: tool_use out, tool_result back in native form', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Paris weather, use the tool' }];
    const first = await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool], tool_choice: 'auto' });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const call = choice?.message.tool_calls?.[0];
    if (!call || call.type !== 'function') throw new Error('expected a function tool call');
    expect(call.function.name).toBe('weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ query: 'Paris weather, use the tool', units: 'metric' });
    expect(lastCall().body.tools).toEqual([{ name: 'weather', description: 'Weather for a city', input_schema: weatherTool.function.parameters }]);
    expect(lastCall().body.tool_choice).toEqual({ type: 'auto' });

    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: '18C and sunny' });
    const second = await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    expect(second.choices[0]?.message.content).toBe('echo: tool said 18C and sunny');
    expect(second.choices[0]?.finish_reason).toBe('stop');
    const sent = lastCall().body.messages;
    expect(sent[1]).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'weather', input: { query: 'Paris weather, use the tool', units: 'metric' } }] });
    expect(sent[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18C and sunny' }] });
  });

  it('answers a turn after tool calls when the client offers no tools any more', async () => {
    // An agent's last turn ("now summarise") often drops `tools` but keeps the tool history, which OpenAI accepts and
    // Anthropic refuses ("Requests which include `tool_use` or `tool_result` blocks must define tools").
    const call = { id: 'toolu_history1', type: 'function' as const, function: { name: 'weather', arguments: '{"query":"Paris"}' } };
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Paris weather, use the tool' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
    ];
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages });
    expect(completion.choices[0]?.message.content).toBe('echo: tool said sunny, 21C');
    expect(completion.choices[0]?.message.tool_calls).toBeUndefined();
    const sent = lastCall().body;
    // The history goes as it is; none of the client's tools is offered, and the model may call none.
    expect(sent.messages[1].content).toEqual([{ type: 'tool_use', id: call.id, name: 'weather', input: { query: 'Paris' } }]);
    expect(sent.tools.map((tool: { name: string }) => tool.name)).not.toContain('weather');
    expect(sent.tool_choice).toEqual({ type: 'none' });

    // Streamed, and with an empty tools list, alike.
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [...messages, { role: 'user', content: 'use the tool again' }], tools: [], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: tool said sunny, 21C use the tool again');
    expect(lastCall().body.tool_choice).toEqual({ type: 'none' });
  });

  it("continues a history whose tool call ids another vendor wrote (Kimi's functions.name:index)", async () => {
    // A conversation begun on Kimi (or an MCP client naming ids after dotted tools) goes on with Claude: Anthropic
    // refuses a tool_use id outside [a-zA-Z0-9_-] with a 400 for the whole request.
    const calls = ['functions.weather:0', 'functions.weather:1'].map((id, i) => ({ id, type: 'function' as const, function: { name: 'weather', arguments: JSON.stringify({ query: `city ${i}` }) } }));
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Paris and Rome weather, use the tool' },
      { role: 'assistant', content: null, tool_calls: calls },
      { role: 'tool', tool_call_id: 'functions.weather:0', content: 'sunny' },
      { role: 'tool', tool_call_id: 'functions.weather:1', content: 'rainy' },
    ];
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    expect(completion.choices[0]?.message.content).toBe('echo: tool said sunny tool said rainy');
    const sent = lastCall().body.messages;
    const uses = sent[1].content.map((block: { id: string }) => block.id);
    const results = sent[2].content.map((block: { tool_use_id: string }) => block.tool_use_id);
    // Each result names its own call, the two calls keep apart, and the same history gets the same ids next time.
    expect(results).toEqual(uses);
    expect(new Set(uses).size).toBe(2);
    await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    expect(lastCall().body.messages[1].content.map((block: { id: string }) => block.id)).toEqual(uses);
  });

  it('continues a history holding an empty answer or a refusal', async () => {
    // Claude may end a turn with no text, which the client gets (and keeps) as content ''; a structured-output
    // refusal comes back as content null with the words in `refusal`. Anthropic refuses an empty message anywhere
    // but last ("all messages must have non-empty content except for the optional final assistant message").
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'second' },
        { role: 'assistant', content: null, refusal: 'I cannot help with that.' } as OpenAI.ChatCompletionAssistantMessageParam,
        { role: 'user', content: 'third' },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: third');
    // The empty turn is left out (the questions around it become one turn); the refusal is what the assistant said.
    expect(lastCall().body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'second' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'I cannot help with that.' }] },
      { role: 'user', content: 'third' },
    ]);
  });

  it("sends a structured-output schema with OpenAI's value limits in the subset Claude takes", async () => {
    // What a Pydantic model with Field(ge=1, le=10) and friends becomes; OpenAI's structured outputs take it, Claude's
    // refuse such keywords with a 400 for the whole request.
    const schema = {
      type: 'object',
      properties: {
        score: { type: 'integer', minimum: 1, maximum: 10, description: 'How good' },
        summary: { type: 'string', maxLength: 280 },
        tags: { type: 'array', items: { type: 'string', minLength: 2 }, minItems: 2 },
      },
      required: ['score', 'summary', 'tags'],
      additionalProperties: false,
    };
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'rate this' }],
      response_format: { type: 'json_schema', json_schema: { name: 'review', strict: true, schema } },
      tools: [{ type: 'function', function: { name: 'rate', strict: true, parameters: { type: 'object', properties: { stars: { type: 'number', exclusiveMinimum: 0 } }, required: ['stars'], additionalProperties: false } } }],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: rate this');
    const sent = lastCall().body;
    // The limits stay as words in the descriptions, where the model still reads them (as Anthropic's SDKs write them).
    expect(sent.output_config.format.schema).toEqual({
      type: 'object',
      properties: {
        score: { type: 'integer', description: 'How good\n\n{minimum: 1, maximum: 10}' },
        summary: { type: 'string', description: '{maxLength: 280}' },
        tags: { type: 'array', items: { type: 'string', description: '{minLength: 2}' }, description: '{minItems: 2}' },
      },
      additionalProperties: false,
      required: ['score', 'summary', 'tags'],
    });
    expect(sent.tools[0].input_schema.properties.stars).toEqual({ type: 'number', description: '{exclusiveMinimum: 0}' });
    expect(sent.tools[0].strict).toBe(true);
  });

  it('streams a forced tool call with the arguments arriving in several deltas', async () => {
    const stream = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Rome' }],
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'weather' } },
      stream: true,
    });
    const pieces: string[] = [];
    let name = '';
    let finish = '';
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (delta.function?.name) name = delta.function.name;
        if (delta.function?.arguments) pieces.push(delta.function.arguments);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('weather');
    expect(pieces.length).toBeGreaterThan(1);
    expect(JSON.parse(pieces.join(''))).toEqual({ query: 'Rome', units: 'metric' });
    expect(finish).toBe('tool_calls');
    expect(lastCall().body.tool_choice).toEqual({ type: 'tool', name: 'weather' });
  });

  it('sends an image part to the upstream as a native image block', async () => {
    await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{
        role: 'user',
        content: [
          { type: 'text', text: 'describe' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        ],
      }],
    });
    expect(lastCall().body.messages[0].content).toEqual([
      { type: 'text', text: 'describe' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUg==' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('returns thinking as reasoning_content when reasoning_effort is set', async () => {
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'think' }], reasoning_effort: 'low' });
    const message = completion.choices[0]?.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.content).toBe('echo: think');
    expect(message.reasoning_content).toBe('thinking about: think');
    expect(lastCall().body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });
});

describe('upstream errors', () => {
  it('passes a 400 with Anthropic’s message as BadRequestError', async () => {
    // Anthropic caps temperature at 1; the gateway forwards the value and the upstream refuses it.
    const request = tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], temperature: 1.5 });
    await expect(request).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(request).rejects.toMatchObject({ status: 400 });
    await expect(request).rejects.toThrow(/^400 temperature: Input should be less than or equal to 1/);
  });

  it('passes a 429 with retry-after as RateLimitError', async () => {
    upstream.enqueue({ kind: 'error', status: 429, message: 'Number of requests has exceeded your per-minute rate limit', headers: { 'retry-after': '12' } });
    const error = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, message: '429 Number of requests has exceeded your per-minute rate limit' });
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('x-tollgate-provider')).toBe('anthropic');
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toBe('12');
  });

  it('passes a wrong key’s 401 as AuthenticationError', async () => {
    const request = tg.client.chat.completions.create({ model: 'wrongkey/claude-haiku-4-5', messages: [{ role: 'user', content: 'x' }] });
    await expect(request).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(request).rejects.toThrow(/^401 invalid x-api-key/);
    // Which provider refused the key is a header, not a prefix on Anthropic's message.
    const error = (await request.catch((err: unknown) => err)) as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(error.headers?.get('x-tollgate-provider')).toBe('wrongkey');
  });

  it('passes 529 overloaded as a server error', async () => {
    upstream.enqueue({ kind: 'error', status: 529 });
    const error = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 529, message: '529 Overloaded' });
  });

  it('ends a stream whose upstream sends an error event with an error, not a clean finish', async () => {
    upstream.enqueue({ kind: 'stream-error', after: 4 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'a b c d e f' }], stream: true });
    const consume = async () => {
      for await (const chunk of stream) void chunk;
    };
    await expect(consume()).rejects.toThrow(/Overloaded/);
  });
});

describe('cost', () => {
  it('records the catalogue price of the native usage, cache reads and writes included', async () => {
    upstream.setCacheTokens(4000, 1500);
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'what does this cost' }] });
    const usage = completion.usage;
    if (!usage) throw new Error('no usage');
    expect(usage.prompt_tokens_details?.cached_tokens).toBe(4000);
    const expected = calcPrice(
      { input_tokens: usage.prompt_tokens, cache_read_tokens: 4000, cache_write_tokens: 1500, output_tokens: usage.completion_tokens },
      'claude-haiku-4-5',
      { providerId: 'anthropic' },
    )?.total_price;
    expect(expected).toBeGreaterThan(0);
    const entry = await latestLog((e) => e.prompt_tokens === usage.prompt_tokens);
    expect(entry.provider).toBe('anthropic');
    expect(Math.abs(entry.cost_usd - (expected ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });

  it('records the real usage of a stream too', async () => {
    upstream.setCacheTokens(100, 0);
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'count me' }], stream: true });
    for await (const chunk of stream) void chunk;
    const entry = await latestLog((e) => e.stream);
    // 100 cache reads plus the upstream's own input count (2): real usage, not the gateway's estimate.
    expect(entry.prompt_tokens).toBe(102);
  });
});
