import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type RuntimeConfig } from '../../src/core/config.js';
import { configFileSchema } from '../../src/config/schema.js';
import { keyCreateSchema, keyPatchSchema } from '../../src/governance/governance-schemas.js';
import { refusedModel, type RuleSubject } from '../../src/governance/key-models.js';

function runtime(file: unknown): RuntimeConfig {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(file) }, {}, 1);
}

const PROVIDERS = {
  openai: { api_key: 'sk-a' },
  groq: { api_key: 'gsk-a' },
  lab: { type: 'vllm', base_url: 'http://10.0.0.5:8000/v1', models: ['llama-local'] },
};

const ROUTES = {
  'chat-default': { targets: [{ model: 'openai/gpt-4o-mini' }], fallbacks: ['groq/llama-3.1-8b-instant'] },
  // A chain: cheap falls back to the route above, which falls back in turn.
  cheap: { targets: [{ model: 'lab/llama-local' }], fallbacks: ['chat-default'] },
  'loop-a': { targets: [{ model: 'openai/gpt-4o' }], fallbacks: ['loop-b'] },
  'loop-b': { targets: [{ model: 'openai/gpt-4o' }], fallbacks: ['loop-a'] },
  'mirror/*': { targets: [{ model: 'openai/*' }] },
};

const config = runtime({ providers: PROVIDERS, routes: ROUTES });

function subject(overrides: Partial<RuleSubject> = {}): RuleSubject {
  return { operation: 'chat', key: { id: 'vk_1', name: 'k', metadata: {} }, team: () => null, metadata: null, ...overrides };
}

function check(patterns: string[], model: string, fallbacks: string[] = [], on: RuntimeConfig = config, who = subject()) {
  return refusedModel(on, patterns, model, fallbacks, who);
}

describe('a key whose models list a route', () => {
  it('may use that route, whatever it reaches, and only that route', () => {
    expect(check(['chat-default'], 'chat-default')).toBeNull();
    expect(check(['chat-default'], 'cheap')).toMatchObject({ param: 'model', requested: 'cheap', route: true, reaches: 'lab/llama-local' });
    expect(check(['chat-default'], 'openai/gpt-4o-mini')).toMatchObject({ route: false, reaches: 'openai/gpt-4o-mini' });
  });

  it('allows a route it does not list when every target and fallback is allowed', () => {
    expect(check(['openai/gpt-4o-mini', 'groq/llama-3.1-8b-instant'], 'chat-default')).toBeNull();
    expect(check(['openai/*', 'groq/*'], 'chat-default')).toBeNull();
  });

  it('refuses a route one of whose fallbacks it does not allow, naming that fallback', () => {
    expect(check(['openai/gpt-4o-mini'], 'chat-default')).toEqual({
      param: 'model',
      requested: 'chat-default',
      route: true,
      reaches: 'groq/llama-3.1-8b-instant',
      rule: null,
    });
  });

  it('follows fallback routes, which a key may also allow by name', () => {
    expect(check(['lab/llama-local', 'openai/gpt-4o-mini'], 'cheap')).toMatchObject({ reaches: 'groq/llama-3.1-8b-instant' });
    expect(check(['lab/llama-local', 'openai/gpt-4o-mini', 'groq/llama-3.1-8b-instant'], 'cheap')).toBeNull();
    expect(check(['lab/llama-local', 'chat-default'], 'cheap')).toBeNull();
  });

  it('cuts fallback cycles', () => {
    expect(check(['openai/gpt-4o'], 'loop-a')).toBeNull();
    expect(check(['openai/gpt-4o-mini'], 'loop-a')).toMatchObject({ reaches: 'openai/gpt-4o' });
  });

  it('reads a pattern route with the wildcard filled in', () => {
    expect(check(['openai/gpt-4o'], 'mirror/gpt-4o')).toBeNull();
    expect(check(['openai/gpt-4o'], 'mirror/o1')).toMatchObject({ requested: 'mirror/o1', reaches: 'openai/o1' });
  });

  it('allows everything with an empty list, and a route listed before it exists once it does', () => {
    expect(check([], 'chat-default', ['groq/x'])).toBeNull();
    const before = runtime({ providers: PROVIDERS });
    expect(check(['later'], 'openai/gpt-4o', [], before)).toMatchObject({ reaches: 'openai/gpt-4o' });
    const after = runtime({ providers: PROVIDERS, routes: { later: { targets: [{ model: 'groq/llama-3.1-8b-instant' }] } } });
    expect(check(['later'], 'later', [], after)).toBeNull();
  });
});

describe("a request's own fallbacks", () => {
  it('must be allowed too, routes expanded, bare names resolved as the call stage resolves them', () => {
    expect(check(['openai/*'], 'openai/gpt-4o', ['openai/gpt-4o-mini'])).toBeNull();
    expect(check(['openai/*'], 'openai/gpt-4o', ['groq/llama-3.1-8b-instant'])).toMatchObject({
      param: 'fallbacks[0]',
      reaches: 'groq/llama-3.1-8b-instant',
    });
    expect(check(['openai/*'], 'openai/gpt-4o', ['openai/o1', 'chat-default'])).toMatchObject({
      param: 'fallbacks[1]',
      requested: 'chat-default',
      route: true,
      reaches: 'groq/llama-3.1-8b-instant',
    });
    // `llama-local` is bare: only the lab provider lists it.
    expect(check(['openai/*'], 'openai/gpt-4o', ['llama-local'])).toMatchObject({ param: 'fallbacks[0]', reaches: 'lab/llama-local' });
    expect(check(['openai/*', 'lab/*'], 'openai/gpt-4o', ['llama-local'])).toBeNull();
  });
});

describe('routing rules', () => {
  const rules = runtime({
    providers: PROVIDERS,
    routes: ROUTES,
    routing_rules: [
      { name: 'vip', when: { model: 'openai/gpt-4o-mini', key: 'vip-key' }, route_to: 'openai/gpt-4o' },
      { name: 'tagged', when: { model: 'openai/gpt-4o-mini', metadata: { tier: 'free' } }, route_to: 'lab/llama-local' },
      { name: 'saver', when: { model: 'openai/gpt-4o-mini', key_budget_used_pct_gte: 90 }, route_to: 'chat-default' },
      { name: 'always', when: { model: 'openai/o1' }, route_to: 'openai/gpt-4o' },
      { name: 'after-always', when: { model: 'openai/o1' }, route_to: 'groq/llama-3.1-8b-instant' },
    ],
  });

  it('count where they may send the request: a budget condition may hold at any time', () => {
    expect(check(['openai/gpt-4o-mini'], 'openai/gpt-4o-mini', [], rules)).toMatchObject({
      param: 'model',
      rule: 'saver',
      requested: 'chat-default',
      route: true,
      reaches: 'groq/llama-3.1-8b-instant',
    });
    expect(check(['openai/gpt-4o-mini', 'chat-default'], 'openai/gpt-4o-mini', [], rules)).toBeNull();
  });

  it('are left out when what the request already says rules them out (key, metadata)', () => {
    const vip = subject({ key: { id: 'vk_2', name: 'vip-key', metadata: {} } });
    expect(check(['openai/gpt-4o-mini', 'chat-default'], 'openai/gpt-4o-mini', [], rules, vip)).toMatchObject({ rule: 'vip', reaches: 'openai/gpt-4o' });
    const free = subject({ metadata: { tier: 'free' } });
    expect(check(['openai/gpt-4o-mini', 'chat-default'], 'openai/gpt-4o-mini', [], rules, free)).toMatchObject({ rule: 'tagged', reaches: 'lab/llama-local' });
    const freeByKey = subject({ key: { id: 'vk_3', name: 'k3', metadata: { tier: 'free' } } });
    expect(check(['openai/gpt-4o-mini', 'chat-default'], 'openai/gpt-4o-mini', [], rules, freeByKey)).toMatchObject({ rule: 'tagged' });
  });

  it('stop at the first rule that surely applies, as the route stage does', () => {
    expect(check(['openai/o1', 'openai/gpt-4o'], 'openai/o1', [], rules)).toBeNull();
  });
});

describe('key validation', () => {
  it('takes route names, existing or not, next to <provider>/<model> names and patterns', () => {
    expect(keyCreateSchema.parse({ name: 'k', models: ['chat-default', 'openai/*', 'groq/llama-3.1-8b-instant', '*', 'chat-*'] }).models).toHaveLength(5);
    expect(keyPatchSchema.parse({ models: ['not-yet-a-route'] }).models).toEqual(['not-yet-a-route']);
  });

  it('refuses what is neither', () => {
    for (const bad of ['/gpt-4o', 'two words', 'a**b', '']) {
      const result = keyCreateSchema.safeParse({ name: 'k', models: [bad] });
      expect(result.success, bad).toBe(false);
      expect(result.error?.issues[0]?.path).toEqual(['models', 0]);
    }
  });
});
