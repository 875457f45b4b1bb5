/**
 * Every event's payload fields, listed at runtime: the README's event catalogue is checked against this list,
 * and this list against the types (the compile fails when an event or a field is missing here).
 */
import type { EventName, GatewayEvents, GuardrailAction, McpToolCall, RequestSummary } from './events.js';

type FieldsOf<T> = ReadonlyArray<keyof T & string>;

export const REQUEST_SUMMARY_FIELDS = [
  'requestId', 'dialect', 'path', 'operation', 'model', 'route', 'provider', 'upstreamModel', 'keyId', 'teamId', 'stream',
  'status', 'durationMs', 'attempts', 'fallback', 'upstreamMs', 'firstTokenMs', 'finishReasons', 'user', 'metadata',
  'bodies', 'cache', 'guardrails', 'usage', 'costUsd', 'priced', 'estimated',
] as const satisfies FieldsOf<RequestSummary>;

type Summary = (typeof REQUEST_SUMMARY_FIELDS)[number];

const GUARDRAIL_FIELDS = ['requestId', 'rule', 'kind', 'side', 'count', 'keyId', 'route'] as const satisfies FieldsOf<GuardrailAction>;

const MCP_TOOL_FIELDS = [
  'requestId', 'keyId', 'teamId', 'server', 'tool', 'via', 'durationMs', 'status', 'isError', 'argumentsBytes', 'resultBytes', 'truncated', 'guardrails',
] as const satisfies FieldsOf<McpToolCall>;

export const EVENT_FIELDS = {
  'request.received': ['requestId', 'dialect', 'model', 'stream', 'at'],
  'stage.completed': ['requestId', 'stage', 'durationMs', 'outcome'],
  'provider.attempted': ['requestId', 'provider', 'model', 'attempt', 'ok', 'status', 'durationMs', 'errorCode'],
  'request.completed': [...REQUEST_SUMMARY_FIELDS, 'cancelled'],
  'request.failed': [...REQUEST_SUMMARY_FIELDS, 'type', 'code', 'message', 'cancelled'],
  'auth.rejected': ['requestId', 'reason', 'keyId'],
  'ratelimit.exceeded': ['requestId', 'keyId', 'teamId', 'scope', 'unit', 'limit'],
  'budget.exceeded': ['requestId', 'account', 'id', 'budget', 'spend', 'reserved', 'needed'],
  'budget.threshold': ['account', 'id', 'threshold', 'budget', 'spend'],
  'cost.recorded': ['requestId', 'keyId', 'teamId', 'model', 'provider', 'usd', 'priced', 'promptTokens', 'completionTokens', 'estimated', 'status', 'cancelled'],
  'cost.unpriced': ['requestId', 'provider', 'model'],
  'usage.implausible': ['requestId', 'provider', 'model', 'reason', 'reported', 'charged'],
  'key.created': ['keyId', 'name', 'team'],
  'route.selected': ['requestId', 'route', 'target', 'fallbacks'],
  'cache.hit': ['requestId', 'model', 'keyId', 'teamId', 'tier', 'similarity', 'savedUsd', 'served'],
  'cache.miss': ['requestId', 'model', 'keyId', 'teamId', 'semanticSkipped'],
  'cache.stored': ['requestId', 'model', 'entryId', 'semantic', 'expiresAt'],
  'fallback.used': ['requestId', 'from', 'to', 'reason'],
  'provider.failed': ['requestId', 'provider', 'model', 'keyId', 'attempt', 'status', 'code', 'message', 'retryable', 'willRetry'],
  'breaker.opened': ['target', 'label', 'reason', 'cooldownMs'],
  'breaker.closed': ['target', 'label'],
  'routing_rule.applied': ['requestId', 'rule', 'from', 'to'],
  'plugin.failed': ['requestId', 'plugin', 'reason', 'message', 'optional', 'skipped'],
  'plugin.timed_out': ['requestId', 'plugin', 'timeoutMs', 'optional', 'skipped'],
  'config.changed': ['version', 'source', 'action', 'target', 'actor'],
  'alert.fired': ['id', 'rule', 'kind', 'severity', 'subject', 'summary', 'notified'],
  'alert.resolved': ['id', 'rule', 'kind', 'subject', 'summary', 'notified'],
  'guardrail.blocked': GUARDRAIL_FIELDS,
  'guardrail.redacted': GUARDRAIL_FIELDS,
  'guardrail.flagged': GUARDRAIL_FIELDS,
  'mcp.tool.called': MCP_TOOL_FIELDS,
  'mcp.tool.failed': [...MCP_TOOL_FIELDS, 'error'],
} as const satisfies { [K in EventName]: FieldsOf<GatewayEvents[K]> };

/** Fields an event's type has that its list above lacks; `never` when every list is complete. */
type Missing = { [K in EventName]: Exclude<keyof GatewayEvents[K], (typeof EVENT_FIELDS)[K][number]> }[EventName];
type MissingSummary = Exclude<keyof RequestSummary, Summary>;
// Compile-time completeness: adding an event or a field without listing it here fails the typecheck.
const complete: [Missing | MissingSummary] extends [never] ? true : { missing: Missing | MissingSummary } = true;
void complete;
