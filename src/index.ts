/**
 * tollgate's public API: what a plugin author imports (`import { definePlugin } from 'tollgate'`), the in-process
 * gateway (`createGateway`) and the management API's client (`AdminClient`, also `tollgate/admin`). Everything else
 * under src/ is internal and may move between releases; this file is the contract (see plugins/README.md).
 */

// The whole gateway in-process, configured with the config file's shape: `await (await createGateway({ config })).listen()`.
export { createGateway } from './gateway.js';
export type { Gateway, GatewayOptions } from './gateway.js';
export type { ConfigInput } from './config/schema.js';
// A typed client for /api (keys, teams, providers, routes, logs, usage, config).
export { AdminApiError, AdminClient, type AdminClientOptions } from './admin-client/index.js';

// The plugin contract.
export { definePlugin, serviceKey } from './core/plugin.js';
export type { PluginDefinition, PluginPlacement, ServiceKey, Services } from './core/plugin.js';
// The services the gateway offers (`requires: [BUS]`, then `services.get(BUS)`).
export { BUS, GOVERNANCE, HEALTH, LIMITER, LOG, RESERVATIONS, TRANSPORT } from './services.js';

// A stage: one layer of the onion, and what it sees.
export type { Next, Stage } from './core/stage.js';
export type { ChatContext, EmbeddingsContext, Identity, RequestContext, Spent, UpstreamOutcome } from './core/context.js';
export type { RuntimeConfig, Settings, ProviderRuntime, RouteRuntime, PriceConfig } from './core/config.js';
export type { Plan, Candidate, CandidateGroup } from './core/plan.js';
export type { Target } from './core/provider.js';
export type { TokenUsage } from './core/usage.js';
// Typed per-request data shared between stages, and the parsed request hints.
export { contextKey } from './core/extensions.js';
export type { ContextKey, Extensions } from './core/extensions.js';
export type { RequestHints } from './core/hints.js';
// The event catalogue (subscribe with `services.get(BUS).on(name, listener)`).
export type { EventName, GatewayEvents, RequestSummary } from './core/events.js';
// A stage's tracing channel (`tollgate:stage:<name>`, node:diagnostics_channel) publishes these.
export { requestChannel, stageChannel, upstreamChannel, type RequestTraceMessage, type StageTraceMessage, type UpstreamTraceMessage } from './core/trace-channels.js';

// The canonical request and response shapes (OpenAI's chat-completions shapes).
export type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatMessage,
  CompletionUsage,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Operation,
  NativeAnswer,
  NativeRequest,
  NativeStreamEvent,
  ResponseEvent,
} from './core/canonical.js';

// Errors: a stage fails a request with a GatewayError; the HTTP layer renders it in the client's dialect.
// Fail with a catalogued code (`gatewayError('invalid_value', message, { param })`) or build your own GatewayError.
export { ERROR_CATALOGUE, GatewayError, gatewayError, isErrorCode } from './core/errors.js';
export type { ErrorCode, ErrorExtras, ErrorType, GatewayErrorInit } from './core/errors.js';

// Who is calling (the identity's key and team records).
export type { TeamRecord, VirtualKeyRecord } from './core/identity.js';
