import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calcPrice } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type ProviderRuntime } from '../../src/core/config.js';
import { configFileSchema, type ConfigInput } from '../../src/config/schema.js';
import { GatewayError } from '../../src/core/errors.js';
import { costOf } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI } from '../../src/core/usage.js';
import type { Target } from '../../src/core/provider.js';
import { vertexCredential } from '../../src/providers/vertex/credentials.js';
import { vertexAdapter } from '../../src/providers/vertex/adapter.js';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ACCOUNT = JSON.stringify({
  type: 'service_account',
  project_id: 'acme-prod',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  client_email: 'gw@acme-prod.iam.gserviceaccount.com',
});

function provider(extra: ConfigInput['providers'] = {}, name = 'vertex'): ProviderRuntime {
  const config = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { vertex: { api_key: ACCOUNT }, ...extra } }) }, {}, 1);
  const found = config.providers.get(name);
  if (!found) throw new Error(`no provider ${name}`);
  return found;
}

function target(model: string, runtime = provider()): Target {
  return { provider: runtime, model, apiKey: runtime.keys[0]?.value ?? null, keySource: 'file', keyId: runtime.keys[0]?.id ?? null };
}

const request = { model: 'vertex/x', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }], max_tokens: 50 };

describe('vertex: URLs', () => {
  it('puts Gemini models under publishers/google in the project and location', () => {
    const built = vertexAdapter.buildChatRequest(request, target('gemini-2.5-pro'));
    expect(built.url).toBe('https://us-central1-aiplatform.googleapis.com/v1/projects/acme-prod/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent');
    const streamed = vertexAdapter.buildChatRequest({ ...request, stream: true }, target('gemini-2.5-pro'));
    expect(streamed.url).toMatch(/:streamGenerateContent\?alt=sse$/);
    expect(JSON.parse(streamed.body ?? '{}').systemInstruction).toEqual({ parts: [{ text: 'be brief' }] });
  });

  it('uses the configured region and project, and the global host for the global location', () => {
    const regional = target('gemini-2.5-pro', provider({ vertex: { api_key: ACCOUNT, region: 'europe-west4', project: 'other' } }));
    expect(vertexAdapter.buildChatRequest(request, regional).url).toContain('https://europe-west4-aiplatform.googleapis.com/v1/projects/other/locations/europe-west4/');
    const global = target('gemini-2.5-pro', provider({ vertex: { api_key: ACCOUNT, region: 'global' } }));
    expect(vertexAdapter.buildChatRequest(request, global).url).toMatch(/^https:\/\/aiplatform\.googleapis\.com\/v1\/projects\/acme-prod\/locations\/global\//);
  });

  it('sends Claude to rawPredict with the Vertex version in the body and no model field', () => {
    const built = vertexAdapter.buildChatRequest(request, target('claude-sonnet-4-5@20250929'));
    expect(built.url).toMatch(/publishers\/anthropic\/models\/claude-sonnet-4-5@20250929:rawPredict$/);
    const body = JSON.parse(built.body ?? '{}');
    expect(body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', system: 'be brief', max_tokens: 50 });
    expect(body).not.toHaveProperty('model');
    expect(vertexAdapter.buildChatRequest({ ...request, stream: true }, target('claude-sonnet-4-5')).url).toMatch(/:streamRawPredict$/);
  });

  it("refuses partner models it does not speak (Llama, Mistral, Jamba, DeepSeek, Qwen, gpt-oss) instead of asking publishers/google for them", () => {
    for (const model of ['llama-3.3-70b-instruct-maas', 'llama-4-maverick-17b-128e-instruct-maas', 'mistral-large-2411', 'codestral-2501', 'jamba-1.5-large', 'deepseek-r1-0528-maas', 'qwen3-235b-a22b-instruct-2507-maas', 'gpt-oss-120b-maas']) {
      let error: unknown;
      try {
        vertexAdapter.buildChatRequest(request, target(model));
      } catch (err) {
        error = err;
      }
      expect(error, model).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).code).toBe('unsupported_for_provider');
      expect((error as GatewayError).message).toContain(model);
    }
    expect(vertexAdapter.buildChatRequest(request, target('gemini-2.5-flash')).url).toContain('/publishers/google/models/gemini-2.5-flash:');
  });

  it("asks for a project when neither the config nor a client's key names one", () => {
    // An operator's key without one is given the metadata server's project (provider-audit-vertex-project-discovery).
    const runtime = provider({ vertex: { api_key: 'ya29.plain-token' } });
    expect(() => vertexAdapter.buildChatRequest(request, { ...target('gemini-2.5-pro', runtime), keySource: 'client' })).toThrow(/no Google Cloud project/);
  });
});

describe('vertex: credentials', () => {
  it('reads a service-account JSON, a path to one, or a plain access token', () => {
    expect(vertexCredential(ACCOUNT)).toMatchObject({ kind: 'service-account', account: { client_email: 'gw@acme-prod.iam.gserviceaccount.com' } });
    const dir = mkdtempSync(join(tmpdir(), 'vertex-sa-'));
    try {
      const file = join(dir, 'sa.json');
      writeFileSync(file, ACCOUNT);
      expect(vertexCredential(file)).toMatchObject({ kind: 'service-account', account: { project_id: 'acme-prod' } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(vertexCredential('ya29.token')).toEqual({ kind: 'access-token', token: 'ya29.token' });
    expect(() => vertexCredential('{"client_email": 1}')).toThrow(GatewayError);
    expect(() => vertexCredential('/nonexistent/sa.json')).toThrow(/cannot read/);
  });

  it('uses an access token as it is, without a token endpoint', async () => {
    const runtime = provider({ vertex: { api_key: 'ya29.ready', project: 'p' } });
    const t = target('gemini-2.5-pro', runtime);
    const authorized = await vertexAdapter.authorize?.(vertexAdapter.buildChatRequest(request, t), t);
    expect(authorized?.headers.authorization).toBe('Bearer ya29.ready');
  });
});

describe('vertex: errors', () => {
  it('reads Google error bodies and Anthropic ones', () => {
    const google = vertexAdapter.parseError(403, {}, JSON.stringify({ error: { code: 403, message: 'Permission denied on resource project acme.', status: 'PERMISSION_DENIED' } }), target('gemini-2.5-pro'));
    expect(google).toMatchObject({ status: 403, message: 'Permission denied on resource project acme.' });
    const anthropic = vertexAdapter.parseError(529, {}, JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), target('claude-sonnet-4-5'));
    expect(anthropic).toMatchObject({ status: 529, retryable: true, message: 'Overloaded' });
  });
});

describe('vertex: a Gemini answer without a candidate', () => {
  it('fails as 502 invalid_upstream_response (retryable) unless the prompt was blocked', () => {
    const hollow = { usageMetadata: { promptTokenCount: 4, totalTokenCount: 4 }, responseId: 'r' };
    let error: unknown = null;
    try {
      vertexAdapter.parseChatResponse(hollow, target('gemini-2.5-pro'));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ status: 502, code: 'invalid_upstream_response', retryable: true });
    const blocked = vertexAdapter.parseChatResponse({ ...hollow, promptFeedback: { blockReason: 'SAFETY' } }, target('gemini-2.5-pro'));
    expect(blocked.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: '' } });
  });
});

describe('vertex: cost contract', () => {
  it('prices Gemini from Google’s catalogue and Claude from Anthropic’s, cache tokens included, as calcPrice does', () => {
    const runtime = provider();
    const gemini = vertexAdapter.parseChatResponse(
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 12_000, cachedContentTokenCount: 8_000, candidatesTokenCount: 300, thoughtsTokenCount: 200, totalTokenCount: 12_500 },
      },
      target('gemini-2.5-pro', runtime),
    );
    const geminiCost = costOf(runtime, 'gemini-2.5-pro', tokenUsageFromOpenAI(gemini.usage!)).usd;
    const geminiReference = calcPrice({ input_tokens: 12_000, cache_read_tokens: 8_000, output_tokens: 500 }, 'gemini-2.5-pro', { providerId: 'google' });
    expect(geminiCost).toBeCloseTo(geminiReference!.total_price, 9);

    const claude = vertexAdapter.parseChatResponse(
      {
        id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null,
        usage: { input_tokens: 1_000, cache_read_input_tokens: 4_000, cache_creation_input_tokens: 2_000, output_tokens: 700 },
      },
      target('claude-sonnet-4-5', runtime),
    );
    const claudeCost = costOf(runtime, 'claude-sonnet-4-5', tokenUsageFromOpenAI(claude.usage!));
    const claudeReference = calcPrice({ input_tokens: 7_000, cache_read_tokens: 4_000, cache_write_tokens: 2_000, output_tokens: 700 }, 'claude-sonnet-4-5', { providerId: 'anthropic' });
    expect(claudeCost.source).toBe('catalog');
    expect(claudeCost.usd).toBeCloseTo(claudeReference!.total_price, 9);
  });
});

describe("vertex: an Anthropic client's own body for Claude (native pass-through)", () => {
  const body = { model: 'vertex/claude-sonnet-4-5', max_tokens: 50, top_k: 5, stream: true, messages: [{ role: 'user', content: 'hi' }], future_field: { a: 1 } };
  const native = { format: 'anthropic', body };

  it('speaks Anthropic’s format to Claude models only', () => {
    expect(vertexAdapter.nativeFormat?.(target('claude-sonnet-4-5'))).toBe('anthropic');
    expect(vertexAdapter.nativeFormat?.(target('gemini-2.5-pro'))).toBe('vertex');
  });

  it('sends the body as written, without model, with the Vertex version, on streamRawPredict for a stream', () => {
    const built = vertexAdapter.buildChatRequest({ ...request, stream: true }, target('claude-sonnet-4-5'), native);
    expect(built.url).toMatch(/publishers\/anthropic\/models\/claude-sonnet-4-5:streamRawPredict$/);
    const { model: _model, ...rest } = body;
    expect(JSON.parse(built.body ?? '')).toEqual({ ...rest, anthropic_version: 'vertex-2023-10-16' });
  });

  it('keeps an anthropic_version the client wrote', () => {
    const built = vertexAdapter.buildChatRequest(request, target('claude-sonnet-4-5'), { format: 'anthropic', body: { ...body, anthropic_version: 'vertex-2099-01-01' } });
    expect(JSON.parse(built.body ?? '').anthropic_version).toBe('vertex-2099-01-01');
  });
});
