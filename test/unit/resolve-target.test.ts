import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type RuntimeConfig } from '../../src/core/config.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { Env } from '../../src/config/secret-ref.js';
import { GatewayError } from '../../src/core/errors.js';
import type { Target } from '../../src/core/provider.js';
import { resolveDirectTarget, splitModelName } from '../../src/routing/resolve-target.js';

function runtime(file: unknown = {}, env: Env = {}): RuntimeConfig {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(file) }, env, 1);
}

function resolveError(config: RuntimeConfig, model: string, clientKey: string | null = null): GatewayError {
  try {
    resolveDirectTarget(config, model, clientKey);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error(`expected resolving ${model} to fail`);
}

describe('splitModelName', () => {
  it.each([
    ['openai/gpt-4o-mini', { provider: 'openai', model: 'gpt-4o-mini' }],
    ['anthropic/claude-sonnet-4-5', { provider: 'anthropic', model: 'claude-sonnet-4-5' }],
    ['openrouter/meta-llama/llama-3.1-8b', { provider: 'openrouter', model: 'meta-llama/llama-3.1-8b' }],
    ['lab-a/x/', { provider: 'lab-a', model: 'x/' }],
  ])('splits %s at the first slash', (name, expected) => {
    expect(splitModelName(name)).toEqual(expected);
  });

  it.each(['gpt-4o', 'openai/', '/x', '', '/'])('rejects %j', (name) => {
    expect(splitModelName(name)).toBeNull();
  });
});

describe('resolveDirectTarget', () => {
  it('answers 404 model_not_found for a name without a provider prefix that no configured provider serves', () => {
    const err = resolveError(runtime({}, { OPENAI_API_KEY: 'sk-env' }), 'gpt-4o-nowhere');
    expect(err.status).toBe(404);
    expect(err.code).toBe('model_not_found');
    expect(err.param).toBe('model');
    expect(err.message).toContain("'gpt-4o-nowhere'");
  });

  it('resolves a bare name to the one configured provider that serves it', () => {
    const target = resolveDirectTarget(runtime({}, { OPENAI_API_KEY: 'sk-env' }), 'gpt-4o', null);
    expect(target.provider.name).toBe('openai');
    expect(target.model).toBe('gpt-4o');
    expect(target.apiKey).toBe('sk-env');
  });

  it('answers 404 provider_not_found for an unknown provider', () => {
    const err = resolveError(runtime(), 'nosuch/model-x');
    expect(err.status).toBe(404);
    expect(err.code).toBe('provider_not_found');
    expect(err.param).toBe('model');
    expect(err.message).toContain("'nosuch'");
  });

  it('answers 401 provider_key_missing when no key is configured and the client sent none', () => {
    const err = resolveError(runtime(), 'openai/gpt-4o-mini');
    expect(err.status).toBe(401);
    expect(err.code).toBe('provider_key_missing');
    expect(err.type).toBe('authentication_error');
    expect(err.message).toContain('OPENAI_API_KEY');
  });

  it('uses a configured key, resolving the model part verbatim', () => {
    const target = resolveDirectTarget(runtime({ providers: { openrouter: { api_key: 'or-key' } } }), 'openrouter/meta-llama/llama-3.1-8b', null);
    expect(target.provider.name).toBe('openrouter');
    expect(target.model).toBe('meta-llama/llama-3.1-8b');
    expect(target.apiKey).toBe('or-key');
    expect(target.keySource).toBe('file');
  });

  it('uses the environment key with source env', () => {
    const target = resolveDirectTarget(runtime({}, { OPENAI_API_KEY: 'sk-env' }), 'openai/gpt-4o-mini', null);
    expect(target.apiKey).toBe('sk-env');
    expect(target.keySource).toBe('env');
  });

  it('uses the client key only when no key is configured', () => {
    const unconfigured = resolveDirectTarget(runtime(), 'openai/gpt-4o-mini', 'sk-client');
    expect(unconfigured.apiKey).toBe('sk-client');
    expect(unconfigured.keySource).toBe('client');

    const configured = resolveDirectTarget(runtime({ providers: { openai: { api_key: 'sk-config' } } }), 'openai/gpt-4o-mini', 'sk-client');
    expect(configured.apiKey).toBe('sk-config');
    expect(configured.keySource).toBe('file');

    const fromEnv = resolveDirectTarget(runtime({}, { OPENAI_API_KEY: 'sk-env' }), 'openai/gpt-4o-mini', 'sk-client');
    expect(fromEnv.apiKey).toBe('sk-env');
  });

  it('gives a keyless vendor (ollama) apiKey null', () => {
    const target = resolveDirectTarget(runtime(), 'ollama/llama3.2', null);
    expect(target.provider.name).toBe('ollama');
    expect(target.apiKey).toBeNull();
    expect(target.keySource).toBe('none');
    expect(target.provider.baseUrl).toBe('http://localhost:11434/v1');
  });

  it('still uses a client key for a keyless vendor when one is sent', () => {
    const target = resolveDirectTarget(runtime(), 'ollama/llama3.2', 'sk-client');
    expect(target.apiKey).toBe('sk-client');
    expect(target.keySource).toBe('client');
  });

  it('picks among keys that serve the model (models filter)', () => {
    const config = runtime({
      providers: {
        openai: {
          keys: [
            { value: 'sk-mini', models: ['gpt-4o-mini'] },
            { value: 'sk-big', models: ['gpt-4o', 'o3'] },
          ],
        },
      },
    });
    for (let i = 0; i < 20; i++) {
      expect(resolveDirectTarget(config, 'openai/gpt-4o-mini', null).apiKey).toBe('sk-mini');
      expect(resolveDirectTarget(config, 'openai/o3', null).apiKey).toBe('sk-big');
    }
  });

  it('answers 404 model_not_found when no configured key serves the model, even with a client key', () => {
    const config = runtime({ providers: { openai: { keys: [{ value: 'sk-mini', models: ['gpt-4o-mini'] }] } } });
    const err = resolveError(config, 'openai/gpt-4o', 'sk-client');
    expect(err.status).toBe(404);
    expect(err.code).toBe('model_not_found');
  });

  it('resolves a custom provider lab-a of type openai', () => {
    const config = runtime(
      { providers: { 'lab-a': { type: 'openai', base_url: 'http://10.0.0.5:8000/v1/', api_key: 'lab-key', headers: { 'x-lab': '1' } } } },
      { OPENAI_API_KEY: 'sk-openai-env', OPENAI_BASE_URL: 'https://proxy.example/v1' },
    );
    const target = resolveDirectTarget(config, 'lab-a/qwen2.5-7b', null);
    expect(target.provider.name).toBe('lab-a');
    expect(target.provider.vendor.id).toBe('openai');
    expect(target.provider.baseUrl).toBe('http://10.0.0.5:8000/v1');
    expect(target.provider.headers).toEqual({ 'x-lab': '1' });
    // The vendor's own env vars belong to the `openai` provider, not to custom instances of it.
    expect(target.apiKey).toBe('lab-key');
    expect(target.model).toBe('qwen2.5-7b');
  });

  it('does not give a custom provider the vendor env key; without keys it is an open (keyless) server', () => {
    const config = runtime({ providers: { 'lab-a': { type: 'openai', base_url: 'http://10.0.0.5:8000/v1' } } }, { OPENAI_API_KEY: 'sk-openai-env' });
    const target = resolveDirectTarget(config, 'lab-a/m', null);
    expect(target.apiKey).toBeNull();
    expect(target.keySource).toBe('none');
    expect(resolveDirectTarget(config, 'lab-a/m', 'sk-client').apiKey).toBe('sk-client');
    // The built-in provider of the same vendor still requires its key.
    expect(resolveDirectTarget(config, 'openai/gpt-4o', null).apiKey).toBe('sk-openai-env');
    expect(resolveError(runtime({ providers: { 'lab-a': { type: 'openai' } } }), 'openai/gpt-4o').code).toBe('provider_key_missing');
  });

  it('leaves the targets it resolves independent of one another', () => {
    const config = runtime({}, { GROQ_API_KEY: 'gk' });
    const a: Target = resolveDirectTarget(config, 'groq/llama-3.1-8b-instant', null);
    const b: Target = resolveDirectTarget(config, 'groq/other', null);
    expect(a.model).toBe('llama-3.1-8b-instant');
    expect(b.model).toBe('other');
    expect(a.provider).toBe(b.provider);
  });
});
