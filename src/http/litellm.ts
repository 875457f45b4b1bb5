import type { FastifyInstance } from 'fastify';
import type { RuntimeConfig } from '../config/runtime.js';
import { liteLLMModelName } from '../dialects/litellm/model-names.js';
import { RouteMatcher } from '../routing/route-patterns.js';
import type { HttpDeps } from './deps.js';
import { healthStatus } from './health.js';
import { registerOpenAIMount } from './openai.js';

/** Route matchers per config version: the routes decide which names are left unmapped. */
const matchers = new WeakMap<RuntimeConfig, RouteMatcher>();

function routeMatcher(config: RuntimeConfig): RouteMatcher {
  let matcher = matchers.get(config);
  if (!matcher) {
    matcher = new RouteMatcher(config.routes);
    matchers.set(config, matcher);
  }
  return matcher;
}

/**
 * LiteLLM's names mapped to tollgate's. A name a configured route claims (exactly or by pattern) is left as
 * it is, so it routes exactly as it would under `/v1`.
 */
export function mapLiteLLMModel(model: string, config: RuntimeConfig): string {
  if (config.routes.size === 0) return liteLLMModelName(model);
  const matcher = routeMatcher(config);
  return liteLLMModelName(model, (name) => matcher.match(name) !== null);
}

/**
 * `/litellm`: for clients of the LiteLLM SDK (or any OpenAI client) whose base URL is `http://HOST:PORT/litellm`,
 * with or without `/v1` after it. The same OpenAI handlers and pipeline, with LiteLLM's model names.
 */
export function registerLiteLLMRoutes(app: FastifyInstance, deps: HttpDeps): void {
  for (const prefix of ['/litellm', '/litellm/v1']) registerOpenAIMount(app, deps, { prefix, dialect: 'litellm', mapModel: mapLiteLLMModel });
  app.get('/litellm/health', async () => healthStatus(deps));
}
