import type { ProviderRuntime, RuntimeConfig } from '../core/config.js';
import type { GatewayError } from '../core/errors.js';
import { catalogModels } from '../catalog/catalog.js';
import { quoteInput } from '../core/quote-input.js';
import { isRouteName } from './route-patterns.js';
import { gatewayError } from '../core/errors.js';

/**
 * Bare model names: `gpt-4o-mini` rather than `openai/gpt-4o-mini`, as a client sends when only its base URL
 * was changed. A name is bare when nothing before its first slash names a known provider (so a Hugging Face id
 * such as `meta-llama/Llama-3.1-8B-Instruct` is bare too). It resolves, in order, to a route of that name, else
 * to the one configured provider that serves the model; several such providers are ambiguous, none is unknown.
 */
export type BareModel =
  /** Exactly one configured provider serves it: its `<provider>/<model>`. */
  | { kind: 'one'; name: string }
  /** Several do, as `<provider>/<model>`, sorted: the client must pick one (or the operator add a route). */
  | { kind: 'several'; names: readonly string[] }
  /** None does; `elsewhere` names providers that list it but are not configured or have no key serving it. */
  | { kind: 'none'; elsewhere: readonly string[] };

/**
 * Whether a provider is one the operator set up: defined in the config file or through the API, or given a key
 * or base URL in the environment. Every built-in vendor is present in a config (a client may bring its own
 * key for any), but a bare name should only reach the providers the operator chose.
 */
function configured(provider: ProviderRuntime): boolean {
  return provider.source !== 'builtin';
}

/** Whether the provider can serve the model with what is configured: a key that serves it, or none needed. */
function serves(provider: ProviderRuntime, model: string): boolean {
  if (provider.keys.length === 0) return !provider.keyRequired;
  return provider.keys.some((key) => !key.disabled && (key.models === null || key.models.includes(model)));
}

/**
 * Which of a vendor's catalogue ids are names its API takes, so that a bare name may match them. The bundled
 * catalogue is a price list, and three vendors' lists hold more than their own request ids:
 * - Azure OpenAI is called by deployment name, which the operator chooses: only `providers.<name>.models` (and
 *   keys' `models`) say which deployments exist.
 * - OpenRouter serves every vendor's models under namespaced ids (`openai/gpt-4o`, which tollgate reads as the
 *   `openai` provider, so it is reached as `openrouter/openai/gpt-4o`); its un-namespaced catalogue ids are
 *   aliases for matching prices, not ids its API accepts.
 * - The Gemini API shares Google's price list, which also prices Claude on Vertex AI; the Gemini API serves
 *   Google's own models only.
 */
function catalogueCounts(provider: ProviderRuntime, id: string): boolean {
  const { vendor } = provider;
  if (vendor.format === 'azure') return false;
  if (vendor.id === 'openrouter') return id.includes('/');
  if (vendor.format === 'gemini') return !id.startsWith('claude-');
  return true;
}

/** Every model name the provider is known to serve: the operator's lists first, then the catalogue's. */
function modelsOf(provider: ProviderRuntime): Set<string> {
  const out = new Set<string>(provider.models);
  for (const key of provider.keys) for (const model of key.models ?? []) out.add(model);
  for (const entry of catalogModels(provider.vendor)) if (catalogueCounts(provider, entry.id)) out.add(entry.id);
  return out;
}

/** What could answer a bare name: providers that serve it, and providers that list it but cannot serve it now. */
interface Found {
  serving: string[];
  listing: string[];
}

/**
 * The bare-name index of one config version: model name → what it resolves to. Built on the first bare name a
 * config sees (a config whose clients always write `<provider>/<model>` never builds it), then one map lookup.
 */
function buildIndex(config: RuntimeConfig): Map<string, BareModel> {
  const found = new Map<string, Found>();
  for (const provider of config.providers.values()) {
    const usable = configured(provider);
    for (const model of modelsOf(provider)) {
      // An id whose first segment names a provider (`openai/gpt-4o` in OpenRouter's list) is never bare.
      const slash = model.indexOf('/');
      if (slash > 0 && config.providers.has(model.slice(0, slash))) continue;
      let entry = found.get(model);
      if (!entry) {
        entry = { serving: [], listing: [] };
        found.set(model, entry);
      }
      (usable && serves(provider, model) ? entry.serving : entry.listing).push(`${provider.name}/${model}`);
    }
  }
  const index = new Map<string, BareModel>();
  for (const [model, { serving, listing }] of found) {
    if (serving.length === 1) index.set(model, { kind: 'one', name: serving[0] as string });
    else if (serving.length > 1) index.set(model, { kind: 'several', names: serving.sort() });
    else index.set(model, { kind: 'none', elsewhere: listing.sort() });
  }
  return index;
}

const indexes = new WeakMap<RuntimeConfig, Map<string, BareModel>>();
const NOWHERE: BareModel = { kind: 'none', elsewhere: [] };

/** Whether `name` names no known provider before its first slash (or has none), so it must be looked up. */
export function isBareName(config: RuntimeConfig, name: string): boolean {
  const slash = name.indexOf('/');
  return slash <= 0 || slash === name.length - 1 || !config.providers.has(name.slice(0, slash));
}

/** The configured providers that serve a bare model name (routes are the caller's to check first). */
export function lookupBareModel(config: RuntimeConfig, name: string): BareModel {
  let index = indexes.get(config);
  if (!index) {
    index = buildIndex(config);
    indexes.set(config, index);
  }
  return index.get(name) ?? NOWHERE;
}

/**
 * The name the pipeline should route on, for a client that wrote `requested`: a route name or a
 * `<provider>/<model>` stays as it is; a bare name becomes the one configured provider's `<provider>/<model>`.
 * `preferred` is the provider a dialect's bare names mean (`anthropic` for Anthropic's SDK): it wins when it
 * serves the name, and takes names no configured provider lists (a model newer than the catalogue), as before.
 * An ambiguous or unknown bare name is returned as it is: routing answers it with a 404 that says why, after
 * the request has been authenticated. Never throws.
 */
export function resolveModelName(config: RuntimeConfig, requested: string, preferred?: string): string {
  const name = requested.trim();
  if (!isBareName(config, name) || isRouteName(config.routes, name)) return name;
  const found = lookupBareModel(config, name);
  // The preferred provider stands for slash-free names only: `nosuch/x` stays an unknown provider's name.
  if (preferred !== undefined && !name.includes('/')) {
    const own = `${preferred}/${name}`;
    if (found.kind === 'none' || (found.kind === 'several' && found.names.includes(own))) return own;
  }
  return found.kind === 'one' ? found.name : name;
}

/** The 404 for a bare name that is no route and that no single configured provider serves. */
export function bareModelError(config: RuntimeConfig, name: string, found: BareModel, param = 'model'): GatewayError {
  const quoted = quoteInput(name);
  if (found.kind === 'several') {
    return gatewayError('ambiguous_model', `The model '${quoted}' is served by more than one configured provider: ${found.names.join(', ')}. Name the one you mean as '<provider>/<model>', or ask the operator for a route called '${quoted}'.`, { param });
  }
  const listed = found.kind === 'none' && found.elsewhere.length > 0
    ? ` It is listed for ${found.elsewhere.slice(0, 3).join(', ')}, but no configured provider with a key serves it.`
    : '';
  const slash = name.indexOf('/');
  if (slash > 0 && slash < name.length - 1) {
    const provider = name.slice(0, slash);
    return gatewayError('provider_not_found', `Unknown provider '${quoteInput(provider)}' in model '${quoted}'. Known providers: ${[...config.providers.keys()].join(', ')}.${listed}`, { param });
  }
  return gatewayError('model_not_found', `The model '${quoted}' does not exist. Name models as '<provider>/<model>', e.g. 'openai/gpt-4o-mini'; a bare name is served when it is a route or exactly one configured provider serves it.${listed}`, { param });
}
