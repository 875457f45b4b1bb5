import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type RuntimeConfig } from '../../src/core/config.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { Env } from '../../src/config/secret-ref.js';
import { GatewayError } from '../../src/core/errors.js';
import { lookupBareModel, resolveModelName } from '../../src/routing/bare-model.js';
import { buildCandidateGroups, checkRequestFallbacks } from '../../src/routing/candidate-groups.js';
import { resolveCandidates } from '../../src/routing/resolve-target.js';
import { routeMatcherFor } from '../../src/routing/route-patterns.js';

function runtime(file: unknown = {}, env: Env = {}): RuntimeConfig {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(file) }, env, 1);
}

function failure(run: () => unknown): GatewayError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

/** Where a name's candidates go, as `<provider>/<model>` labels. */
function labels(config: RuntimeConfig, name: string): string[] {
  return resolveCandidates(config, name, null).map((candidate) => candidate.label);
}

const LAB = { type: 'vllm', base_url: 'http://10.0.0.5:8000/v1', models: ['gpt-4o', 'llama-local'] };

describe('a bare name on the OpenAI dialect', () => {
  it('goes to the one configured provider whose catalogue lists it', () => {
    const config = runtime({}, { OPENAI_API_KEY: 'sk-env' });
    expect(labels(config, 'gpt-4o-mini')).toEqual(['openai/gpt-4o-mini']);
    expect(resolveModelName(config, 'gpt-4o-mini')).toBe('openai/gpt-4o-mini');
    // The group is named after the target, so logs and route.selected show the provider.
    expect(buildCandidateGroups(config, 'gpt-4o-mini', null, null).map((group) => group.name)).toEqual(['openai/gpt-4o-mini']);
  });

  it('goes to a provider whose operator-listed models name it', () => {
    const config = runtime({ providers: { lab: LAB } });
    expect(labels(config, 'llama-local')).toEqual(['lab/llama-local']);
  });

  it('leaves a route of that name alone: the route wins', () => {
    const config = runtime({ routes: { 'gpt-4o-mini': { targets: [{ model: 'lab/llama-local' }] } }, providers: { lab: LAB } }, { OPENAI_API_KEY: 'sk-env' });
    expect(resolveModelName(config, 'gpt-4o-mini')).toBe('gpt-4o-mini');
    expect(routeMatcherFor(config.routes).match('gpt-4o-mini')?.route.name).toBe('gpt-4o-mini');
  });

  it('is a 404 ambiguous_model naming every candidate when several configured providers serve it', () => {
    const config = runtime({ providers: { lab: LAB } }, { OPENAI_API_KEY: 'sk-env' });
    const err = failure(() => resolveCandidates(config, 'gpt-4o', null));
    expect(err).toMatchObject({ status: 404, code: 'ambiguous_model', param: 'model', type: 'invalid_request_error' });
    expect(err.message).toContain('lab/gpt-4o, openai/gpt-4o');
    // The mapper leaves it for routing to refuse, after authentication.
    expect(resolveModelName(config, 'gpt-4o')).toBe('gpt-4o');
    // Each `<provider>/<model>` still resolves.
    expect(labels(config, 'lab/gpt-4o')).toEqual(['lab/gpt-4o']);
  });

  it('keeps model_not_found for an unknown bare name, with a hint', () => {
    const err = failure(() => resolveCandidates(runtime({}, { OPENAI_API_KEY: 'sk-env' }), 'no-such-model', null));
    expect(err).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    expect(err.message).toContain("'<provider>/<model>'");
  });

  it('names the provider that lists a model but has no key', () => {
    const err = failure(() => resolveCandidates(runtime(), 'gpt-4o-mini', null));
    expect(err.code).toBe('model_not_found');
    expect(err.message).toContain('listed for openai/gpt-4o-mini');
  });

  it('counts a provider only for models one of its keys serves', () => {
    const config = runtime({ providers: { openai: { keys: [{ value: 'sk-big', models: ['gpt-4o'] }] }, lab: LAB } });
    expect(failure(() => resolveCandidates(config, 'gpt-4o-mini', null)).code).toBe('model_not_found');
    expect(failure(() => resolveCandidates(config, 'gpt-4o', null)).code).toBe('ambiguous_model');
  });

  it('ignores unconfigured built-in providers, even keyless ones', () => {
    // ollama needs no key, but nobody set it up: a bare name must not reach it.
    const config = runtime({}, { OPENAI_API_KEY: 'sk-env' });
    expect(lookupBareModel(config, 'gpt-4o-mini')).toEqual({ kind: 'one', name: 'openai/gpt-4o-mini' });
    const keyless = runtime({ providers: { ollama: { models: ['llama3.2'] } } });
    expect(labels(keyless, 'llama3.2')).toEqual(['ollama/llama3.2']);
  });

  it('keeps provider_not_found for an unknown prefix, and resolves a namespaced id one provider serves', () => {
    const config = runtime({ providers: { openrouter: { api_key: 'or-key' } } });
    expect(failure(() => resolveCandidates(config, 'nosuch/gpt-4o-mini', null)).code).toBe('provider_not_found');
    expect(labels(config, 'meta-llama/llama-3.1-8b-instruct')).toEqual(['openrouter/meta-llama/llama-3.1-8b-instruct']);
  });

  it("does not read OpenRouter's price aliases or namespaced ids as bare names", () => {
    const config = runtime({ providers: { openrouter: { api_key: 'or-key' } } }, { OPENAI_API_KEY: 'sk-env' });
    // `openai/gpt-4o` in OpenRouter's list is the openai provider's name; `gpt-4o` is OpenAI's alone.
    expect(labels(config, 'gpt-4o')).toEqual(['openai/gpt-4o']);
    // `claude-2` is a price alias in OpenRouter's list, not an id its API takes.
    expect(failure(() => resolveCandidates(config, 'claude-2', null)).code).toBe('model_not_found');
  });

  it('reads Azure by its listed deployments only, not the catalogue', () => {
    const azure = { api_key: 'az', base_url: 'https://x.openai.azure.com' };
    const catalogueOnly = runtime({ providers: { azure } }, { OPENAI_API_KEY: 'sk-env' });
    expect(labels(catalogueOnly, 'o3-mini')).toEqual(['openai/o3-mini']);
    const listed = runtime({ providers: { azure: { ...azure, models: ['gpt-4o-mini'] } } }, { OPENAI_API_KEY: 'sk-env' });
    const err = failure(() => resolveCandidates(listed, 'gpt-4o-mini', null));
    expect(err.code).toBe('ambiguous_model');
    expect(err.message).toContain('azure/gpt-4o-mini, openai/gpt-4o-mini');
  });

  it("does not count Claude in the Gemini API's catalogue", () => {
    const config = runtime({}, { GEMINI_API_KEY: 'g', ANTHROPIC_API_KEY: 'a' });
    expect(labels(config, 'claude-sonnet-4-5')).toEqual(['anthropic/claude-sonnet-4-5']);
    expect(labels(config, 'gemini-2.5-flash')).toEqual(['gemini/gemini-2.5-flash']);
  });

  it('is computed once per config version', () => {
    const config = runtime({ providers: { lab: LAB } }, { OPENAI_API_KEY: 'sk-env' });
    expect(lookupBareModel(config, 'gpt-4o')).toBe(lookupBareModel(config, 'gpt-4o'));
    const next = runtime({}, { OPENAI_API_KEY: 'sk-env' });
    expect(lookupBareModel(next, 'gpt-4o')).toEqual({ kind: 'one', name: 'openai/gpt-4o' });
  });
});

describe('a bare name in request fallbacks', () => {
  it('is accepted when it resolves, and planned as its target once', () => {
    const config = runtime({ providers: { lab: LAB } }, { OPENAI_API_KEY: 'sk-env' });
    expect(() => checkRequestFallbacks(config, null, ['llama-local', 'gpt-4o-mini'])).not.toThrow();
    const groups = buildCandidateGroups(config, 'openai/gpt-4o-mini', null, null, ['gpt-4o-mini', 'llama-local']);
    expect(groups.map((group) => group.name)).toEqual(['openai/gpt-4o-mini', 'lab/llama-local']);
  });

  it('is a 400 naming the candidates when ambiguous, and a 400 when unknown', () => {
    const config = runtime({ providers: { lab: LAB } }, { OPENAI_API_KEY: 'sk-env' });
    const ambiguous = failure(() => checkRequestFallbacks(config, null, ['gpt-4o']));
    expect(ambiguous).toMatchObject({ status: 400, code: 'invalid_fallback', param: 'fallbacks[0]' });
    expect(ambiguous.message).toContain('lab/gpt-4o, openai/gpt-4o');
    expect(failure(() => checkRequestFallbacks(config, null, ['openai/gpt-4o', 'nothing-here'])).param).toBe('fallbacks[1]');
  });
});

describe('a bare name on a dialect with its own vendor (Anthropic, Gemini)', () => {
  const vertex = { api_key: 'token', project: 'p', region: 'us-east5' };

  it("is the dialect's vendor when it serves the name, as before", () => {
    const config = runtime({ providers: { vertex } }, { ANTHROPIC_API_KEY: 'a' });
    expect(resolveModelName(config, 'claude-sonnet-4-5', 'anthropic')).toBe('anthropic/claude-sonnet-4-5');
  });

  it('is the dialect vendor for names no configured provider lists (newer than the catalogue)', () => {
    expect(resolveModelName(runtime(), 'claude-opus-99', 'anthropic')).toBe('anthropic/claude-opus-99');
    expect(resolveModelName(runtime(), 'gemini-9-flash', 'gemini')).toBe('gemini/gemini-9-flash');
  });

  it('is another provider when it alone serves the name', () => {
    expect(resolveModelName(runtime({ providers: { vertex } }), 'claude-sonnet-4-5', 'anthropic')).toBe('vertex/claude-sonnet-4-5');
    expect(resolveModelName(runtime({}, { OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' }), 'gpt-4o-mini', 'anthropic')).toBe('openai/gpt-4o-mini');
  });

  it('leaves routes, qualified names and unknown prefixes as they are', () => {
    const config = runtime({ routes: { 'claude-sonnet-4-5': { targets: [{ model: 'openai/gpt-4o' }] } } }, { ANTHROPIC_API_KEY: 'a' });
    expect(resolveModelName(config, 'claude-sonnet-4-5', 'anthropic')).toBe('claude-sonnet-4-5');
    expect(resolveModelName(config, 'openai/gpt-4o', 'anthropic')).toBe('openai/gpt-4o');
    expect(resolveModelName(config, 'nosuch/x', 'anthropic')).toBe('nosuch/x');
  });
});
