import { calcPrice, findProvider } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type ProviderRuntime } from '../../src/core/config.js';
import { configFileSchema, type ConfigInput } from '../../src/config/schema.js';
import { costOf, unitPrices } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI, type TokenUsage } from '../../src/core/usage.js';

function providerFrom(file: ConfigInput, name = 'openai'): ProviderRuntime {
  const provider = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(file) }, {}, 1).providers.get(name);
  if (!provider) throw new Error(`no provider ${name}`);
  return provider;
}

const openai = providerFrom({});

/** A provider of another catalogue vendor, for vendors whose adapters are not registered yet. */
function asVendor(id: string, catalogId?: string | null): ProviderRuntime {
  return { ...openai, name: id, vendor: { ...openai.vendor, id, ...(catalogId === undefined ? {} : { catalogId }) } };
}

function usage(input: number, output: number, cacheRead = 0, cacheWrite = 0): TokenUsage {
  return { input_tokens: input, output_tokens: output, cache_read_tokens: cacheRead, cache_write_tokens: cacheWrite };
}

function reference(u: TokenUsage, model: string, providerId: string): number {
  const result = calcPrice({ ...u }, model, { providerId });
  if (!result) throw new Error(`calcPrice knows no ${providerId}/${model}`);
  return result.total_price;
}

/** Both sides are rounded to 1e-9 by costOf; allow that rounding. */
function expectUsd(actual: number, expected: number): void {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(1.01e-9);
}

describe('tokenUsageFromOpenAI', () => {
  it('keeps cached tokens inside the prompt total and reasoning inside the completion total', () => {
    const mapped = tokenUsageFromOpenAI({
      prompt_tokens: 1000,
      completion_tokens: 500,
      total_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 400, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 300, audio_tokens: 0 },
    });
    expect(mapped).toEqual({ input_tokens: 1000, output_tokens: 500, cache_read_tokens: 400, cache_write_tokens: 0, output_reasoning_tokens: 300 });
  });

  it("adds reasoning counted beside completion_tokens (xAI's total is prompt + completion + reasoning)", () => {
    const details = { completion_tokens_details: { reasoning_tokens: 2809 } };
    expect(tokenUsageFromOpenAI({ prompt_tokens: 10120, completion_tokens: 1499, total_tokens: 14428, ...details }).output_tokens).toBe(4308);
    // A total that leaves the reasoning inside the completion (OpenAI's), or no total, adds nothing.
    expect(tokenUsageFromOpenAI({ prompt_tokens: 10120, completion_tokens: 4308, total_tokens: 14428, ...details }).output_tokens).toBe(4308);
    expect(tokenUsageFromOpenAI({ prompt_tokens: 10120, completion_tokens: 4308, ...details } as never).output_tokens).toBe(4308);
  });

  it("reads Moonshot's top-level cached_tokens as cache reads, OpenAI's field first", () => {
    expect(tokenUsageFromOpenAI({ prompt_tokens: 2006, completion_tokens: 3, total_tokens: 2009, cached_tokens: 1920 }).cache_read_tokens).toBe(1920);
    const both = { prompt_tokens: 2006, completion_tokens: 3, total_tokens: 2009, cached_tokens: 1920, prompt_tokens_details: { cached_tokens: 1000 } };
    expect(tokenUsageFromOpenAI(both).cache_read_tokens).toBe(1000);
  });

  it('handles a bare usage, null details and cache writes reported by an adapter', () => {
    expect(tokenUsageFromOpenAI({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_tokens_details: null })).toEqual(usage(10, 2));
    expect(
      tokenUsageFromOpenAI({ prompt_tokens: 100, completion_tokens: 1, total_tokens: 101, prompt_tokens_details: { cached_tokens: 20, cache_write_tokens: 30 } }),
    ).toEqual(usage(100, 1, 20, 30));
  });

  it('never lets the parts exceed the total', () => {
    const mapped = tokenUsageFromOpenAI({ prompt_tokens: 5, completion_tokens: 0, total_tokens: 5, prompt_tokens_details: { cached_tokens: 50 } });
    expect(mapped.input_tokens).toBe(50);
    expect(mapped.cache_read_tokens).toBe(50);
  });
});

describe('costOf from the catalogue', () => {
  it('equals calcPrice for openai gpt-4o and gpt-4o-mini', () => {
    for (const model of ['gpt-4o', 'gpt-4o-mini']) {
      for (const u of [usage(1000, 200), usage(123_456, 7_890, 100_000), usage(0, 0), usage(1, 1, 1)]) {
        const cost = costOf(openai, model, u);
        expect(cost.source).toBe('catalog');
        expect(cost.priced).toBe(true);
        expectUsd(cost.usd, reference(u, model, 'openai'));
      }
    }
  });

  it('prices cached tokens at the cache-read price, not also at the full input price', () => {
    const model = 'gpt-4o';
    const plain = costOf(openai, model, usage(1_000_000, 0)).usd;
    const allCached = costOf(openai, model, usage(1_000_000, 0, 1_000_000)).usd;
    const halfCached = costOf(openai, model, usage(1_000_000, 0, 500_000)).usd;
    const entry = findProvider({ providerId: 'openai' })?.models.find((m) => m.id === model);
    const prices = entry?.prices as { input_mtok: number; cache_read_mtok: number };
    expectUsd(plain, prices.input_mtok);
    expectUsd(allCached, prices.cache_read_mtok);
    expectUsd(halfCached, (prices.input_mtok + prices.cache_read_mtok) / 2);
    expect(allCached).toBeLessThan(plain);
    // Same usage through the OpenAI shape.
    const mapped = tokenUsageFromOpenAI({ prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000, prompt_tokens_details: { cached_tokens: 1_000_000 } });
    expectUsd(costOf(openai, model, mapped).usd, allCached);
  });

  it('equals calcPrice for tiered prices and cache writes (anthropic)', () => {
    const anthropic = asVendor('anthropic');
    const model = 'claude-sonnet-4-5';
    for (const u of [usage(1000, 100), usage(4740, 255, 0, 4735), usage(250_000, 1000, 100_000, 50_000), usage(200_000, 10), usage(200_001, 10)]) {
      const cost = costOf(anthropic, model, u);
      expect(cost.source).toBe('catalog');
      expectUsd(cost.usd, reference(u, model, 'anthropic'));
    }
    // Past the 200k threshold the dearer tier applies.
    expect(costOf(anthropic, model, usage(200_001, 0)).usd).toBeGreaterThan(costOf(anthropic, model, usage(200_000, 0)).usd * 1.5);
  });

  it('equals calcPrice for time-dependent prices (deepseek) and for reasoning and audio parts', () => {
    const deepseek = providerFrom({}, 'deepseek');
    const u = usage(5000, 700, 1000);
    expectUsd(costOf(deepseek, 'deepseek-chat', u).usd, reference(u, 'deepseek-chat', 'deepseek'));

    const audio: TokenUsage = { ...usage(1000, 500, 200), input_audio_tokens: 300, output_audio_tokens: 100 };
    for (const model of ['gpt-audio', 'gpt-realtime']) {
      const expected = calcPrice({ ...audio, cache_audio_read_tokens: 0, cache_audio_write_tokens: 0, output_audio_reasoning_tokens: 0 }, model, { providerId: 'openai' });
      expect(expected).not.toBeNull();
      expectUsd(costOf(openai, model, audio).usd, expected?.total_price ?? NaN);
      // Audio is dearer than text for these models.
      expect(costOf(openai, model, audio).usd).toBeGreaterThan(costOf(openai, model, usage(1000, 500, 200)).usd);
    }
    const image: TokenUsage = { ...usage(2000, 10, 500), input_image_tokens: 1000 };
    const expected = calcPrice({ ...image, cache_image_read_tokens: 0, cache_image_write_tokens: 0 }, 'gpt-realtime', { providerId: 'openai' });
    expectUsd(costOf(openai, 'gpt-realtime', image).usd, expected?.total_price ?? NaN);

    const reasoning = asVendor('perplexity');
    const r: TokenUsage = { ...usage(1000, 800), output_reasoning_tokens: 500 };
    expectUsd(costOf(reasoning, 'sonar-deep-research', r).usd, reference(r, 'sonar-deep-research', 'perplexity'));
  });

  it('charges the per-request fee some models have', () => {
    const perplexity = asVendor('perplexity');
    const u = usage(100, 100);
    expectUsd(costOf(perplexity, 'sonar', u).usd, reference(u, 'sonar', 'perplexity'));
    expect(unitPrices(perplexity, 'sonar')?.request_usd).toBeGreaterThan(0);
  });

  it('equals calcPrice for every model of several catalogue providers', () => {
    const samples = [usage(1234, 567), usage(300_000, 4321, 12_345), usage(50_000, 10, 1000, 2000)];
    let checked = 0;
    for (const providerId of ['openai', 'anthropic', 'google', 'mistral', 'groq', 'x-ai', 'openrouter', 'aws']) {
      const provider = asVendor(providerId);
      for (const model of findProvider({ providerId })?.models ?? []) {
        for (const u of samples) {
          const expected = calcPrice({ ...u }, model.id, { providerId });
          if (!expected) continue;
          const cost = costOf(provider, model.id, u);
          expect(cost.source, `${providerId}/${model.id}`).toBe('catalog');
          expectUsd(cost.usd, expected.total_price);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });
});

describe('costOf precedence', () => {
  const override = { input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 0.5, cache_write_per_mtok: 1.5 };

  it('an operator price for the model wins over the catalogue', () => {
    const provider = providerFrom({ providers: { openai: { prices: { 'gpt-4o': override } } } });
    const cost = costOf(provider, 'gpt-4o', usage(1_000_000, 1_000_000, 200_000, 100_000), { input_per_mtok: 99, output_per_mtok: 99 });
    expect(cost).toEqual({ usd: 0.7 * 1 + 0.2 * 0.5 + 0.1 * 1.5 + 2, priced: true, source: 'provider-override' });
    expect(unitPrices(provider, 'gpt-4o')).toEqual({ input_per_mtok: 1.5, output_per_mtok: 2, request_usd: 0 });
  });

  it('cached and cache-write prices default to the input price', () => {
    const provider = providerFrom({ providers: { openai: { prices: { custom: { input_per_mtok: 3, output_per_mtok: 4 } } } } });
    expect(costOf(provider, 'custom', usage(1_000_000, 0, 400_000, 100_000)).usd).toBe(3);
  });

  it('the catalogue wins over the route price and the provider default', () => {
    const provider = providerFrom({ providers: { openai: { prices: { '*': override } } } });
    const u = usage(1000, 100);
    const cost = costOf(provider, 'gpt-4o-mini', u, { input_per_mtok: 99, output_per_mtok: 99 });
    expect(cost.source).toBe('catalog');
    expectUsd(cost.usd, reference(u, 'gpt-4o-mini', 'openai'));
  });

  it('an unknown model takes the route price, then the provider default', () => {
    const provider = providerFrom({ providers: { openai: { prices: { '*': { input_per_mtok: 10, output_per_mtok: 20 } } } } });
    const u = usage(1_000_000, 500_000);
    expect(costOf(provider, 'my-finetune-xyz', u, { input_per_mtok: 1, output_per_mtok: 2 })).toEqual({ usd: 2, priced: true, source: 'route' });
    expect(costOf(provider, 'my-finetune-xyz', u, null)).toEqual({ usd: 20, priced: true, source: 'provider-default' });
    expect(costOf(provider, 'my-finetune-xyz', u)).toEqual({ usd: 20, priced: true, source: 'provider-default' });
  });

  it('an unpriced model costs 0 and says so', () => {
    expect(costOf(openai, 'my-finetune-xyz', usage(1000, 1000))).toEqual({ usd: 0, priced: false, source: 'none' });
    expect(unitPrices(openai, 'my-finetune-xyz')).toBeNull();
    // A vendor without a catalogue entry (local servers) falls through to the route price.
    const local = asVendor('vllm', null);
    expect(costOf(local, 'gpt-4o', usage(1000, 1000)).source).toBe('none');
    expect(costOf(local, 'gpt-4o', usage(1_000_000, 0), { input_per_mtok: 0.1, output_per_mtok: 0.1 }).usd).toBe(0.1);
  });

  it('rounds to 1e-9 USD', () => {
    const provider = providerFrom({ providers: { openai: { prices: { m: { input_per_mtok: 1 / 3, output_per_mtok: 0.0001 } } } } });
    expect(costOf(provider, 'm', usage(1, 0)).usd).toBe(0.000000333);
    expect(costOf(provider, 'm', usage(0, 1)).usd).toBe(0);
    expect(costOf(provider, 'm', usage(0, 5)).usd).toBe(0.000000001);
  });
});

describe('unitPrices', () => {
  it('agrees with costOf for flat catalogue prices', () => {
    for (const model of ['gpt-4o', 'gpt-4o-mini']) {
      const units = unitPrices(openai, model);
      expect(units).not.toBeNull();
      expectUsd(costOf(openai, model, usage(1_000_000, 0)).usd, units?.input_per_mtok ?? NaN);
      expectUsd(costOf(openai, model, usage(0, 1_000_000)).usd, units?.output_per_mtok ?? NaN);
      const u = usage(12_345, 678);
      expectUsd(costOf(openai, model, u).usd, (u.input_tokens * (units?.input_per_mtok ?? 0) + u.output_tokens * (units?.output_per_mtok ?? 0)) / 1e6);
    }
  });

  it('is an upper bound for tiered prices and cache writes', () => {
    const anthropic = asVendor('anthropic');
    const units = unitPrices(anthropic, 'claude-sonnet-4-5');
    expect(units).not.toBeNull();
    for (const u of [usage(1000, 100), usage(300_000, 64_000), usage(300_000, 64_000, 0, 300_000), usage(10_000, 10, 10_000)]) {
      const bound = (u.input_tokens * (units?.input_per_mtok ?? 0) + u.output_tokens * (units?.output_per_mtok ?? 0)) / 1e6;
      expect(costOf(anthropic, 'claude-sonnet-4-5', u).usd).toBeLessThanOrEqual(bound + 1e-9);
    }
  });

  it('follows the same precedence as costOf', () => {
    const provider = providerFrom({ providers: { openai: { prices: { '*': { input_per_mtok: 10, output_per_mtok: 20 } } } } });
    expect(unitPrices(provider, 'unknown-model', { input_per_mtok: 1, output_per_mtok: 2 })).toEqual({ input_per_mtok: 1, output_per_mtok: 2, request_usd: 0 });
    expect(unitPrices(provider, 'unknown-model')).toEqual({ input_per_mtok: 10, output_per_mtok: 20, request_usd: 0 });
    expect(unitPrices(provider, 'gpt-4o', { input_per_mtok: 1, output_per_mtok: 2 })?.input_per_mtok).not.toBe(1);
  });

  it('keeps each catalogue\'s price of a model apart, asked again and in either order', () => {
    // Pricers are kept by catalogue, then model: a model one catalogue lacks (cached as unpriced) stays priced in the
    // catalogue that has it, and the reverse.
    const anthropic = asVendor('anthropic');
    for (let round = 0; round < 2; round++) {
      expect(unitPrices(openai, 'claude-sonnet-4-5')).toBeNull();
      expect(unitPrices(anthropic, 'claude-sonnet-4-5')?.input_per_mtok).toBeGreaterThan(0);
      expect(unitPrices(anthropic, 'gpt-4o-mini')).toBeNull();
      expectUsd(costOf(openai, 'gpt-4o-mini', usage(1000, 100)).usd, reference(usage(1000, 100), 'gpt-4o-mini', 'openai'));
    }
  });
});
