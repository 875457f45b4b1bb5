import type { ProviderRuntime, RuntimeConfig } from '../config/runtime.js';
import { GatewayError } from '../errors.js';
import type { Target } from '../providers/contract.js';
import { weightedPick } from './weighted-pick.js';

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
  return new GatewayError({
    status: 401,
    type: 'authentication_error',
    code: 'provider_key_missing',
    message: `No API key is configured for provider '${provider.name}': ${envHint}add one under providers.${provider.name} in the config file, or send your own in the x-tollgate-provider-key header.`,
  });
}

/**
 * Resolves a `<provider>/<model>` name to a target: the provider from the running config and one of its keys
 * (weighted, among the keys that serve the model). A client-supplied key is used only when none is configured.
 */
export function resolveDirectTarget(config: RuntimeConfig, modelName: string, clientKey: string | null): Target {
  const parts = splitModelName(modelName);
  if (!parts) {
    throw new GatewayError({
      status: 404,
      type: 'invalid_request_error',
      code: 'model_not_found',
      param: 'model',
      message: `The model '${modelName}' does not exist. Name models as '<provider>/<model>', e.g. 'openai/gpt-4o-mini'.`,
    });
  }
  const provider = config.providers.get(parts.provider);
  if (!provider) {
    throw new GatewayError({
      status: 404,
      type: 'invalid_request_error',
      code: 'provider_not_found',
      param: 'model',
      message: `Unknown provider '${parts.provider}' in model '${modelName}'. Known providers: ${[...config.providers.keys()].join(', ')}.`,
    });
  }
  if (provider.keys.length > 0) {
    const eligible = provider.keys.filter((key) => keyServes(key.models, parts.model));
    const key = weightedPick(eligible);
    if (!key) {
      throw new GatewayError({
        status: 404,
        type: 'invalid_request_error',
        code: 'model_not_found',
        param: 'model',
        message: `No key of provider '${provider.name}' is configured to serve model '${parts.model}'.`,
      });
    }
    return { provider, model: parts.model, apiKey: key.value, keySource: key.source };
  }
  if (clientKey) return { provider, model: parts.model, apiKey: clientKey, keySource: 'client' };
  if (!provider.keyRequired) return { provider, model: parts.model, apiKey: null, keySource: 'none' };
  throw missingKey(provider);
}
