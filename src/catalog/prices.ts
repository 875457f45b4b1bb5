import { calcPrice, type ModelInfo, type ModelPrice, type PriceCalculationResult, type Provider, type TieredPrices, type Usage } from '@pydantic/genai-prices';
import type { TokenUsage } from '../core/usage.js';
import type { ProviderRuntime } from '../core/config.js';
import type { PriceConfig } from '../core/config.js';
import type { VendorDefinition } from '../core/provider.js';

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

export interface Cost {
  usd: number;
  priced: boolean;
  source: 'provider-override' | 'upstream' | 'catalog' | 'route' | 'provider-default' | 'none';
}

export interface UnitPrices {
  /** The dearest rate a prompt token can be billed at (the input price, or the cache-write price when higher). */
  input_per_mtok: number;
  output_per_mtok: number;
  /** A flat fee per request some models charge (catalogue `requests_kcount`); 0 for most. */
  request_usd: number;
}

const round = (usd: number): number => Math.round(usd * 1e9) / 1e9;

// ---------------------------------------------------------------------------------------------------------
// Operator prices (config): USD per million tokens.

/**
 * The operator's rates applied to the usage: cache reads and writes at their own rates (the input rate when unset),
 * writes to Anthropic's 1-hour cache at `cache_write_1h_per_mtok` (the cache-write rate when unset, as before the field
 * existed), and web searches at `web_search_per_1k` per thousand (free when unset).
 */
function operatorCost(price: PriceConfig, usage: Sanitized): number {
  const cachedRate = price.cached_input_per_mtok ?? price.input_per_mtok;
  const writeRate = price.cache_write_per_mtok ?? price.input_per_mtok;
  const oneHourRate = price.cache_write_1h_per_mtok ?? writeRate;
  const uncached = usage.input - usage.cacheRead - usage.cacheWrite;
  const fiveMinute = usage.cacheWrite - usage.cacheWrite1h;
  const tokens = uncached * price.input_per_mtok + usage.cacheRead * cachedRate + fiveMinute * writeRate + usage.cacheWrite1h * oneHourRate + usage.output * price.output_per_mtok;
  return tokens / 1e6 + (usage.webSearches * (price.web_search_per_1k ?? 0)) / 1e3;
}

function operatorUnits(price: PriceConfig): UnitPrices {
  return {
    input_per_mtok: Math.max(price.input_per_mtok, price.cached_input_per_mtok ?? 0, price.cache_write_per_mtok ?? 0, price.cache_write_1h_per_mtok ?? 0),
    output_per_mtok: price.output_per_mtok,
    request_usd: 0,
  };
}

// ---------------------------------------------------------------------------------------------------------
// The bundled catalogue (@pydantic/genai-prices).
//
// calcPrice is the source of truth, but it costs 10-40 µs a call (most of it in its generic unit algebra), too
// much for every request. For a model whose price does not depend on the date or time, its price is linear in
// the four basic usage parts within each tier band (tiers switch on the prompt's total input tokens). So per
// (catalogue provider, model) we ask calcPrice once for the rate of each part in each band, and a request then
// costs a handful of multiplications. Models with date/time-dependent prices, and usage carrying the optional
// audio/image/reasoning parts or web searches, go to calcPrice itself.

/** Rates of one tier band, USD per million tokens, plus the flat per-request fee. */
interface Band {
  /** The band applies when input_tokens > above (the base band: -Infinity). */
  above: number;
  fixed: number;
  input: number;
  cacheRead: number;
  cacheWrite: number;
  /** A write to Anthropic's 1-hour cache (see withOneHourWrites). */
  cacheWrite1h: number;
  output: number;
}

interface CatalogPricer {
  catalogId: string;
  model: string;
  /** The catalogue provider with only this model, its prices as `completed` completes them: calcPrice's. */
  provider: Provider;
  /** Rate bands, ascending; null when the price depends on the date or time of day (always ask calcPrice). */
  bands: Band[] | null;
  units: UnitPrices;
}

/**
 * Compiled pricers by catalogue, then model. Bounded per catalogue: model names come from clients, so a flood of
 * made-up names must not grow the maps for ever (the catalogues are the vendors' own, a fixed few). Two lookups by the
 * strings the config and the request already hold, where a key made of both (`${catalogId}\0${model}`) was a new
 * string to hash on every lookup: two to four a keyed request (bench/price-lookup.ts).
 */
const MAX_CACHED = 10_000;
const pricers = new Map<string, Map<string, CatalogPricer | null>>();

function catalogIdOf(vendor: VendorDefinition): string | null {
  return vendor.catalogId === undefined ? vendor.id : vendor.catalogId;
}

function isTiered(value: ModelPrice[string]): value is TieredPrices {
  return typeof value === 'object' && value !== null;
}

/** The flat price of every key for a prompt of `inputTokens` tokens, as genai-prices picks tiers. */
function flatPrices(prices: ModelPrice, inputTokens: number): ModelPrice {
  const flat: ModelPrice = {};
  for (const [key, value] of Object.entries(prices)) {
    if (!isTiered(value)) {
      flat[key] = value;
      continue;
    }
    let price = value.base;
    for (const tier of [...value.tiers].sort((a, b) => a.start - b.start)) if (inputTokens > tier.start) price = tier.price;
    flat[key] = price;
  }
  return flat;
}

/**
 * A Claude model's prices with a rate for 1-hour cache writes: the catalogue's where it has one, else the rule
 * Anthropic documents (prompt caching pricing: a 1-hour write costs 2x the base input price, a 5-minute one 1.25x).
 * Without it genai-prices bills a 1-hour write at the plain cache-write rate, the 5-minute one. Claude on Vertex
 * AI and on Bedrock (the `google` and `aws` catalogues) mostly lack the 1-hour rate. Other models never report
 * 1-hour writes and keep their prices as they are.
 */
function withOneHourWrites(model: ModelInfo, prices: ModelPrice): ModelPrice {
  const input = prices.input_mtok;
  if (!/claude/i.test(model.id) || prices.cache_write_1h_mtok !== undefined || prices.cache_write_mtok === undefined || input === undefined) return prices;
  const doubled = isTiered(input) ? { base: input.base * 2, tiers: input.tiers.map((tier) => ({ ...tier, price: tier.price * 2 })) } : input * 2;
  return { ...prices, cache_write_1h_mtok: doubled };
}

/**
 * Catalogues where Claude runs Anthropic's own server tools and the vendor bills them at Anthropic's rates: Vertex AI
 * (`google`) and Bedrock (`aws`). Anthropic's web search costs $10 per 1,000 searches (platform.claude.com, web search
 * tool pricing) and Claude on Vertex AI bills its searches at the same rate; the bundled catalogue lists that rate for
 * Anthropic's models only, so without it a search Claude ran there, reported in usage.server_tool_use, cost nothing.
 */
const CLAUDE_ELSEWHERE = new Set(['google', 'aws']);
const CLAUDE_WEB_SEARCH_PER_K = 10;

/** A Claude model's prices on Vertex AI or Bedrock with a per-search rate where the catalogue has none (see above). */
function withWebSearches(catalogId: string, model: ModelInfo, prices: ModelPrice): ModelPrice {
  if (!CLAUDE_ELSEWHERE.has(catalogId) || !/claude/i.test(model.id) || prices.web_searches_kcount !== undefined) return prices;
  return { ...prices, web_searches_kcount: CLAUDE_WEB_SEARCH_PER_K };
}

/** A model's prices completed with the rates its catalogue leaves out (1-hour cache writes, web searches). */
function completed(catalogId: string, model: ModelInfo, prices: ModelPrice): ModelPrice {
  return withWebSearches(catalogId, model, withOneHourWrites(model, prices));
}

/** One rate band per tier threshold, each probed with calcPrice on a one-model provider with flat prices. */
function bandsOf(provider: Provider, model: ModelInfo, prices: ModelPrice): Band[] {
  const thresholds = new Set<number>();
  for (const value of Object.values(prices)) if (isTiered(value)) for (const tier of value.tiers) thresholds.add(tier.start);
  const starts = [-Infinity, ...[...thresholds].sort((a, b) => a - b)];
  return starts.map((above) => {
    const probe: Provider = {
      id: provider.id,
      name: provider.name,
      api_pattern: provider.api_pattern,
      models: [{ id: model.id, match: { equals: model.id }, prices: flatPrices(prices, above === -Infinity ? 0 : above + 1) }],
    };
    const total = (usage: Usage): number => calcPrice(usage, model.id, { provider: probe })?.total_price ?? 0;
    const fixed = total({});
    const M = 1e6;
    return {
      above,
      fixed,
      input: total({ input_tokens: M }) - fixed,
      cacheRead: total({ input_tokens: M, cache_read_tokens: M }) - fixed,
      cacheWrite: total({ input_tokens: M, cache_write_tokens: M }) - fixed,
      cacheWrite1h: total({ input_tokens: M, cache_write_tokens: M, cache_write_1h_tokens: M }) - fixed,
      output: total({ output_tokens: M }) - fixed,
    };
  });
}

function unitsOf(bandSets: Band[][]): UnitPrices {
  const units: UnitPrices = { input_per_mtok: 0, output_per_mtok: 0, request_usd: 0 };
  for (const bands of bandSets) {
    for (const band of bands) {
      units.input_per_mtok = Math.max(units.input_per_mtok, band.input, band.cacheWrite, band.cacheWrite1h, band.cacheRead);
      units.output_per_mtok = Math.max(units.output_per_mtok, band.output);
      units.request_usd = Math.max(units.request_usd, band.fixed);
    }
  }
  units.input_per_mtok = round(units.input_per_mtok);
  units.output_per_mtok = round(units.output_per_mtok);
  units.request_usd = round(units.request_usd);
  return Object.freeze(units);
}

function compilePricer(catalogId: string, model: string): CatalogPricer | null {
  let found: PriceCalculationResult;
  try {
    found = calcPrice({}, model, { providerId: catalogId });
  } catch {
    return null;
  }
  // calcPrice matches provider ids loosely; only accept the provider we asked for (as catalog.ts does).
  if (!found || found.provider.id !== catalogId) return null;
  const { provider: catalogue, model: listed } = found;
  const info: ModelInfo = {
    ...listed,
    prices: Array.isArray(listed.prices)
      ? listed.prices.map((entry) => ({ ...entry, prices: completed(catalogId, listed, entry.prices) }))
      : completed(catalogId, listed, listed.prices),
  };
  const provider: Provider = { ...catalogue, models: [info] };
  try {
    if (Array.isArray(info.prices)) {
      // Prices that change by date or time of day: calcPrice per request; reservations take the dearest.
      return { catalogId, model, provider, bands: null, units: unitsOf(info.prices.map((entry) => bandsOf(provider, info, entry.prices))) };
    }
    const bands = bandsOf(provider, info, info.prices);
    return { catalogId, model, provider, bands, units: unitsOf([bands]) };
  } catch {
    return null;
  }
}

/** The catalogue's price for the model: the vendor's own catalogue first, then the ones it also resells. */
function pricerFor(vendor: VendorDefinition, model: string): CatalogPricer | null {
  const catalogId = catalogIdOf(vendor);
  if (!catalogId) return null;
  const own = pricerIn(catalogId, model);
  if (own || !vendor.catalogFallbacks) return own;
  for (const fallback of vendor.catalogFallbacks) {
    const found = pricerIn(fallback, model);
    if (found) return found;
  }
  return null;
}

function pricerIn(catalogId: string, model: string): CatalogPricer | null {
  let models = pricers.get(catalogId);
  const cached = models?.get(model);
  if (cached !== undefined) return cached;
  const pricer = compilePricer(catalogId, model);
  if (!models) pricers.set(catalogId, (models = new Map()));
  if (models.size >= MAX_CACHED) {
    const oldest = models.keys().next();
    if (!oldest.done) models.delete(oldest.value);
  }
  models.set(model, pricer);
  return pricer;
}

interface Sanitized {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Part of cacheWrite. */
  cacheWrite1h: number;
  /** Searches billed per search (a count, no part of the tokens). */
  webSearches: number;
  extras: boolean;
}

function sanitize(usage: TokenUsage): Sanitized {
  const cacheRead = count(usage.cache_read_tokens);
  const cacheWrite = count(usage.cache_write_tokens);
  return {
    input: Math.max(count(usage.input_tokens), cacheRead + cacheWrite),
    output: count(usage.output_tokens),
    cacheRead,
    cacheWrite,
    // The usage checks may have cut the writes (plausibleUsage); the 1-hour part stays within them.
    cacheWrite1h: Math.min(count(usage.cache_write_1h_tokens), cacheWrite),
    webSearches: count(usage.web_searches),
    extras:
      count(usage.input_audio_tokens) + count(usage.input_image_tokens) + count(usage.output_audio_tokens) +
        count(usage.output_image_tokens) + count(usage.output_reasoning_tokens) + count(usage.web_searches) > 0,
  };
}

/** The tier band a prompt of the usage's size falls in. */
function bandFor(bands: Band[], usage: Sanitized): Band {
  let band = bands[0] as Band;
  for (const candidate of bands) if (usage.input > candidate.above) band = candidate;
  return band;
}

function bandCost(bands: Band[], usage: Sanitized): number {
  const band = bandFor(bands, usage);
  const uncached = usage.input - usage.cacheRead - usage.cacheWrite;
  const fiveMinute = usage.cacheWrite - usage.cacheWrite1h;
  return (uncached * band.input + usage.cacheRead * band.cacheRead + fiveMinute * band.cacheWrite + usage.cacheWrite1h * band.cacheWrite1h + usage.output * band.output) / 1e6 + band.fixed;
}

/** The usage as genai-prices takes it, optional parts included (with the overlaps it asks for stated as 0). */
function fullUsage(usage: TokenUsage, basic: Sanitized): Usage {
  const full: Usage = {
    input_tokens: basic.input,
    output_tokens: basic.output,
    cache_read_tokens: basic.cacheRead,
    cache_write_tokens: basic.cacheWrite,
  };
  if (basic.cacheWrite1h) full.cache_write_1h_tokens = basic.cacheWrite1h;
  if (!basic.extras) return full;
  const inputAudio = count(usage.input_audio_tokens);
  const inputImage = count(usage.input_image_tokens);
  const outputAudio = count(usage.output_audio_tokens);
  const outputImage = count(usage.output_image_tokens);
  const reasoning = count(usage.output_reasoning_tokens);
  full.input_tokens = Math.max(basic.input, inputAudio + inputImage);
  full.output_tokens = Math.max(basic.output, reasoning, outputAudio + outputImage);
  if (inputAudio) Object.assign(full, { input_audio_tokens: inputAudio, cache_audio_read_tokens: 0, cache_audio_write_tokens: 0 });
  if (inputImage) Object.assign(full, { input_image_tokens: inputImage, cache_image_read_tokens: 0, cache_image_write_tokens: 0 });
  if (outputAudio) Object.assign(full, { output_audio_tokens: outputAudio, output_audio_reasoning_tokens: 0 });
  if (outputImage) Object.assign(full, { output_image_tokens: outputImage, output_image_reasoning_tokens: 0 });
  if (reasoning) full.output_reasoning_tokens = reasoning;
  // Searches are billed per search where the catalogue has a price for them (web_searches_kcount).
  const searches = count(usage.web_searches);
  if (searches) full.web_searches = searches;
  return full;
}

function askCalcPrice(pricer: CatalogPricer, usage: Usage): number | null {
  try {
    const result = calcPrice(usage, pricer.model, { provider: pricer.provider });
    return result && result.provider.id === pricer.catalogId ? result.total_price : null;
  } catch {
    return null;
  }
}

/**
 * The fee per request a Perplexity answer states it was charged (USD, a Pro Search's included), or null when it
 * states none: the catalogue's fee then stands. Perplexity's fee depends on the search context size (docs.perplexity.ai
 * pricing, request pricing: Sonar $5 / $8 / $12 per 1,000 at low / medium / high, Sonar Pro and Sonar Reasoning Pro
 * $6 / $10 / $14), and the bundled catalogue lists the high fee alone ("we just take the highest price shown"), so a
 * low-context request, Perplexity's default, was charged more than twice its fee.
 */
function statedRequestFee(pricer: CatalogPricer, usage: TokenUsage): number | null {
  if (pricer.catalogId !== 'perplexity') return null;
  const stated = usage.request_fee_usd;
  return typeof stated === 'number' && Number.isFinite(stated) && stated >= 0 ? stated : null;
}

/** The catalogue's flat fee per request for the usage (its tier band's, or calcPrice's for an empty usage). */
function listedRequestFee(pricer: CatalogPricer, usage: Sanitized): number {
  if (pricer.bands) return bandFor(pricer.bands, usage).fixed;
  return askCalcPrice(pricer, { input_tokens: 0, output_tokens: 0 }) ?? 0;
}

/** The catalogue's price for the usage, with the request fee the answer says applied in place of the listed one. */
function catalogCost(pricer: CatalogPricer, usage: TokenUsage): number | null {
  const listed = listedCost(pricer, usage);
  const fee = statedRequestFee(pricer, usage);
  if (listed === null || fee === null) return listed;
  return listed - listedRequestFee(pricer, sanitize(usage)) + fee;
}

function listedCost(pricer: CatalogPricer, usage: TokenUsage): number | null {
  const basic = sanitize(usage);
  if (!basic.extras && pricer.bands) return bandCost(pricer.bands, basic);
  const full = askCalcPrice(pricer, fullUsage(usage, basic));
  if (full !== null) return full;
  // Parts that do not add up for genai-prices: price the basic parts alone.
  if (pricer.bands) return bandCost(pricer.bands, basic);
  return askCalcPrice(pricer, fullUsage(usage, { ...basic, extras: false }));
}

// ---------------------------------------------------------------------------------------------------------

/**
 * What a request cost. Precedence: the operator's price for this provider and model > what the upstream says it
 * charged (OpenRouter's usage.cost: its bill, where the catalogue only estimates) > the bundled catalogue for the
 * provider's vendor > the route's price > the provider's `*` price > unpriced (0 USD, priced false).
 * USD, rounded to 1e-9.
 */
export function costOf(provider: ProviderRuntime, model: string, usage: TokenUsage, routePrice?: PriceConfig | null): Cost {
  const override = provider.prices.get(model);
  if (override) return { usd: round(operatorCost(override, sanitize(usage))), priced: true, source: 'provider-override' };
  const charged = usage.upstream_cost_usd;
  if (typeof charged === 'number' && Number.isFinite(charged) && charged >= 0) return { usd: round(charged), priced: true, source: 'upstream' };
  const pricer = pricerFor(provider.vendor, model);
  if (pricer) {
    const usd = catalogCost(pricer, usage);
    if (usd !== null) return { usd: round(usd), priced: true, source: 'catalog' };
  }
  if (routePrice) return { usd: round(operatorCost(routePrice, sanitize(usage))), priced: true, source: 'route' };
  const fallback = provider.prices.get('*');
  if (fallback) return { usd: round(operatorCost(fallback, sanitize(usage))), priced: true, source: 'provider-default' };
  return { usd: 0, priced: false, source: 'none' };
}

/**
 * Per-million-token prices the same lookup as costOf would use, for upper-bound reservations before the call;
 * null when unpriced. Upper bounds: `input_per_mtok` is the dearest rate a prompt token can be billed at (input
 * or cache write), and for catalogue models with tiered or date-dependent prices the dearest tier/period counts.
 * Audio and image parts (billed dearer by a few models) are not covered. Add `request_usd` once per request.
 */
export function unitPrices(provider: ProviderRuntime, model: string, routePrice?: PriceConfig | null): UnitPrices | null {
  const override = provider.prices.get(model);
  if (override) return operatorUnits(override);
  const pricer = pricerFor(provider.vendor, model);
  if (pricer) return pricer.units;
  if (routePrice) return operatorUnits(routePrice);
  const fallback = provider.prices.get('*');
  if (fallback) return operatorUnits(fallback);
  return null;
}
