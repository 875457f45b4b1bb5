import { calcPrice } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { ChatCompletionChunk, CompletionUsage } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { azureAdapter } from '../../src/providers/azure/index.js';
import { costOf } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI } from '../../src/core/usage.js';
import { vendorById } from '../../src/providers/registry.js';
import { makeTarget, type TargetOptions } from './targets.js';

const azure = (options: TargetOptions = {}) => makeTarget({ vendorId: 'azure', baseUrl: 'https://contoso.openai.azure.com/openai', model: 'gpt-4o-prod', apiKey: 'az-key', ...options });
const foundry = (options: TargetOptions = {}) => makeTarget({ vendorId: 'azure-ai', baseUrl: 'https://contoso.services.ai.azure.com/models', model: 'Phi-4', apiKey: 'az-key', ...options });
const messages = [{ role: 'user', content: 'hi' }];

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

describe('azure vendor rows', () => {
  it('registers azure and azure-ai on one wire format with api-key auth', () => {
    const a = vendorById('azure');
    const b = vendorById('azure-ai');
    expect(a).toMatchObject({ format: 'azure', auth: { kind: 'header', header: 'api-key' }, catalogId: 'azure', keyEnv: ['AZURE_OPENAI_API_KEY', 'AZURE_API_KEY'] });
    expect(a?.apiVersionEnv).toEqual(['AZURE_OPENAI_API_VERSION', 'AZURE_API_VERSION']);
    expect(a?.baseUrlEnv).toEqual(['AZURE_OPENAI_ENDPOINT', 'AZURE_API_BASE']);
    expect(b).toMatchObject({ format: 'azure', catalogId: null, keyEnv: ['AZURE_AI_API_KEY', 'AZURE_INFERENCE_CREDENTIAL'], baseUrlEnv: ['AZURE_AI_ENDPOINT'] });
  });

  it('reads endpoint, key and api version from the environment', () => {
    const env = { AZURE_OPENAI_ENDPOINT: 'https://env.openai.azure.com', AZURE_API_KEY: 'k', AZURE_OPENAI_API_VERSION: '2025-01-01-preview' };
    const provider = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({}) }, env, 1).providers.get('azure');
    // The endpoint as the OpenAI SDK's AzureOpenAI takes it; the API lives under its /openai path.
    expect(provider?.baseUrl).toBe('https://env.openai.azure.com/openai');
    expect(provider?.options.apiVersion).toBe('2025-01-01-preview');
    expect(provider?.keys[0]?.value).toBe('k');
  });
});

describe('azure buildChatRequest', () => {
  it.each([
    ['https://contoso.openai.azure.com/openai', 'https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
    ['https://contoso.openai.azure.com', 'https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
    ['https://contoso.openai.azure.com/', 'https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
    ['https://contoso.cognitiveservices.azure.com/openai/', 'https://contoso.cognitiveservices.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
    ['http://127.0.0.1:9', 'http://127.0.0.1:9/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
  ])('Azure OpenAI with a dated api_version: %s -> %s', (baseUrl, url) => {
    expect(azureAdapter.buildChatRequest({ model: 'azure/gpt-4o-prod', messages }, azure({ baseUrl, options: { apiVersion: '2024-10-21' } })).url).toBe(url);
  });

  it.each([
    ['https://contoso.openai.azure.com/openai', 'https://contoso.openai.azure.com/openai/v1/chat/completions'],
    ['https://contoso.openai.azure.com', 'https://contoso.openai.azure.com/openai/v1/chat/completions'],
    ['https://contoso.cognitiveservices.azure.com/openai/', 'https://contoso.cognitiveservices.azure.com/openai/v1/chat/completions'],
    ['https://contoso.openai.azure.com/openai/v1', 'https://contoso.openai.azure.com/openai/v1/chat/completions'],
  ])('Azure OpenAI without an api_version calls the v1 API: %s -> %s', (baseUrl, url) => {
    const upstream = azureAdapter.buildChatRequest({ model: 'azure/gpt-4o-prod', messages }, azure({ baseUrl }));
    expect(upstream.url).toBe(url);
    // The v1 API names the deployment in the body.
    expect(JSON.parse(upstream.body as string).model).toBe('gpt-4o-prod');
  });

  it('asks a stream for usage on API versions that take stream_options, and not on older ones (which refuse it)', () => {
    const streamed = { model: 'x', messages, stream: true };
    const options = (apiVersion?: string) => JSON.parse(azureAdapter.buildChatRequest(streamed, azure(apiVersion ? { options: { apiVersion } } : {})).body as string).stream_options;
    expect(options()).toEqual({ include_usage: true });
    expect(options('2025-04-01-preview')).toEqual({ include_usage: true });
    expect(options('2024-09-01-preview')).toEqual({ include_usage: true });
    expect(options('2024-06-01')).toBeUndefined();
    expect(options('2024-02-15-preview')).toBeUndefined();
  });

  it('sends the output limit as max_tokens to API versions before max_completion_tokens existed', () => {
    const body = (apiVersion?: string) => JSON.parse(azureAdapter.buildChatRequest({ model: 'x', messages, max_completion_tokens: 7 }, azure(apiVersion ? { options: { apiVersion } } : {})).body as string);
    expect(body()).toMatchObject({ max_completion_tokens: 7 });
    expect(body('2024-09-01-preview')).toMatchObject({ max_completion_tokens: 7 });
    expect(body('2024-06-01')).toMatchObject({ max_tokens: 7 });
    expect(body('2024-06-01')).not.toHaveProperty('max_completion_tokens');
  });

  it('uses the configured api version and escapes the deployment name', () => {
    const upstream = azureAdapter.buildChatRequest({ model: 'x', messages }, azure({ model: 'my dep', options: { apiVersion: '2025-04-01-preview' } }));
    expect(upstream.url).toBe('https://contoso.openai.azure.com/openai/deployments/my%20dep/chat/completions?api-version=2025-04-01-preview');
  });

  it('sends the key in api-key, never as a bearer token, and the OpenAI body unchanged', () => {
    const request = { model: 'azure/gpt-4o-prod', messages, stream: true, stream_options: { include_usage: true }, max_completion_tokens: 5, tools: [{ type: 'function', function: { name: 'f' } }] };
    const upstream = azureAdapter.buildChatRequest(request, azure({ headers: { 'x-ms-client-request-id': 'r1' } }));
    expect(upstream.method).toBe('POST');
    expect(upstream.headers['api-key']).toBe('az-key');
    expect(upstream.headers['x-ms-client-request-id']).toBe('r1');
    expect(upstream.headers).not.toHaveProperty('authorization');
    expect(JSON.parse(upstream.body as string)).toEqual({ ...request, model: 'gpt-4o-prod' });
  });

  it('Azure AI Foundry: model in the body, its own path and api version, unknown fields dropped by the service', () => {
    const upstream = azureAdapter.buildChatRequest({ model: 'azure-ai/Phi-4', messages, max_completion_tokens: 9 }, foundry());
    expect(upstream.url).toBe('https://contoso.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview');
    expect(upstream.headers['api-key']).toBe('az-key');
    expect(upstream.headers['extra-parameters']).toBe('drop');
    expect(JSON.parse(upstream.body as string)).toEqual({ model: 'Phi-4', messages, max_tokens: 9 });
    const pinned = azureAdapter.buildChatRequest({ model: 'x', messages }, foundry({ options: { apiVersion: '2024-08-01-preview' }, headers: { 'extra-parameters': 'pass-through' } }));
    expect(pinned.url).toBe('https://contoso.services.ai.azure.com/models/chat/completions?api-version=2024-08-01-preview');
    expect(pinned.headers['extra-parameters']).toBe('pass-through');
  });

  it('sends embeddings to the deployment (Azure OpenAI) or the models endpoint (Foundry)', () => {
    const request = { model: 'azure/embed', input: ['a', 'b'], dimensions: 8 };
    const openai = azureAdapter.buildEmbeddingsRequest?.(request, azure({ model: 'embed', baseUrl: 'https://contoso.openai.azure.com', options: { apiVersion: '2024-10-21' } }));
    expect(openai?.url).toBe('https://contoso.openai.azure.com/openai/deployments/embed/embeddings?api-version=2024-10-21');
    expect(azureAdapter.buildEmbeddingsRequest?.(request, azure({ model: 'embed', baseUrl: 'https://contoso.openai.azure.com' }))?.url).toBe('https://contoso.openai.azure.com/openai/v1/embeddings');
    expect(openai?.headers['api-key']).toBe('az-key');
    expect(JSON.parse(openai?.body as string)).toEqual({ ...request, model: 'embed' });
    const ai = azureAdapter.buildEmbeddingsRequest?.(request, foundry({ model: 'Cohere-embed-v3-english' }));
    expect(ai?.url).toBe('https://contoso.services.ai.azure.com/models/embeddings?api-version=2024-05-01-preview');
    const answer = { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1] }, { object: 'embedding', index: 1, embedding: [0.2] }], model: 'm', usage: { prompt_tokens: 1, total_tokens: 1 } };
    expect(azureAdapter.parseEmbeddingsResponse?.(answer, azure(), request)).toEqual(answer);
    // One vector for two inputs is no answer.
    expect(() => azureAdapter.parseEmbeddingsResponse?.({ ...answer, data: answer.data.slice(0, 1) }, azure(), request)).toThrow(/1 vectors for 2 inputs/);
  });

  it('refuses to call the placeholder endpoint when none is configured', () => {
    for (const target of [makeTarget({ vendorId: 'azure' }), makeTarget({ vendorId: 'azure-ai' })]) {
      const error = thrown(() => azureAdapter.buildChatRequest({ model: 'x', messages }, target));
      expect(error.status).toBe(400);
      expect(error.code).toBe('provider_endpoint_missing');
      expect(error.message).toContain(target.provider.vendor.baseUrlEnv[0]);
    }
  });
});

const SAFE = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } };

/** An Azure OpenAI stream as the service sends it: prompt filter chunk first, filter results on each choice. */
function azureStream(withUsage: boolean): string {
  const head = { id: 'chatcmpl-A1', object: 'chat.completion.chunk', created: 1730000000, model: 'gpt-4o-2024-08-06', system_fingerprint: 'fp_1' };
  const frames = [
    { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: SAFE }] },
    { ...head, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, content_filter_results: {}, finish_reason: null, logprobs: null }] },
    { ...head, choices: [{ index: 0, delta: { content: 'Hel' }, content_filter_results: SAFE, finish_reason: null, logprobs: null }] },
    { ...head, choices: [{ index: 0, delta: { content: 'lo ✓' }, content_filter_results: SAFE, finish_reason: null, logprobs: null }] },
    { ...head, choices: [{ index: 0, delta: {}, content_filter_results: {}, finish_reason: 'stop', logprobs: null }] },
    ...(withUsage ? [{ ...head, choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, prompt_tokens_details: { cached_tokens: 0 } } }] : []),
  ];
  return `${frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join('')}data: [DONE]\n\n`;
}

function decode(text: string, size: number): { chunks: ChatCompletionChunk[]; complete: boolean } {
  const decoder = azureAdapter.createStreamDecoder(azure(), { model: 'azure/gpt-4o-prod', messages, stream: true, stream_options: { include_usage: true } });
  const bytes = Buffer.from(text, 'utf8');
  const chunks: ChatCompletionChunk[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(...decoder.push(bytes.subarray(at, at + size)));
  const tail = decoder.end();
  return { chunks: [...chunks, ...tail.chunks], complete: tail.complete };
}

describe('azure stream decoder', () => {
  it('drops the prompt-filter chunk, keeps content, finish and the usage chunk, whatever the splits', () => {
    for (const size of [1, 5, 64, 100_000]) {
      const { chunks, complete } = decode(azureStream(true), size);
      expect(complete).toBe(true);
      expect(chunks).toHaveLength(5);
      expect(chunks.every((c) => c.id === 'chatcmpl-A1')).toBe(true);
      expect(chunks.map((c) => (c.choices[0] as any)?.delta?.content ?? '').join('')).toBe('Hello ✓');
      expect((chunks[3]?.choices[0] as any).finish_reason).toBe('stop');
      expect(chunks[4]?.choices).toEqual([]);
      expect(chunks[4]?.usage?.total_tokens).toBe(11);
    }
  });

  it("keeps each kept chunk's own event for an OpenAI client, the prompt-filter event dropped with its chunk", () => {
    expect(azureAdapter.answerFormat).toBe('openai');
    const text = azureStream(true);
    for (const size of [1, 7, 100_000]) {
      const decoder = azureAdapter.createStreamDecoder(azure(), { model: 'azure/gpt-4o-prod', messages, stream: true }, null, true);
      expect(decoder.nativePerChunk).toBe(true);
      const bytes = Buffer.from(text, 'utf8');
      const chunks: ChatCompletionChunk[] = [];
      const events: string[] = [];
      for (let at = 0; at < bytes.length; at += size) {
        chunks.push(...decoder.push(bytes.subarray(at, at + size)));
        events.push(...(decoder.takeNative?.() ?? []).map((event) => event.data));
      }
      chunks.push(...decoder.end().chunks);
      events.push(...(decoder.takeNative?.() ?? []).map((event) => event.data));
      expect(chunks).toHaveLength(5);
      // Each event is the very text its chunk was parsed from.
      expect(events).toEqual(chunks.map((chunk) => JSON.stringify(chunk)));
      expect(events.some((data) => data.includes('prompt_filter_results'))).toBe(false);
    }
    expect(azureAdapter.createStreamDecoder(azure(), { model: 'azure/gpt-4o-prod', messages, stream: true }).takeNative).toBeUndefined();
  });

  it('is incomplete without [DONE] and turns an error event into a retryable 502', () => {
    const text = azureStream(false);
    expect(decode(text.slice(0, text.indexOf('data: [DONE]')), 1000).complete).toBe(false);
    const decoder = azureAdapter.createStreamDecoder(azure(), { model: 'azure/gpt-4o-prod', messages, stream: true, stream_options: { include_usage: true } });
    const error = thrown(() => decoder.push(Buffer.from('data: {"error":{"code":"content_filter","message":"filtered"}}\n\n')));
    expect(error).toMatchObject({ status: 502, retryable: true, code: 'content_filter', message: 'filtered' });
  });
});

describe('azure parseChatResponse and parseError', () => {
  it('passes an Azure completion through, filter results included', () => {
    const body = {
      id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-4o-2024-08-06',
      prompt_filter_results: [{ prompt_index: 0, content_filter_results: SAFE }],
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null }, finish_reason: 'stop', logprobs: null, content_filter_results: SAFE }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    };
    expect(azureAdapter.parseChatResponse(body, azure())).toEqual(body);
    expect(thrown(() => azureAdapter.parseChatResponse({ error: 'x' }, azure())).status).toBe(502);
  });

  it('keeps DeploymentNotFound, content_filter and rate-limit details', () => {
    const notFound = azureAdapter.parseError(404, {}, JSON.stringify({ error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist.' } }), azure());
    expect(notFound).toMatchObject({ status: 404, type: 'not_found_error', code: 'DeploymentNotFound', retryable: false, message: 'The API deployment for this resource does not exist.' });

    const filtered = azureAdapter.parseError(
      400,
      {},
      JSON.stringify({ error: { message: 'The response was filtered', type: null, param: 'prompt', code: 'content_filter', status: 400, innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: SAFE } } }),
      azure(),
    );
    expect(filtered).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'content_filter', param: 'prompt', retryable: false });

    const limited = azureAdapter.parseError(429, { 'retry-after': '6', 'retry-after-ms': '6000', 'x-ms-region': 'x' }, JSON.stringify({ error: { code: '429', message: 'Please retry after 6 seconds.' } }), azure());
    expect(limited).toMatchObject({ status: 429, type: 'rate_limit_error', retryable: true, upstreamStatus: 429 });
    expect(limited.headers).toEqual({ 'retry-after': '6', 'retry-after-ms': '6000' });

    expect(azureAdapter.parseError(401, {}, JSON.stringify({ error: { code: '401', message: 'Access denied' } }), foundry()).type).toBe('authentication_error');
  });
});

describe('azure cost contract', () => {
  it('prices Azure usage (cache reads, reasoning) exactly as genai-prices does for the azure catalogue', () => {
    const runtime = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { azure: { base_url: 'https://c.openai.azure.com', api_key: 'k' } } }) }, {}, 1).providers.get('azure');
    if (!runtime) throw new Error('no azure provider');
    const cases: Array<[string, CompletionUsage]> = [
      ['gpt-4o', { prompt_tokens: 2000, completion_tokens: 300, total_tokens: 2300, prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 } }],
      ['o3-mini', { prompt_tokens: 5000, completion_tokens: 900, total_tokens: 5900, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 640 } }],
    ];
    for (const [model, native] of cases) {
      const body = { id: 'c', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: 'stop' }], usage: native };
      const usage = azureAdapter.parseChatResponse(body, azure({ model })).usage as CompletionUsage;
      const reasoning = (native.completion_tokens_details as { reasoning_tokens?: number } | undefined)?.reasoning_tokens;
      const expected = calcPrice(
        {
          input_tokens: native.prompt_tokens,
          output_tokens: native.completion_tokens,
          cache_read_tokens: (native.prompt_tokens_details as { cached_tokens: number }).cached_tokens,
          cache_write_tokens: 0,
          ...(reasoning ? { output_reasoning_tokens: reasoning } : {}),
        },
        model,
        { providerId: 'azure' },
      );
      expect(expected?.provider.id).toBe('azure');
      const cost = costOf(runtime, model, tokenUsageFromOpenAI(usage));
      expect(cost.source).toBe('catalog');
      expect(cost.usd).toBeGreaterThan(0);
      expect(Math.abs(cost.usd - (expected?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
    }
  });
});
