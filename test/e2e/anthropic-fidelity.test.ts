// Anthropic SDK -> tollgate /anthropic -> an Anthropic upstream: a faithful pass-through (issue 14). What the
// client sends reaches the upstream unchanged but for the model, and what the upstream answers reaches the client
// unchanged but for the model name it shows, while cost and usage still see the canonical answer.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../helpers/gateway.js';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';
import { REDACTED_THINKING_TRIGGER, thinkingSignature, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import type { ScriptedUpstream } from '../upstream/openai-upstream.js';

/** The client names the provider; the upstream sees the bare model, and the answer shows the client's name. */
const MODEL = 'anthropic/claude-sonnet-4-5';
const UPSTREAM_MODEL = 'claude-sonnet-4-5';

let rig: AnthropicRig;
let upstream: AnthropicUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let client: Anthropic;

/** A route whose Anthropic target falls back to an OpenAI reasoning model (one that takes reasoning_effort). */
const ROUTE = 'claude-then-gpt';

beforeAll(async () => {
  rig = await startAnthropicRig({ routes: { [ROUTE]: { targets: [{ model: MODEL }], fallbacks: ['openai/gpt-5-mini'] } } });
  ({ upstream, openai, tg, client } = rig);
});
afterAll(() => rig?.stop());
beforeEach(() => rig.reset());

const lastCall = (): ReturnType<AnthropicRig['lastCall']> => rig.lastCall();
const lastSent = (): ReturnType<AnthropicRig['lastSent']> => rig.lastSent();
const post = (body: Record<string, unknown>): Promise<Response> => rig.post(body);

/** The request log entry of one request, once written (without a key it is written after the answer). */
async function logOf(id: string): Promise<{ prompt_tokens: number; completion_tokens: number }> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as { prompt_tokens: number; completion_tokens: number };
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const weather: Anthropic.Tool = {
  name: 'weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { query: { type: 'string' }, units: { type: 'string' } } },
};

const thinking = { type: 'enabled', budget_tokens: 1024 } as const;

describe('a whole answer', () => {
  it('is the upstream’s message exactly, signatures and usage included, but for the model name', async () => {
    upstream.setCacheTokens(5, 7, 11);
    const response = await post({ model: MODEL, max_tokens: 2000, thinking, messages: [{ role: 'user', content: 'ponder this' }] });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, any>;
    const sent = lastSent().message;
    expect(body).toEqual({ ...sent, model: MODEL });
    expect(sent.model).toBe(UPSTREAM_MODEL);
    // What the issue found missing, now there because it is the upstream's own answer.
    expect(body.content[0]).toEqual({ type: 'thinking', thinking: 'thinking about: ponder this', signature: thinkingSignature('thinking about: ponder this') });
    expect(body.usage).toMatchObject({
      cache_creation_input_tokens: 18,
      cache_read_input_tokens: 5,
      cache_creation: { ephemeral_5m_input_tokens: 7, ephemeral_1h_input_tokens: 11 },
      service_tier: 'standard',
    });
    // Cost and the log still read the canonical usage: the prompt counts the cache reads and writes too.
    const log = await logOf(response.headers.get('x-request-id') ?? '');
    expect(log.prompt_tokens).toBe(sent.usage.input_tokens + 5 + 18);
    expect(log.completion_tokens).toBe(sent.usage.output_tokens);
  });

  it('gives the SDK redacted_thinking blocks as they came', async () => {
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 2000,
      thinking,
      messages: [{ role: 'user', content: `${REDACTED_THINKING_TRIGGER} and ponder` }],
    });
    const sent = lastSent().message;
    expect(message.content).toEqual(sent.content);
    expect(message.content[0]).toEqual({ type: 'redacted_thinking', data: expect.stringMatching(/^redacted_/) });
    expect(message.model).toBe(MODEL);
  });
});

describe('a stream', () => {
  it('is the upstream’s events byte for byte, but for the model in message_start', async () => {
    upstream.setCacheTokens(3, 4);
    const response = await post({ model: MODEL, max_tokens: 2000, stream: true, thinking, tools: [weather], messages: [{ role: 'user', content: 'use the tool for Oslo' }] });
    expect(response.status).toBe(200);
    const text = await response.text();
    const frames = lastSent().frames ?? [];
    const [start, ...rest] = frames;
    const startData = JSON.parse((start ?? '').split('\ndata: ')[1] ?? '') as Record<string, any>;
    expect(startData.message.model).toBe(UPSTREAM_MODEL);
    const expectedStart = `event: message_start\ndata: ${JSON.stringify({ ...startData, message: { ...startData.message, model: MODEL } })}\n\n`;
    expect(text).toBe(expectedStart + rest.join(''));
    // The events without canonical meaning are among them.
    for (const piece of ['event: ping', '"signature_delta"', 'event: content_block_stop', '"input_tokens":']) expect(text).toContain(piece);
    expect(startData.message.usage.input_tokens).toBeGreaterThan(0);
    expect(startData.message.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 0 });
    const log = await logOf(response.headers.get('x-request-id') ?? '');
    expect(log.prompt_tokens).toBe(startData.message.usage.input_tokens + 3 + 4);
    expect(log.completion_tokens).toBe(lastSent().message.usage.output_tokens);
  });

  it('gives messages.stream().finalMessage() the signatures and the usage', async () => {
    upstream.setCacheTokens(2, 6, 1);
    const final = await client.messages.stream({ model: MODEL, max_tokens: 2000, thinking, messages: [{ role: 'user', content: 'stream a thought' }] }).finalMessage();
    const sent = lastSent().message;
    expect(final.content).toEqual(sent.content);
    expect(final.content[0]).toMatchObject({ type: 'thinking', signature: thinkingSignature('thinking about: stream a thought') });
    expect(final.model).toBe(MODEL);
    expect(final.usage).toMatchObject({
      input_tokens: sent.usage.input_tokens,
      output_tokens: sent.usage.output_tokens,
      cache_read_input_tokens: 2,
      cache_creation_input_tokens: 7,
      cache_creation: { ephemeral_5m_input_tokens: 6, ephemeral_1h_input_tokens: 1 },
      service_tier: 'standard',
    });
  });
});

describe('the request', () => {
  it('reaches the upstream unchanged in a second turn: thinking, redacted_thinking, tool_use, tool_result with is_error and blocks', async () => {
    const first = await client.messages.create({
      model: MODEL,
      max_tokens: 2000,
      thinking,
      tools: [weather],
      messages: [{ role: 'user', content: `${REDACTED_THINKING_TRIGGER} use the tool for Oslo` }],
    });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content.map((block) => block.type)).toEqual(['redacted_thinking', 'thinking', 'tool_use']);
    const toolUse = first.content.find((block) => block.type === 'tool_use');
    if (toolUse?.type !== 'tool_use') throw new Error('no tool_use block');

    // This SDK version's types leave top_k out; the API takes it.
    const second = {
      model: MODEL,
      max_tokens: 2000,
      thinking,
      tools: [{ ...weather, cache_control: { type: 'ephemeral' } }],
      top_k: 40,
      service_tier: 'standard_only',
      metadata: { user_id: 'user-7' },
      messages: [
        { role: 'user', content: `${REDACTED_THINKING_TRIGGER} use the tool for Oslo` },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: toolUse.id,
              is_error: true,
              content: [
                { type: 'text', text: 'station offline' },
                { type: 'text', text: 'try later', cache_control: { type: 'ephemeral' } },
              ],
            },
          ],
        },
      ],
    } as Anthropic.MessageCreateParamsNonStreaming;
    const answer = await client.messages.create(second);
    const { model: _model, ...rest } = second;
    // The upstream checks the thinking signatures and wants the thinking first: the turn it got is the client's.
    expect(lastCall().body).toEqual({ model: UPSTREAM_MODEL, ...rest });
    expect(answer.content.at(-1)).toEqual({ type: 'text', text: 'echo: tool failed station offline try later' });
  });

  it('is refused by the upstream, not by tollgate, when a thinking block was changed', async () => {
    const error = await client.messages
      .create({
        model: MODEL,
        max_tokens: 2000,
        thinking,
        tools: [weather],
        messages: [
          { role: 'user', content: 'use the tool for Oslo' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'thinking about: something else', signature: thinkingSignature('thinking about: use the tool for Oslo') },
              { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
        ],
      })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).message).toContain('Invalid `signature`');
    expect(upstream.calls).toHaveLength(1);
  });
});

describe('a failover to another wire format', () => {
  it('translates: the OpenAI upstream gets the canonical request, the client an Anthropic message', async () => {
    upstream.enqueue({ kind: 'error', status: 529 });
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 2000,
      thinking,
      top_k: 5,
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: thinkingSignature('hmm') }, { type: 'text', text: 'ok' }] },
        { role: 'user', content: 'and now' },
      ],
      fallbacks: ['openai/gpt-4o-mini'],
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(upstream.calls).toHaveLength(1);
    const call = openai.calls.at(-1);
    expect(call?.body.model).toBe('gpt-4o-mini');
    // Thinking blocks and Anthropic-only knobs stay behind; the thinking budget becomes an effort.
    expect(call?.body.messages).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'and now' },
    ]);
    expect(call?.body).not.toHaveProperty('thinking');
    expect(call?.body).not.toHaveProperty('top_k');
    expect(message.type).toBe('message');
    expect(message.content.at(-1)?.type).toBe('text');
  });

  // Each attempt of a route is shaped for its own target: the Anthropic one gets the client's body, markers and
  // all; the OpenAI fallback gets what a direct openai/ request gets, or OpenAI would refuse it with a 400.
  const marked = { type: 'ephemeral' } as const;
  const request = {
    model: ROUTE,
    max_tokens: 2000,
    thinking,
    system: [{ type: 'text' as const, text: 'be brief', cache_control: marked }],
    tools: [{ ...weather, cache_control: marked }],
    tool_choice: { type: 'none' as const },
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hello there', cache_control: marked }] }],
  };

  for (const [status, stream] of [[529, false], [500, true]] as const) {
    it(`a route's OpenAI fallback gets no thinking or cache_control, its Anthropic target all of them (${status}, ${stream ? 'streamed' : 'whole'})`, async () => {
      upstream.enqueue({ kind: 'error', status });
      const message = stream ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
      expect(upstream.calls).toHaveLength(1);
      const tried = upstream.calls[0]?.body;
      expect(tried?.thinking).toEqual(thinking);
      expect(tried?.system).toEqual(request.system);
      expect(tried?.tools).toEqual(request.tools);
      expect(tried?.messages).toEqual(request.messages);
      expect(openai.calls).toHaveLength(1);
      const call = openai.calls[0]?.body;
      expect(call.model).toBe('gpt-5-mini');
      expect(call).not.toHaveProperty('thinking');
      expect(JSON.stringify(call)).not.toContain('cache_control');
      // As a direct openai/ request from /anthropic has it: the budget as an effort, plain text as strings.
      expect(call.reasoning_effort).toBe('low');
      expect(call.messages).toEqual([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there' },
      ]);
      expect(call.tools).toEqual([{ type: 'function', function: { name: 'weather', description: weather.description, parameters: weather.input_schema } }]);
      expect(message.content).toMatchObject([{ type: 'text', text: 'echo: hello there' }]);
    });
  }
});
