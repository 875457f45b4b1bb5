/**
 * tollgate's public API: what a plugin author imports (`import { definePlugin } from 'tollgate'`). Everything
 * else under src/ is internal and may move between releases; this file is the contract (see plugins/README.md).
 */

// The plugin contract.
export { definePlugin, serviceKey } from './core/plugin.js';
export type { PluginDefinition, PluginPlacement, ServiceKey, Services } from './core/plugin.js';
// The services the gateway offers (`requires: [BUS]`, then `services.get(BUS)`).
export { BUS, GOVERNANCE, HEALTH, LIMITER, LOG, RESERVATIONS, TRANSPORT } from './pipeline/services.js';

// A stage: one layer of the onion, and what it sees.
export type { Next, Stage } from './core/stage.js';
export type { Identity, RequestContext, UpstreamOutcome } from './core/context.js';
export type { RuntimeConfig } from './core/config.js';

// The canonical request and response shapes (OpenAI's chat-completions shapes).
export type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatMessage,
  CompletionUsage,
  EmbeddingsRequest,
  EmbeddingsResponse,
  NativeAnswer,
  NativeRequest,
  NativeStreamEvent,
  ResponseEvent,
} from './core/canonical.js';

// Errors: a stage fails a request with a GatewayError; the HTTP layer renders it in the client's dialect.
export { GatewayError } from './errors.js';
export type { ErrorType, GatewayErrorInit } from './errors.js';

// Who is calling (the identity's key and team records).
export type { TeamRecord, VirtualKeyRecord } from './core/identity.js';
