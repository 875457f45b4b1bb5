import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import type { Target } from '../../src/core/provider.js';
import { openAICompatibleAdapter } from '../../src/providers/openai-compatible/adapter.js';
import { openAICompatibleVendors } from '../../src/providers/openai-compatible/vendors.js';
import { makeTarget, vendor } from './targets.js';

function build(request: ChatCompletionRequest, target: Target = makeTarget()): { url: string; headers: Record<string, string>; body: Record<string, unknown>; method: string } {
  const upstream = openAICompatibleAdapter.buildChatRequest(request, target);
  expect(typeof upstream.body).toBe('string');
  return { url: upstream.url, headers: upstream.headers, body: JSON.parse(upstream.body as string) as Record<string, unknown>, method: upstream.method };
}

const messages = [{ role: 'user', content: 'hi' }];

describe('openAICompatibleAdapter.buildChatRequest', () => {
  it('replaces the model with the target model and keeps every other field, known or unknown', () => {
    const request: ChatCompletionRequest = {
      model: 'openai/gpt-4o-mini',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }], name: 'bob' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 64,
      seed: 42,
      metadata: { team: 'a', nested: { deep: [1, 2, 3] } },
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
      response_format: { type: 'json_object' },
      foo_custom: { anything: null },
      logit_bias: { '50256': -100 },
    };
    const { body, method } = build(request, makeTarget({ model: 'gpt-4o-mini' }));
    expect(method).toBe('POST');
    expect(body).toEqual({ ...request, model: 'gpt-4o-mini' });
  });

  it('does not mutate the request it was given', () => {
    const request: ChatCompletionRequest = { model: 'mistral/mistral-small', messages, max_completion_tokens: 10, seed: 1 };
    const copy = structuredClone(request);
    build(request, makeTarget({ vendorId: 'mistral', model: 'mistral-small' }));
    expect(request).toEqual(copy);
  });

  it('keeps a model name that itself contains slashes', () => {
    const { body } = build({ model: 'openrouter/meta-llama/llama-3.1-8b', messages }, makeTarget({ vendorId: 'openrouter', model: 'meta-llama/llama-3.1-8b' }));
    expect(body.model).toBe('meta-llama/llama-3.1-8b');
  });

  it.each([
    ['https://api.openai.com/v1', 'https://api.openai.com/v1/chat/completions'],
    ['https://api.openai.com/v1/', 'https://api.openai.com/v1/chat/completions'],
    ['http://127.0.0.1:9999', 'http://127.0.0.1:9999/chat/completions'],
    ['http://127.0.0.1:9999/', 'http://127.0.0.1:9999/chat/completions'],
    ['https://api.novita.ai/v3/openai', 'https://api.novita.ai/v3/openai/chat/completions'],
  ])('joins base URL %s to %s', (baseUrl, expected) => {
    expect(build({ model: 'm', messages }, makeTarget({ baseUrl })).url).toBe(expected);
  });

  it('joins the models URL the same way', () => {
    const list = openAICompatibleAdapter.buildListModelsRequest;
    expect(list).toBeDefined();
    expect(list?.(makeTarget({ baseUrl: 'http://h/v1/' })).url).toBe('http://h/v1/models');
    expect(list?.(makeTarget({ baseUrl: 'http://h/v1' })).url).toBe('http://h/v1/models');
    expect(list?.(makeTarget({ baseUrl: 'http://h/v1' })).method).toBe('GET');
  });

  it('sends the key as a bearer token and the body as JSON', () => {
    const { headers } = build({ model: 'm', messages }, makeTarget({ apiKey: 'sk-abc' }));
    expect(headers.authorization).toBe('Bearer sk-abc');
    expect(headers['content-type']).toBe('application/json');
  });

  it('sends no authorization header for a keyless target', () => {
    const { headers } = build({ model: 'm', messages }, makeTarget({ vendorId: 'ollama', apiKey: null }));
    expect(Object.keys(headers).map((h) => h.toLowerCase())).not.toContain('authorization');
  });

  it('merges vendor default headers and provider headers, the provider winning, auth last', () => {
    const target = makeTarget({
      vendorId: 'openrouter',
      apiKey: 'or-key',
      headers: { 'http-referer': 'https://example.test', 'x-title': 'my-app', 'x-extra': '1' },
    });
    expect(target.provider.vendor.defaultHeaders).toEqual({ 'x-title': 'tollgate' });
    const { headers } = build({ model: 'm', messages }, target);
    expect(headers).toEqual({
      'content-type': 'application/json',
      'x-title': 'my-app',
      'http-referer': 'https://example.test',
      'x-extra': '1',
      authorization: 'Bearer or-key',
    });
  });

  it('sends vendor default headers when the provider configures none', () => {
    const { headers } = build({ model: 'm', messages }, makeTarget({ vendorId: 'openrouter' }));
    expect(headers['x-title']).toBe('tollgate');
  });

  it('leaves fields alone for a vendor without quirks', () => {
    const { body } = build({ model: 'm', messages, max_completion_tokens: 5, seed: 7 }, makeTarget({ vendorId: 'openai' }));
    expect(body.max_completion_tokens).toBe(5);
    expect(body.seed).toBe(7);
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('random_seed');
  });

  describe('mistral quirks (vendor table row)', () => {
    const mistral = (): Target => makeTarget({ vendorId: 'mistral', model: 'mistral-small-latest' });

    it('is a row in the vendor table with rename quirks', () => {
      const row = openAICompatibleVendors.find((v) => v.id === 'mistral');
      expect(row).toBe(vendor('mistral'));
      expect(row?.quirks?.renameFields).toMatchObject({ max_completion_tokens: 'max_tokens', seed: 'random_seed' });
    });

    it('renames max_completion_tokens to max_tokens and seed to random_seed', () => {
      const { body } = build({ model: 'mistral/mistral-small-latest', messages, max_completion_tokens: 100, seed: 123, temperature: 0 }, mistral());
      expect(body).toEqual({ model: 'mistral-small-latest', messages, max_tokens: 100, random_seed: 123, temperature: 0 });
    });

    it('does not overwrite an explicit max_tokens', () => {
      const { body } = build({ model: 'm', messages, max_tokens: 50, max_completion_tokens: 100 }, mistral());
      expect(body.max_tokens).toBe(50);
      expect(body).not.toHaveProperty('max_completion_tokens');
    });

    it('treats an explicit max_tokens: null as unset, so the max_completion_tokens limit is not lost', () => {
      // OpenAI reads null as "not set"; dropping max_completion_tokens here would silently remove the limit.
      const { body } = build({ model: 'm', messages, max_tokens: null, max_completion_tokens: 100 }, mistral());
      expect(body.max_tokens).toBe(100);
      expect(body).not.toHaveProperty('max_completion_tokens');
    });

    it('does not overwrite an explicit random_seed', () => {
      const { body } = build({ model: 'm', messages, seed: 1, random_seed: 2 }, mistral());
      expect(body.random_seed).toBe(2);
      expect(body).not.toHaveProperty('seed');
    });

    it('leaves out `user`, which Mistral refuses as an extra input (the Anthropic route sets it from metadata.user_id)', () => {
      const { body } = build({ model: 'm', messages, user: 'user_abc' }, mistral());
      expect(body).toEqual({ model: 'mistral-small-latest', messages });
    });

    it('adds nothing when the renamed fields are absent', () => {
      const { body } = build({ model: 'm', messages }, mistral());
      expect(body).toEqual({ model: 'mistral-small-latest', messages });
    });
  });

  it('applies the max_tokens quirk to deepseek but not seed', () => {
    const { body } = build({ model: 'm', messages, max_completion_tokens: 9, seed: 3 }, makeTarget({ vendorId: 'deepseek' }));
    expect(body.max_tokens).toBe(9);
    expect(body.seed).toBe(3);
    expect(body).not.toHaveProperty('max_completion_tokens');
  });
});

describe('openAICompatibleAdapter.parseChatResponse and parseError', () => {
  it('accepts a completion with choices and rejects one without', () => {
    const completion = { id: 'x', object: 'chat.completion', model: 'm', choices: [] };
    expect(openAICompatibleAdapter.parseChatResponse(completion, makeTarget())).toBe(completion);
    for (const bad of [null, 'text', { id: 'x' }, { choices: 'nope' }]) {
      let err: unknown = null;
      try {
        openAICompatibleAdapter.parseChatResponse(bad, makeTarget({ name: 'lab-a' }));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).status).toBe(502);
      expect((err as GatewayError).code).toBe('invalid_upstream_response');
      expect((err as GatewayError).message.startsWith('lab-a: ')).toBe(true);
    }
  });

  it('maps upstream errors keeping the provider\'s message as written', () => {
    const err = openAICompatibleAdapter.parseError(429, { 'retry-after': '3' }, '{"error":{"message":"slow down","type":"rate_limit_error"}}', makeTarget({ name: 'groq', vendorId: 'groq' }));
    expect(err.status).toBe(429);
    expect(err.message).toBe('slow down');
    expect(err.retryable).toBe(true);
    expect(err.headers).toEqual({ 'retry-after': '3' });
  });
});

describe('openAICompatibleAdapter and Mistral’s content chunks (Magistral)', () => {
  const think = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
  const request = { model: 'mistral/magistral-small-latest', messages } as ChatCompletionRequest;

  it('reads a whole answer’s thinking as reasoning_content and its text chunks as a string content', () => {
    const completion = {
      id: 'x', object: 'chat.completion', created: 1, model: 'magistral-small-latest',
      choices: [{ index: 0, message: { role: 'assistant', content: [think('Hmm, '), think('ok.'), { type: 'reference', reference_ids: [1] }, { type: 'text', text: 'Hi' }, { type: 'text', text: '!' }] }, finish_reason: 'stop' }],
    };
    const parsed = openAICompatibleAdapter.parseChatResponse(completion, makeTarget());
    expect((parsed.choices[0] as { message?: unknown } | undefined)?.message).toEqual({ role: 'assistant', content: 'Hi!', reasoning_content: 'Hmm, ok.' });
  });

  it('gives a whole answer that only thought an empty content', () => {
    const completion = { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: [think('Hmm.')] }, finish_reason: 'length' }] };
    expect((openAICompatibleAdapter.parseChatResponse(completion, makeTarget()).choices[0] as { message?: unknown } | undefined)?.message).toEqual({ role: 'assistant', content: '', reasoning_content: 'Hmm.' });
  });

  it('reads each streamed delta’s chunks the same way, and keeps the event as it came for a verbatim client', () => {
    const decoder = openAICompatibleAdapter.createStreamDecoder(makeTarget(), request, null, true);
    const event = (delta: unknown) => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
    const thinking = event({ content: [think('Hmm.')] });
    const text = event({ content: [{ type: 'text', text: 'Hi' }] });
    const chunks = decoder.push(Buffer.from(thinking + text + event({ content: 'there' })));
    expect(chunks.map((chunk) => (chunk.choices[0] as { delta?: unknown } | undefined)?.delta)).toEqual([{ reasoning_content: 'Hmm.' }, { content: 'Hi' }, { content: 'there' }]);
    const kept = (decoder as unknown as { takeNative(): Array<{ data: string }> }).takeNative();
    expect(kept.map((native) => `data: ${native.data}\n\n`)).toEqual([thinking, text, event({ content: 'there' })]);
  });
});

describe('openAICompatibleAdapter.buildChatRequest to a vendor taking thinking as a content chunk (Mistral)', () => {
  const mistral = makeTarget({ vendorId: 'mistral' });
  it('sends an assistant turn’s reasoning as a leading ThinkChunk, and leaves other turns alone', () => {
    const request = {
      model: 'mistral/magistral-small-latest',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'Hello', reasoning_content: 'Greet.' },
        { role: 'assistant', content: null, reasoning: 'Call it.', tool_calls: [{ id: 'c0ffee123', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'assistant', content: 'Plain' },
        { role: 'assistant', content: 'Empty', reasoning_content: '' },
      ],
    } as ChatCompletionRequest;
    const { body } = build(request, mistral);
    expect(body.messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Greet.' }] }, { type: 'text', text: 'Hello' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Call it.' }] }], tool_calls: [{ id: 'c0ffee123', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'assistant', content: 'Plain' },
      { role: 'assistant', content: 'Empty' },
    ]);
  });
});
