import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  tg = await startGateway(openAIConfig(upstream.url, { providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test', models: ['my-finetune'] } } }));
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

describe('chat completions through tollgate with the official openai client', () => {
  it('answers a non-streaming request with the upstream answer and echoes the requested model', async () => {
    const completion = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello gateway' },
      ],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('openai/gpt-4o-mini');
    expect(completion.choices[0]?.message.content).toBe('echo: hello gateway');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    // The upstream got the bare model name and the configured provider key, never the client's key.
    expect(lastCall().body.model).toBe('gpt-4o-mini');
    expect(lastCall().headers.authorization).toBe('Bearer sk-upstream-test');
  });

  it('passes every request field through unchanged, including ones it does not know', async () => {
    const request = {
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'alpha beta gamma delta' }],
      temperature: 0.3,
      top_p: 0.9,
      seed: 42,
      stop: ['zzz'],
      n: 2,
      max_tokens: 50,
      max_completion_tokens: 60,
      logprobs: true,
      top_logprobs: 2,
      user: 'user-123',
      metadata: { team: 'search', ticket: 'T-1' },
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      logit_bias: { '50256': -100 },
      parallel_tool_calls: false,
      service_tier: 'auto',
      store: false,
      some_future_field: { nested: [1, 2, 3] },
    };
    const completion = await tg.client.chat.completions.create(request as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const { model, ...rest } = request;
    expect(model).toBe('openai/gpt-4o-mini');
    expect(lastCall().body).toEqual({ ...rest, model: 'gpt-4o-mini' });
    expect(completion.choices).toHaveLength(2);
    expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1]);
    expect(completion.choices[0]?.logprobs?.content?.length).toBeGreaterThan(0);
  });

  it('honours stop and max_completion_tokens as the upstream applies them', async () => {
    const stopped = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'one two three four' }],
      stop: [' three'],
    });
    expect(stopped.choices[0]?.message.content).toBe('echo: one two');
    const truncated = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'one two three four' }],
      max_completion_tokens: 2,
    });
    expect(truncated.choices[0]?.finish_reason).toBe('length');
  });

  it('supports response_format json_object', async () => {
    const completion = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'give me json' }],
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(completion.choices[0]?.message.content ?? '')).toEqual({ echo: 'give me json' });
    expect(lastCall().body.response_format).toEqual({ type: 'json_object' });
  });

  it('streams chunks in order, ending cleanly, with the requested model on every chunk', async () => {
    const stream = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream these words please' }],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.model).toBe('openai/gpt-4o-mini');
      expect(chunk.usage).toBeUndefined();
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toBe('echo: stream these words please');
    expect(finish).toBe('stop');
    expect(lastCall().body.stream).toBe(true);
  });

  it('streams usage in a final chunk when stream_options.include_usage is set', async () => {
    const stream = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'count my tokens' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const all: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) all.push(chunk);
    const last = all.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBeGreaterThan(0);
    expect(all.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(lastCall().body.stream_options).toEqual({ include_usage: true });
  });

  it('frames SSE exactly: data lines separated by a blank line, ending with data: [DONE]', async () => {
    const response = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'frame me' }], stream: true }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const raw = await response.text();
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = raw.split('\n\n').filter(Boolean);
    for (const event of events) expect(event).toMatch(/^data: /);
    for (const event of events.slice(0, -1)) {
      const chunk = JSON.parse(event.slice('data: '.length));
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('openai/gpt-4o-mini');
    }
  });

  const tools: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'search_docs',
        description: 'Search the docs',
        parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      },
    },
  ];

  it('completes a tool-call round trip (non-streaming)', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'find rate limits' }];
    const first = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, tools });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('search_docs');
    expect(JSON.parse(call.function.arguments)).toEqual({ query: 'find rate limits' });
    expect(lastCall().body.tools).toEqual(tools);

    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'limits are 10 rpm' });
    const second = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, tools });
    expect(second.choices[0]?.message.content).toBe('echo: limits are 10 rpm');
    expect(lastCall().body.messages[2]).toEqual({ role: 'tool', tool_call_id: call.id, content: 'limits are 10 rpm' });
  });

  it('streams tool-call argument deltas that the client reassembles', async () => {
    const runner = tg.client.chat.completions.stream({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream a tool call' }],
      tools,
      tool_choice: { type: 'function', function: { name: 'search_docs' } },
    });
    let argumentDeltas = 0;
    runner.on('chunk', (chunk) => {
      if (chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments) argumentDeltas++;
    });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('expected a function call');
    expect(argumentDeltas).toBeGreaterThan(1);
    expect(JSON.parse(call.function.arguments)).toEqual({ query: 'stream a tool call' });
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('lists models in the OpenAI list shape with <provider>/<model> ids', async () => {
    const ids: string[] = [];
    for await (const model of tg.client.models.list()) {
      expect(model.object).toBe('model');
      ids.push(model.id);
    }
    expect(ids).toContain('openai/my-finetune');
    expect(ids).toContain('openai/gpt-4o-mini');
    expect(ids.some((id) => id.startsWith('groq/'))).toBe(true);
    expect(ids.every((id) => /^[a-z0-9_-]+\/.+/.test(id))).toBe(true);
  });

  it('reports what answered in response headers', async () => {
    const { response } = await tg.client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'who' }] })
      .withResponse();
    expect(response.headers.get('x-tollgate-provider')).toBe('openai');
    expect(response.headers.get('x-tollgate-model')).toBe('gpt-4o-mini');
    // Time-ordered ids (src/request-id.ts): zero-padded epoch milliseconds, a dash, a sequence.
    expect(response.headers.get('x-request-id')).toMatch(/^\d{15}-\d{6}$/);
  });

  it('answers /health with version and uptime', async () => {
    const response = await fetch(`${tg.url}/health`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; version: string; uptime_seconds: number };
    expect(body.status).toBe('ok');
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(typeof body.uptime_seconds).toBe('number');
  });
});
