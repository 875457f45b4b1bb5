import type { Candidate } from '../core/plan.js';
import type { ProviderRuntime, RuntimeConfig } from '../core/config.js';
import type { GatewayError } from '../core/errors.js';
import type { Target } from '../core/provider.js';
import { quoteInput } from '../core/quote-input.js';
import { bareModelError, lookupBareModel } from './bare-model.js';
import { weightedPick } from './weighted-pick.js';
import { gatewayError } from '../core/errors.js';

/** Splits `<provider>/<model>` at the first slash; the model part may contain more slashes. */
export function splitModelName(name: string): { provider: string; model: string } | null {
  const slash = name.indexOf('/');
  if (slash <= 0 || slash === name.length - 1) return null;
  return { provider: name.slice(0, slash), model: name.slice(slash + 1) };
}

function keyServes(models: string[] | null, model: string): boolean {
  return models === null || models.includes(model);
}

function missingKey(provider: ProviderRuntime): GatewayError {
  const envHint = provider.name === provider.vendor.id && provider.vendor.keyEnv[0] ? `set ${provider.vendor.keyEnv[0]}, ` : '';
  return gatewayError('provider_key_missing', `No API key is configured for provider '${provider.name}': ${envHint}add one under providers.${provider.name} in the config file, or send your own in the x-tollgate-provider-key header.`);
}

/**
 * A name that is no route of the running config but one of a config file save that was rejected: the 404
 * says so, rather than leaving the client (and the operator) to guess why a route they just wrote is unknown.
 */
function rejectedFileRoute(config: RuntimeConfig, modelName: string): GatewayError | null {
  const rejection = config.fileStatus?.rejection;
  if (!rejection || !rejection.routes.includes(modelName) || config.routes.has(modelName)) return null;
  return gatewayError('model_not_found', `The model '${modelName}' is a route defined in the config file ${rejection.file}, but the file was rejected (${rejection.at}): ${rejection.reason}. The gateway runs on the last accepted config until the file is fixed.`, { param: 'model' });
}

/** A target with the share of traffic the config gives it; `label` is its `<provider>/<model>`. */

/** Stable identity of a target for health and breakers: provider, model and key id (never the key itself). */
export function targetId(target: Target): string {
  return `${target.provider.name}/${target.model}#${target.keyId ?? target.keySource}`;
}

/**
 * Resolves a `<provider>/<model>` name to its candidates: one per configured key that serves the model, each
 * carrying `weight` split among the keys in proportion to the keys' own weights (so breakers and health are
 * kept per key). A client-supplied key is used only when none is configured. A bare name (see bare-model.ts)
 * resolves through the one configured provider that serves it; otherwise it is a 404 saying why.
 */
export function resolveCandidates(config: RuntimeConfig, modelName: string, clientKey: string | null, weight = 1): Candidate[] {
  const parts = splitModelName(modelName);
  const provider = parts ? config.providers.get(parts.provider) : undefined;
  if (!parts || !provider) {
    const rejected = rejectedFileRoute(config, modelName);
    if (rejected) throw rejected;
    // A bare name (no known provider before its first slash): the one configured provider that serves it.
    const found = lookupBareModel(config, modelName);
    if (found.kind !== 'one') throw bareModelError(config, modelName, found);
    return resolveCandidates(config, found.name, clientKey, weight);
  }
  const label = `${provider.name}/${parts.model}`;
  if (provider.keys.length > 0) {
    const serving = provider.keys.filter((key) => keyServes(key.models, parts.model));
    const eligible = serving.filter((key) => !key.disabled);
    if (serving.length > 0 && eligible.length === 0) {
      throw gatewayError('provider_key_missing', `Every key of provider '${provider.name}' that serves model '${quoteInput(parts.model)}' is disabled.`);
    }
    if (eligible.length === 0) {
      throw gatewayError('model_not_found', `No key of provider '${provider.name}' is configured to serve model '${quoteInput(parts.model)}'.`, { param: 'model' });
    }
    let total = 0;
    for (const key of eligible) total += key.weight;
    return eligible.map((key) => {
      const target: Target = { provider, model: parts.model, apiKey: key.value, keySource: key.source, keyId: key.id };
      return { target, weight: (weight * key.weight) / total, label, id: targetId(target) };
    });
  }
  const only = (target: Target): Candidate[] => [{ target, weight, label, id: targetId(target) }];
  // A configured Entra identity or AWS credential chain wins over a client's key, as a configured key does.
  if (clientKey && !provider.options.entra && !provider.options.aws?.configured) return only({ provider, model: parts.model, apiKey: clientKey, keySource: 'client', keyId: null });
  if (!provider.keyRequired) return only({ provider, model: parts.model, apiKey: null, keySource: 'none', keyId: null });
  throw missingKey(provider);
}

/** One target for a `<provider>/<model>` name: a weighted pick among its candidates (keys). */
export function resolveDirectTarget(config: RuntimeConfig, modelName: string, clientKey: string | null): Target {
  return (weightedPick(resolveCandidates(config, modelName, clientKey)) as Candidate).target;
}
