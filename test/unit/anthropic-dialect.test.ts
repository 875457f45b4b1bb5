import { describe, expect, it } from 'vitest';
import type { RuntimeConfig } from '../../src/core/config.js';
import { chunksOfCompletion } from '../../src/dialects/anthropic/completion-chunks.js';
import { anthropicErrorBody } from '../../src/dialects/anthropic/error-shape.js';
import { anthropicErrorType } from '../../src/wire/anthropic/errors.js';
import { canonicalModelName } from '../../src/dialects/anthropic/model-name.js';
import { anthropicRequestFor } from '../../src/dialects/anthropic/markers.js';
import { readMessagesRequest } from '../../src/dialects/anthropic/parse-request.js';
import { canonicalRequest } from '../../src/dialects/anthropic/request.js';
import { anthropicMessage } from '../../src/dialects/anthropic/response.js';
import { AnthropicStreamRenderer, errorEvent, sseFrame } from '../../src/dialects/anthropic/stream.js';
import { effortFor } from '../../src/wire/anthropic/thinking-budgets.js';
import type { ChatCompletion, ChatCompletionChunk } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { renderAnthropicError } from '../../src/dialects/anthropic/routes/errors.js';
import { messagesBody } from '../../src/providers/anthropic/request.js';

/**
 * Just what the dialect reads of a config: route names, providers' wire formats, and (for bare names) that
 * none of the providers is set up, so a bare name means the dialect's own vendor.
 */
function config(routes: string[] = [], providers: Record<string, string> = {}): RuntimeConfig {
  return {
    routes: new Map(routes.map((name) => [name, { name }])),
    providers: new Map(
      Object.entries(providers).map(([name, format]) => [name, { name, vendor: { id: name, format }, keys: [], models: [], source: 'builtin', keyRequired: true }]),
    ),
  } as unknown as RuntimeConfig;
}

/** The canonical request, as an attempt on an upstream of `format` gets it (the read keeps Anthropic's markers). */
function translate(body: Record<string, unknown>, format = 'anthropic') {
  const request = readMessagesRequest({ model: 'claude-x', max_tokens: 100, ...body }, 'messages');
  return anthropicRequestFor(canonicalRequest(request, 'anthropic/claude-x', {}), format);
}

function badRequest(run: () => unknown): GatewayError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    return err as GatewayError;
  }
  throw new Error('expected a 400');
}

describe('model names', () => {
  const cfg = config(['fast', 'claude-*-cheap'], { anthropic: 'anthropic', openai: 'openai', vertex: 'vertex', gemini: 'gemini' });

  it('sends bare names to the anthropic provider and leaves provider names and routes alone', () => {
    expect(canonicalModelName(cfg, 'claude-sonnet-4-5')).toBe('anthropic/claude-sonnet-4-5');
    expect(canonicalModelName(cfg, ' claude-sonnet-4-5 ')).toBe('anthropic/claude-sonnet-4-5');
    expect(canonicalModelName(cfg, 'openai/gpt-4o-mini')).toBe('openai/gpt-4o-mini');
    expect(canonicalModelName(cfg, 'fast')).toBe('fast');
    expect(canonicalModelName(cfg, 'claude-haiku-cheap')).toBe('claude-haiku-cheap');
  });
});

describe('request checks', () => {
  it('requires model, messages and (for messages only) max_tokens, in Anthropic words', () => {
    expect(badRequest(() => readMessagesRequest({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }, 'messages')).message).toBe('model: Field required');
    expect(badRequest(() => readMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, 'messages')).message).toBe('max_tokens: Field required');
    expect(badRequest(() => readMessagesRequest({ model: 'm', messages: [], max_tokens: 5 }, 'messages')).param).toBe('messages');
    expect(badRequest(() => readMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }, 'messages')).param).toBe('max_tokens');
    expect(badRequest(() => readMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 5, stop_sequences: 'x' }, 'messages')).param).toBe('stop_sequences');
    expect(badRequest(() => readMessagesRequest([1], 'messages')).param).toBe('body');
    // top_k reaches Gemini (an int32 topK) and Bedrock's Claude too: a fraction or a negative count is refused here, in Anthropic's words.
    const topK = (value: unknown) => badRequest(() => readMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 5, top_k: value }, 'messages')).message;
    expect(topK(3.5)).toBe('top_k: Input should be a valid integer, got a number with a fractional part');
    expect(topK(-1)).toBe('top_k: Input should be greater than or equal to 0');
    expect(readMessagesRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, 'count_tokens').model).toBe('m');
  });
});

describe('Anthropic request -> canonical request', () => {
  it('translates sampling fields (top_k kept for the formats that take it), stop sequences, user and streaming (asking for usage)', () => {
    const chat = translate({
      messages: [{ role: 'user', content: 'hello' }],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 5,
      stop_sequences: ['END', 'STOP'],
      metadata: { user_id: 'u-1' },
      stream: true,
      service_tier: 'auto',
    });
    expect(chat).toEqual({
      model: 'anthropic/claude-x',
      messages: [{ role: 'user', content: 'hello' }],
      max_completion_tokens: 100,
      temperature: 0.3,
      top_p: 0.9,
      top_k: 5,
      stop: ['END', 'STOP'],
      user: 'u-1',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('makes the system prompt a system message: a string, joined text blocks, or parts when cache_control must survive', () => {
    expect(translate({ system: 'be brief', messages: [{ role: 'user', content: 'x' }] }).messages[0]).toEqual({ role: 'system', content: 'be brief' });
    const blocks = [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }];
    expect(translate({ system: blocks, messages: [{ role: 'user', content: 'x' }] }).messages[0]).toEqual({ role: 'system', content: 'one\n\ntwo' });
    const cached = [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }];
    expect(translate({ system: cached, messages: [{ role: 'user', content: 'x' }] }).messages[0]).toEqual({
      role: 'system',
      content: [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }],
    });
    expect(translate({ system: cached, messages: [{ role: 'user', content: 'x' }] }, 'openai').messages[0]).toEqual({ role: 'system', content: 'long context' });
  });

  it('turns images and documents into image_url and file parts', () => {
    const chat = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' }, title: 'spec.pdf' },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'file', file: { filename: 'spec.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
          { type: 'file', file: { filename: 'document.txt', file_data: `data:text/plain;base64,${Buffer.from('plain words').toString('base64')}` } },
        ],
      },
    ]);
  });

  it('refuses what it cannot translate instead of dropping it', () => {
    const doc = { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } };
    expect(badRequest(() => translate({ messages: [{ role: 'user', content: [doc] }] })).param).toBe('messages.0.content.0.source');
    expect(badRequest(() => translate({ messages: [{ role: 'system', content: 'x' }] })).param).toBe('messages.0.role');
    const search = { type: 'web_search_20250305', name: 'web_search' };
    expect(badRequest(() => translate({ messages: [{ role: 'user', content: 'x' }], tools: [search] })).param).toBe('tools.0.type');
    const image = { type: 'image', source: { type: 'file', file_id: 'file_1' } };
    expect(badRequest(() => translate({ messages: [{ role: 'user', content: [image] }] })).param).toBe('messages.0.content.0.source');
  });

  it('carries a tool round trip: tools, tool_use as tool_calls, tool_result as tool messages before the user text', () => {
    const chat = translate({
      tools: [{ name: 'weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'tool', name: 'weather', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'let me look', signature: 'sig' },
            { type: 'text', text: 'Looking up.' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'no' }, { type: 'text', text: 'data' }], is_error: true },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    });
    expect(chat.tools).toEqual([
      { type: 'function', function: { name: 'weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
    ]);
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'weather' } });
    expect(chat.parallel_tool_calls).toBe(false);
    expect(chat.messages).toEqual([
      { role: 'user', content: 'weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Looking up.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: no\ndata' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it('maps every tool_choice and leaves tool settings out without tools', () => {
    const tools = [{ name: 't', input_schema: { type: 'object' } }];
    const choice = (tool_choice: unknown) => translate({ tools, tool_choice, messages: [{ role: 'user', content: 'x' }] });
    expect(choice({ type: 'auto' }).tool_choice).toBe('auto');
    expect(choice({ type: 'any' }).tool_choice).toBe('required');
    expect(choice({ type: 'none' }).tool_choice).toBe('none');
    expect(choice({ type: 'auto' }).parallel_tool_calls).toBeUndefined();
    expect(badRequest(() => choice({ type: 'sometimes' })).param).toBe('tool_choice.type');
    const none = translate({ tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'x' }] });
    expect(none.tool_choice).toBeUndefined();
    expect(none.tools).toBeUndefined();
  });

  it('keeps thinking and cache_control for Anthropic and Vertex AI attempts only, joining text back for the others', () => {
    const mark = { type: 'ephemeral' };
    const body = {
      thinking: { type: 'enabled', budget_tokens: 1024 },
      system: [{ type: 'text', text: 'one', cache_control: mark }, { type: 'text', text: 'two' }],
      tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: mark }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: mark }] },
        { role: 'assistant', content: [{ type: 'text', text: '', cache_control: mark }, { type: 'tool_use', id: 't1', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }, { type: 'text', text: 'a' }, { type: 'text', text: 'b', cache_control: mark }] },
      ],
    };
    const kept = translate(body);
    expect(translate(body, 'vertex')).toEqual(kept);
    expect(kept.thinking).toEqual(body.thinking);
    expect(JSON.stringify(kept).match(/cache_control/g)).toHaveLength(5);
    const before = structuredClone(kept);
    const openai = anthropicRequestFor(kept, 'openai');
    expect(kept).toEqual(before);
    expect(openai).not.toHaveProperty('thinking');
    expect(openai.reasoning_effort).toBe('low');
    expect(openai.tools).toEqual([{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }]);
    expect(openai.messages).toEqual([
      { role: 'system', content: 'one\n\ntwo' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'ok' },
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
    ]);
    // Bedrock's Claude reads the thinking budget, not cache_control.
    const bedrock = anthropicRequestFor(kept, 'bedrock');
    expect(bedrock.thinking).toEqual(body.thinking);
    expect(bedrock.messages).toEqual(openai.messages);
    // A request without markers goes out as it is, for every format.
    const plain = translate({ messages: [{ role: 'user', content: 'x' }] });
    expect(anthropicRequestFor(plain, 'gemini')).toBe(plain);
  });

  it('takes the depth of thinking from output_config.effort, over a budget, but never with thinking disabled', () => {
    const ask = (thinking: unknown, effort: string) => translate({ thinking, output_config: { effort }, messages: [{ role: 'user', content: 'x' }] }, 'openai').reasoning_effort;
    expect(ask({ type: 'adaptive' }, 'low')).toBe('low');
    expect(ask({ type: 'adaptive' }, 'xhigh')).toBe('high');
    expect(ask(undefined, 'medium')).toBe('medium');
    expect(ask({ type: 'enabled', budget_tokens: 8000 }, 'low')).toBe('low');
    expect(ask({ type: 'disabled' }, 'low')).toBeUndefined();
    expect(ask({ type: 'adaptive' }, 'extreme')).toBeUndefined();
  });

  it('passes thinking on and adds the matching reasoning_effort; only the effort for providers that refuse thinking', () => {
    const thinking = { type: 'enabled', budget_tokens: 2048 };
    expect(translate({ thinking, messages: [{ role: 'user', content: 'x' }] })).toMatchObject({ thinking, reasoning_effort: 'medium' });
    const elsewhere = translate({ thinking, messages: [{ role: 'user', content: 'x' }] }, 'openai');
    expect(elsewhere.reasoning_effort).toBe('medium');
    expect(elsewhere.thinking).toBeUndefined();
    expect([effortFor(1024), effortFor(2047), effortFor(2048), effortFor(4095), effortFor(4096), effortFor(32000)]).toEqual(['low', 'low', 'medium', 'medium', 'high', 'high']);
    const disabled = translate({ thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'x' }] });
    expect(disabled.thinking).toEqual({ type: 'disabled' });
    expect(disabled.reasoning_effort).toBeUndefined();
  });

  it('round-trips through the Anthropic adapter to the request the client wrote', () => {
    const original = {
      model: 'claude-x',
      max_tokens: 300,
      system: 'be brief',
      messages: [
        { role: 'user', content: 'use the tool' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'lookup', input: { q: 'a' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'found' }] },
      ],
      tools: [{ name: 'lookup', description: 'Looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
      stop_sequences: ['END'],
      temperature: 0.5,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      metadata: { user_id: 'u' },
    };
    const chat = canonicalRequest(readMessagesRequest(structuredClone(original), 'messages'), 'anthropic/claude-x', {});
    expect(messagesBody(chat, 'claude-x')).toEqual(original);
  });
});

function completion(message: Record<string, unknown>, finish: string | null, usage: Record<string, unknown> | null = null, extra: Record<string, unknown> = {}): ChatCompletion {
  return {
    id: 'chatcmpl-abc123',
    object: 'chat.completion',
    model: 'gpt-4o-mini-2024',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish, ...extra }],
    usage: usage as ChatCompletion['usage'],
  };
}

describe('canonical completion -> Anthropic message', () => {
  const reply = { model: 'openai/gpt-4o-mini', stopSequences: ['END'] };

  it('renders text with the requested model, an msg_ id and usage without the cached part', () => {
    const usage = { prompt_tokens: 100, completion_tokens: 7, total_tokens: 107, prompt_tokens_details: { cached_tokens: 60, cache_write_tokens: 10 } };
    expect(anthropicMessage(completion({ content: 'hello there' }, 'stop', usage), reply)).toEqual({
      id: 'msg_chatcmplabc123',
      type: 'message',
      role: 'assistant',
      model: 'openai/gpt-4o-mini',
      content: [{ type: 'text', text: 'hello there' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 30, output_tokens: 7, cache_read_input_tokens: 60, cache_creation_input_tokens: 10 },
    });
  });

  it('renders reasoning as a thinking block and tool calls as tool_use blocks with parsed input', () => {
    const message = anthropicMessage(
      completion(
        {
          content: null,
          reasoning_content: 'pondering',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
            { id: 'call_2', type: 'function', function: { name: 'weather', arguments: 'not json' } },
          ],
        },
        'tool_calls',
      ),
      reply,
    );
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'pondering', signature: '' },
      { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_2', name: 'weather', input: { _raw: 'not json' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage).toEqual({ input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  });

  it('maps finish reasons to stop reasons, naming a stop sequence only when the choice tells which', () => {
    const stop = (finish: string | null, extra: Record<string, unknown> = {}) => anthropicMessage(completion({ content: 'x' }, finish, null, extra), reply);
    expect(stop('length').stop_reason).toBe('max_tokens');
    expect(stop('content_filter').stop_reason).toBe('refusal');
    expect(stop(null).stop_reason).toBe('end_turn');
    expect(stop('stop', { stop_reason: 'END' })).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    expect(stop('stop', { stop_reason: 'OTHER' })).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
    expect(anthropicMessage({ ...completion({ content: 'x' }, 'stop'), id: 'msg_01XYZ' }, reply).id).toBe('msg_01XYZ');
  });
});

function chunk(delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk {
  return { id: 'chatcmpl-s1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] };
}

const usageChunk: ChatCompletionChunk = {
  id: 'chatcmpl-s1',
  object: 'chat.completion.chunk',
  model: 'm',
  choices: [],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
};

function render(chunks: ChatCompletionChunk[]) {
  const renderer = new AnthropicStreamRenderer({ model: 'claude-x', stopSequences: [] });
  const events = chunks.flatMap((c) => renderer.push(c));
  return [...events, ...renderer.end()];
}

describe('canonical chunks -> Anthropic event stream', () => {
  it('renders text then a tool call with split arguments, finish and usage as the exact event sequence', () => {
    const events = render([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Let me ' }),
      chunk({ content: 'check.' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_7', type: 'function', function: { name: 'weather', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk,
    ]);
    expect(events).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: 'msg_chatcmpls1',
            type: 'message',
            role: 'assistant',
            model: 'claude-x',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          },
        },
      },
      { event: 'ping', data: { type: 'ping' } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'check.' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_7', name: 'weather', input: {} } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"ci' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'ty":"Oslo"}' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'tool_use', stop_sequence: null },
          usage: { input_tokens: 12, output_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });

  it('closes a thinking block before text, starts a new block per tool call and forwards each fragment as it arrives', () => {
    const names = render([
      chunk({ reasoning_content: 'hmm' }),
      chunk({ content: 'ok' }),
      chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'f', arguments: '{}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'b', function: { name: 'g', arguments: '{"x"' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: ':1}' } }] }),
      chunk({}, 'length'),
    ]).map((e) => `${e.event}${'index' in e.data ? `:${String(e.data.index)}` : ''}`);
    expect(names).toEqual([
      'message_start', 'ping',
      'content_block_start:0', 'content_block_delta:0', 'content_block_stop:0',
      'content_block_start:1', 'content_block_delta:1', 'content_block_stop:1',
      'content_block_start:2', 'content_block_delta:2', 'content_block_stop:2',
      'content_block_start:3', 'content_block_delta:3', 'content_block_delta:3', 'content_block_stop:3',
      'message_delta', 'message_stop',
    ]);
    const first = render([chunk({ reasoning_content: 'hmm' })])[2];
    expect(first?.data.content_block).toEqual({ type: 'thinking', thinking: '', signature: '' });
  });

  it('opens a tool_use block when the call\'s name comes, with the arguments held until then; a call never named still ends with its arguments', () => {
    const starts = (events: ReturnType<typeof render>) => events.filter((e) => e.event === 'content_block_start').map((e) => e.data.content_block);
    const json = (events: ReturnType<typeof render>) => events.flatMap((e) => (e.event === 'content_block_delta' ? [(e.data.delta as { partial_json: string }).partial_json] : []));
    const late = render([
      chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { arguments: '{"a"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: ':1}' } }] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(starts(late)).toEqual([{ type: 'tool_use', id: 'c1', name: 'f', input: {} }]);
    expect(json(late)).toEqual(['{"a":1}']);
    const nameless = render([chunk({ tool_calls: [{ index: 0, id: 'c2', function: { name: '', arguments: '{}' } }] }), chunk({}, 'tool_calls')]);
    expect(starts(nameless)).toEqual([{ type: 'tool_use', id: 'c2', name: '', input: {} }]);
    expect(json(nameless)).toEqual(['{}']);
  });

  it('takes input tokens into message_start when the first chunk knows them, and ends with max_tokens on length', () => {
    const events = render([{ ...chunk({ content: 'a' }), usage: { prompt_tokens: 5, completion_tokens: 0, total_tokens: 5 } }, chunk({}, 'length')]);
    expect((events[0]?.data.message as { usage: unknown }).usage).toEqual({ input_tokens: 5, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(events.at(-2)?.data.delta).toEqual({ stop_reason: 'max_tokens', stop_sequence: null });
  });

  it('frames events as Anthropic does and renders a mid-stream failure as an error event', () => {
    expect(sseFrame({ event: 'ping', data: { type: 'ping' } })).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    const overloaded = new GatewayError({ status: 529, type: 'upstream_error', code: 'overloaded_error', message: 'anthropic: Overloaded' });
    expect(errorEvent(overloaded)).toEqual({ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'anthropic: Overloaded' } } });
  });

  it('renders a whole completion that answers a streaming request as the same stream', () => {
    const whole = completion({ content: 'hi', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, 'tool_calls', {
      prompt_tokens: 3,
      completion_tokens: 2,
      total_tokens: 5,
    });
    const events = render(chunksOfCompletion(whole));
    expect(events.map((e) => e.event)).toEqual([
      'message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { input_tokens: 3, output_tokens: 2 } });
  });
});

describe('errors in Anthropic shape', () => {
  it('takes the type from the status, whatever the gateway called it', () => {
    const cases: Array<[number, string]> = [
      [400, 'invalid_request_error'], [401, 'authentication_error'], [403, 'permission_error'], [404, 'not_found_error'],
      [413, 'request_too_large'], [415, 'invalid_request_error'], [429, 'rate_limit_error'], [500, 'api_error'],
      [502, 'api_error'], [503, 'overloaded_error'], [504, 'timeout_error'], [529, 'overloaded_error'],
    ];
    for (const [status, type] of cases) expect([status, anthropicErrorType(status)]).toEqual([status, type]);
    const unknownKey = new GatewayError({ status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: 'bad key' });
    expect(anthropicErrorBody(unknownKey)).toEqual({ status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'bad key' } } });
  });

  it('keeps the status, retry-after and a request id', () => {
    const limited = new GatewayError({ status: 429, type: 'rate_limit_error', code: null, message: 'slow down', headers: { 'retry-after': '3' } });
    const rendered = renderAnthropicError(limited, 'req-1');
    expect(rendered.status).toBe(429);
    expect(rendered.headers).toMatchObject({ 'retry-after': '3', 'request-id': 'req-1' });
    expect(JSON.parse(rendered.body)).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' }, request_id: 'req-1' });
  });
});
