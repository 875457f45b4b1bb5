import { calcPrice } from '@pydantic/genai-prices';
import OpenAI, { type APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';

let upstream: AzureUpstream;
let tg: RunningGateway;
const KEY = 'azure-upstream-key';

beforeAll(async () => {
  upstream = await startAzureUpstream({ apiKey: KEY, deployments: { 'gpt-4o-prod': 'gpt-4o-2024-08-06', 'gpt-4o': 'gpt-4o-2024-08-06', 'embed-small': 'text-embedding-3-small' } });
  tg = await startGateway({
    providers: {
      // No /openai suffix: the adapter adds it.
      azure: { base_url: upstream.url, api_key: KEY, api_version: '2024-10-21' },
      'azure-ai': { base_url: `${upstream.url}/models`, api_key: KEY },
      // The v1 API, as the OpenAI SDK's base URL; a dated version (as AZURE_OPENAI_API_VERSION may hold) is not for it.
      'azure-v1': { type: 'azure', base_url: `${upstream.url}/openai/v1/`, api_key: KEY, api_version: '2024-06-01' },
    },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

const tool = { type: 'function' as const, function: { name: 'lookup', description: 'Looks things up', parameters: { type: 'object', properties: { query: { type: 'string' } } } } };

async function logEntry(matches: (entry: any) => boolean): Promise<any> {
  // Without a gateway key the log entry is written after the answer; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as any;
    if (body.data?.[0] && matches(body.data[0])) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no matching request log entry');
}

describe('azure openai through the gateway', () => {
  it('answers a text request on the deployment path with api-version and api-key', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'hello azure' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: hello azure');
    expect(completion.model).toBe('azure/gpt-4o-prod');
    const call = upstream.calls[0];
    expect(call?.path).toBe('/openai/deployments/gpt-4o-prod/chat/completions');
    expect(call?.apiVersion).toBe('2024-10-21');
    expect(call?.headers['api-key']).toBe(KEY);
    expect(call?.headers.authorization).toBeUndefined();
  });

  it('calls the v1 API at /openai/v1 with the deployment as the model and no dated api-version', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'azure-v1/gpt-4o-prod', messages: [{ role: 'user', content: 'hello v1' }], max_completion_tokens: 50 });
    expect(completion.choices[0]?.message.content).toBe('echo: hello v1');
    const call = upstream.calls[0];
    expect(call?.path).toBe('/openai/v1/chat/completions');
    expect(call?.apiVersion).toBeNull();
    expect(call?.body.model).toBe('gpt-4o-prod');
    // The v1 API takes today's fields whatever version a dated deployment URL would have needed.
    expect(call?.body.max_completion_tokens).toBe(50);
    expect(call?.headers['api-key']).toBe(KEY);

    upstream.reset();
    const stream = await tg.client.chat.completions.create({ model: 'azure-v1/gpt-4o-prod', messages: [{ role: 'user', content: 'stream v1' }], stream: true, stream_options: { include_usage: true } });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: stream v1');
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0);
    expect(upstream.calls[0]?.path).toBe('/openai/v1/chat/completions');

    upstream.reset();
    const embedded = await tg.client.embeddings.create({ model: 'azure-v1/embed-small', input: 'v1 embeddings' });
    expect(embedded.data).toHaveLength(1);
    expect(upstream.calls[0]?.path).toBe('/openai/v1/embeddings');
    expect(upstream.calls[0]?.body.model).toBe('embed-small');
  });

  it('streams, without the prompt-filter chunk, with usage on include_usage', async () => {
    const stream = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'stream it now' }], stream: true, stream_options: { include_usage: true } });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: stream it now');
    expect(chunks.every((c) => c.id !== '')).toBe(true);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks[chunks.length - 1]?.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4 });
    expect(upstream.calls[0]?.body.stream_options).toEqual({ include_usage: true });
  });

  it('runs a tool-call round trip', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'find the docs, use the tool' }];
    const first = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages, tools: [tool] });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    if (call?.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('lookup');
    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'found it' });
    const second = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages, tools: [tool] });
    expect(second.choices[0]?.message.content).toBe('echo: found it');
    expect(upstream.calls[1]?.body.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'lookup', arguments: call.function.arguments } }], refusal: null },
      { role: 'tool', tool_call_id: call.id, content: 'found it' },
    ]);
  });

  it('passes an image part through', async () => {
    const url = 'https://example.com/cat.png';
    await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url } }] }] });
    expect(upstream.calls[0]?.body.messages[0].content[1]).toEqual({ type: 'image_url', image_url: { url } });
  });

  it('surfaces DeploymentNotFound, content filtering, 429 with retry-after and a bad key as typed errors', async () => {
    const missing = await tg.client.chat.completions.create({ model: 'azure/no-such-deployment', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as APIError).code).toBe('DeploymentNotFound');
    expect((missing as APIError).message).toMatch(/^404 The API deployment for this resource does not exist\./);
    expect((missing as APIError).headers?.get('x-tollgate-provider')).toBe('azure');

    upstream.enqueue({ kind: 'error', status: 400, code: 'content_filter' });
    const filtered = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(filtered).toBeInstanceOf(OpenAI.BadRequestError);
    expect((filtered as APIError).code).toBe('content_filter');

    upstream.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '4' } });
    const limited = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as APIError).headers?.get('retry-after')).toBe('4');
    expect((limited as APIError).message).toMatch(/^429 Requests to the ChatCompletions_Create Operation/);

    const wrong = await startGateway({
      providers: { azure: { base_url: `${upstream.url}/openai`, api_key: 'wrong' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    });
    try {
      const denied = await wrong.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect(denied).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((denied as APIError).message).toMatch(/^401 Access denied/);
      // With no api_version configured the v1 API is called, with no api-version at all.
      expect(upstream.calls[upstream.calls.length - 1]?.path).toBe('/openai/v1/chat/completions');
      expect(upstream.calls[upstream.calls.length - 1]?.apiVersion).toBeNull();
    } finally {
      await wrong.stop();
    }
  });

  it('serves embeddings from an embeddings deployment', async () => {
    const result = await tg.client.embeddings.create({ model: 'azure/embed-small', input: ['one', 'two'] });
    expect(result.data).toHaveLength(2);
    expect(result.data[0]?.embedding.length).toBeGreaterThan(0);
    expect(upstream.calls[0]?.path).toBe('/openai/deployments/embed-small/embeddings');
    expect(upstream.calls[0]?.apiVersion).toBe('2024-10-21');
  });

  it('records the catalogue price for a deployment named like its model', async () => {
    upstream.setCachedTokens(3);
    const completion = await tg.client.chat.completions.create({ model: 'azure/gpt-4o', messages: [{ role: 'user', content: 'what does this cost' }] });
    expect(completion.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 3 } });
    const expected = calcPrice({ input_tokens: 7, output_tokens: 5, cache_read_tokens: 3 }, 'gpt-4o', { providerId: 'azure' });
    const entry = await logEntry((e) => e.upstream_model === 'gpt-4o' && e.status === 200);
    expect(entry.provider).toBe('azure');
    expect(entry.cost_usd).toBeGreaterThan(0);
    expect(Math.abs(entry.cost_usd - (expected?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });
});

describe('azure ai foundry through the gateway', () => {
  it('sends the model in the body to /models/chat/completions with its api version', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'azure-ai/Phi-4', messages: [{ role: 'user', content: 'hi phi' }], max_completion_tokens: 20 });
    expect(completion.choices[0]?.message.content).toBe('echo: hi phi');
    const call = upstream.calls[0];
    expect(call?.path).toBe('/models/chat/completions');
    expect(call?.apiVersion).toBe('2024-05-01-preview');
    expect(call?.headers['api-key']).toBe(KEY);
    expect(call?.headers['extra-parameters']).toBe('drop');
    expect(call?.body).toMatchObject({ model: 'Phi-4', max_tokens: 20 });

    const unknown = await tg.client.chat.completions.create({ model: 'azure-ai/nope', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unknown as APIError).message).toBe('400 Unknown model: nope');
    expect((unknown as APIError).headers?.get('x-tollgate-provider')).toBe('azure-ai');
  });
});
