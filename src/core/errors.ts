import { quoteInput } from './quote-input.js';

/** The longest message a GatewayError carries. */
export const MAX_ERROR_MESSAGE_CHARS = 4_000;

/**
 * The one error type every layer throws. The HTTP layer renders it in the client's dialect; nothing else
 * decides status codes.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'insufficient_quota'
  | 'upstream_error'
  | 'timeout_error'
  | 'service_unavailable'
  | 'server_error'
  // Upstream error types are passed through verbatim, so the set is open.
  | (string & {});

export interface GatewayErrorInit {
  status: number;
  type: ErrorType;
  code: string | null;
  message: string;
  param?: string | null;
  /** Whether another attempt (same or other target) may succeed. Used by routing. */
  retryable?: boolean;
  /** Extra response headers, e.g. retry-after on 429. */
  headers?: Record<string, string>;
  /** Upstream status when the error came from a provider; kept for logs and headers. */
  upstreamStatus?: number;
  /**
   * A Gemini upstream's own `error.details` (field violations, error info, retry info), shown to a client of the
   * Gemini format as Google's API would show them; other formats have no place for them.
   */
  details?: readonly unknown[] | null;
  /**
   * An OpenAI-shaped upstream's own fields of its error object beyond message, type, param and code (Azure's
   * `innererror` with the content filter's categories and severities, its `status`), shown to a client of the OpenAI
   * format as the provider wrote them; other formats have no place for them.
   */
  upstreamFields?: Readonly<Record<string, unknown>> | null;
  /** The unexpected error an `internal_error` stands for (see toGatewayError): logged, never shown to a client. */
  cause?: unknown;
  /**
   * What the operator's log and the request log say instead of `message`, when the operator may read more than the
   * client (the upstream URL a connection failed at: an operator's private endpoint or proxy). Never shown to a client.
   */
  operatorMessage?: string | null;
}

/**
 * Marks a GatewayError made by any copy of this module: a plugin importing `tollgate` may be bound to another copy
 * than the gateway that runs it (the TypeScript sources loaded through tsx beside the compiled build, or a plugin
 * package with its own install), and its errors must still render with their status rather than as a 500.
 */
const GATEWAY_ERROR_BRAND: unique symbol = Symbol.for('tollgate.GatewayError');

export class GatewayError extends Error {
  /** `instanceof` recognises GatewayErrors of every copy of tollgate loaded in the process (see the brand). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [GATEWAY_ERROR_BRAND]?: unknown })[GATEWAY_ERROR_BRAND] === true;
  }

  readonly [GATEWAY_ERROR_BRAND] = true;
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string | null;
  readonly param: string | null;
  readonly retryable: boolean;
  readonly headers: Record<string, string>;
  readonly upstreamStatus: number | undefined;
  readonly details: readonly unknown[] | null;
  readonly upstreamFields: Readonly<Record<string, unknown>> | null;
  /** The operator's fuller message, if any (see GatewayErrorInit.operatorMessage): logged, never shown to a client. */
  readonly operatorMessage: string | null;

  constructor(init: GatewayErrorInit) {
    // The last line of defence against an error that echoes a huge input whole: each site quotes inputs with
    // `quoteInput`, and no message, whatever it holds, grows past this.
    super(init.message.length > MAX_ERROR_MESSAGE_CHARS ? quoteInput(init.message, MAX_ERROR_MESSAGE_CHARS) : init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'GatewayError';
    this.status = init.status;
    this.type = init.type;
    this.code = init.code;
    this.param = init.param ?? null;
    this.retryable = init.retryable ?? false;
    this.headers = init.headers ?? {};
    this.upstreamStatus = init.upstreamStatus;
    this.details = init.details ?? null;
    this.upstreamFields = init.upstreamFields ?? null;
    const operatorMessage = init.operatorMessage ?? null;
    this.operatorMessage = operatorMessage !== null && operatorMessage.length > MAX_ERROR_MESSAGE_CHARS ? quoteInput(operatorMessage, MAX_ERROR_MESSAGE_CHARS) : operatorMessage;
  }

}

/**
 * Every field a GatewayError was made with, read back from it. The type names each field of GatewayErrorInit, so a
 * field added there and not here fails to compile rather than being dropped by every copy (see withChanges).
 */
function initOf(error: GatewayError): GatewayErrorInit & { [K in keyof GatewayErrorInit]-?: unknown } {
  // A GatewayError of another copy of tollgate (a plugin's, see the brand) may lack the newer fields: the constructor
  // gives each missing one its default.
  const read = error as Partial<GatewayError> & Pick<GatewayError, 'status' | 'type' | 'message'>;
  return {
    status: read.status,
    type: read.type,
    code: read.code ?? null,
    message: read.message,
    param: read.param,
    retryable: read.retryable,
    headers: read.headers,
    upstreamStatus: read.upstreamStatus,
    details: read.details,
    upstreamFields: read.upstreamFields,
    cause: (error as { cause?: unknown }).cause,
    operatorMessage: read.operatorMessage,
  };
}

/**
 * A copy of `error` with `changes` made and every other field kept (its upstream's extra fields, its details, its
 * operator message, its cause). Every site that changes an error copies it through here, so a field added to
 * GatewayError later travels through all of them.
 */
export function withChanges(error: GatewayError, changes: Partial<GatewayErrorInit>): GatewayError {
  return new GatewayError({ ...initOf(error), ...changes });
}

interface ErrorSpec {
  status: number;
  type: ErrorType;
  /** Whether another attempt (the same target after backoff, or another target) may succeed. */
  retryable: boolean;
  /** Other types the code may carry; only OpenAI's rate limits do (their type names the unit). */
  types?: readonly string[];
}

/**
 * Every error tollgate writes itself, declared once (fastify's manner): its code, HTTP status, OpenAI error type
 * and whether routing may retry it. A site names the code and says what happened; it never restates the status.
 * The README's error table lists every code (a test holds the two together). Upstream errors passed on as the
 * provider wrote them keep the provider's status, type and code, and are not in this list.
 */
export const ERROR_CATALOGUE = {
  // The request itself: 400s.
  invalid_json: { status: 400, type: 'invalid_request_error', retryable: false },
  json_too_deep: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_body: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_request: { status: 400, type: 'invalid_request_error', retryable: false },
  missing_required_parameter: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_type: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_value: { status: 400, type: 'invalid_request_error', retryable: false },
  empty_array: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_model_name: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_fallback: { status: 400, type: 'invalid_request_error', retryable: false },
  too_many_fallbacks: { status: 400, type: 'invalid_request_error', retryable: false },
  unsupported_parameter: { status: 400, type: 'invalid_request_error', retryable: false },
  unsupported_for_provider: { status: 400, type: 'invalid_request_error', retryable: false },
  // OpenAI's own code for a previous_response_id it does not have.
  previous_response_not_found: { status: 400, type: 'invalid_request_error', retryable: false },
  embeddings_not_supported: { status: 400, type: 'invalid_request_error', retryable: false },
  provider_endpoint_missing: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_query: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_url: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_content_length: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_transfer_encoding: { status: 400, type: 'invalid_request_error', retryable: false },
  malformed_request: { status: 400, type: 'invalid_request_error', retryable: false },
  request_timeout: { status: 408, type: 'invalid_request_error', retryable: false },
  request_too_large: { status: 413, type: 'invalid_request_error', retryable: false },
  url_too_long: { status: 414, type: 'invalid_request_error', retryable: false },
  unsupported_media_type: { status: 415, type: 'invalid_request_error', retryable: false },
  headers_too_large: { status: 431, type: 'invalid_request_error', retryable: false },
  // Management API bodies.
  invalid_config: { status: 400, type: 'invalid_request_error', retryable: false },
  unknown_field: { status: 400, type: 'invalid_request_error', retryable: false },
  read_only_field: { status: 400, type: 'invalid_request_error', retryable: false },
  masked_secret: { status: 400, type: 'invalid_request_error', retryable: false },
  guardrail_blocked: { status: 400, type: 'invalid_request_error', retryable: false },
  provider_misconfigured: { status: 400, type: 'invalid_request_error', retryable: false },
  invalid_team: { status: 400, type: 'invalid_request_error', retryable: false },
  conflict: { status: 409, type: 'invalid_request_error', retryable: false },
  team_in_use: { status: 409, type: 'invalid_request_error', retryable: false },
  config_version_mismatch: { status: 412, type: 'invalid_request_error', retryable: false },
  // Who is calling. OpenAI answers a bad key with type invalid_request_error, and so do we.
  missing_api_key: { status: 401, type: 'invalid_request_error', retryable: false },
  invalid_api_key: { status: 401, type: 'invalid_request_error', retryable: false },
  key_disabled: { status: 401, type: 'invalid_request_error', retryable: false },
  key_expired: { status: 401, type: 'invalid_request_error', retryable: false },
  virtual_key_required: { status: 401, type: 'invalid_request_error', retryable: false },
  invalid_admin_key: { status: 401, type: 'authentication_error', retryable: false },
  invalid_metrics_token: { status: 401, type: 'authentication_error', retryable: false },
  provider_key_missing: { status: 401, type: 'authentication_error', retryable: false },
  invalid_provider_key: { status: 401, type: 'authentication_error', retryable: false },
  invalid_provider_credentials: { status: 401, type: 'authentication_error', retryable: false },
  model_not_allowed: { status: 403, type: 'permission_error', retryable: false },
  admin_api_loopback_only: { status: 403, type: 'permission_error', retryable: false },
  cross_site_request: { status: 403, type: 'permission_error', retryable: false },
  mcp_tool_not_allowed: { status: 403, type: 'permission_error', retryable: false },
  // What the request names does not exist.
  unknown_url: { status: 404, type: 'invalid_request_error', retryable: false },
  method_not_allowed: { status: 405, type: 'invalid_request_error', retryable: false },
  model_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  ambiguous_model: { status: 404, type: 'invalid_request_error', retryable: false },
  provider_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  route_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  key_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  team_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  request_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  response_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  log_cursor_trimmed: { status: 410, type: 'invalid_request_error', retryable: false },
  alert_channel_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  alert_rule_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  mcp_tool_not_found: { status: 404, type: 'invalid_request_error', retryable: false },
  // Limits.
  rate_limit_exceeded: { status: 429, type: 'requests', retryable: false, types: ['requests', 'tokens'] },
  budget_exceeded: { status: 429, type: 'insufficient_quota', retryable: false },
  too_many_admin_key_attempts: { status: 429, type: 'rate_limit_error', retryable: false },
  // The client left.
  client_cancelled: { status: 499, type: 'client_closed_request', retryable: false },
  // Upstreams: another attempt may do better, on this target after backoff or on another.
  upstream_unreachable: { status: 502, type: 'upstream_error', retryable: true },
  upstream_connection_error: { status: 502, type: 'upstream_error', retryable: true },
  invalid_upstream_response: { status: 502, type: 'upstream_error', retryable: true },
  upstream_stream_error: { status: 502, type: 'upstream_error', retryable: true },
  upstream_generation_error: { status: 502, type: 'upstream_error', retryable: true },
  provider_token_failed: { status: 502, type: 'upstream_error', retryable: true },
  // The provider's token endpoint refused the credentials: another attempt with them fails the same way.
  provider_token_refused: { status: 401, type: 'authentication_error', retryable: false },
  upstream_timeout: { status: 504, type: 'timeout_error', retryable: true },
  // An MCP tool call (POST /v1/mcp/tools/call) that failed: its server errored, closed or was not connected; or it ran past call_timeout_ms.
  mcp_tool_failed: { status: 502, type: 'upstream_error', retryable: false },
  mcp_tool_timeout: { status: 504, type: 'timeout_error', retryable: false },
  // An answer too large is as large on a retry: nothing is retried.
  upstream_response_too_large: { status: 502, type: 'upstream_error', retryable: false },
  all_targets_unavailable: { status: 503, type: 'service_unavailable', retryable: false },
  all_targets_rate_limited: { status: 503, type: 'service_unavailable', retryable: false },
  // A request that reached a draining gateway (SIGTERM): another instance, or this one restarted, can take it.
  shutting_down: { status: 503, type: 'service_unavailable', retryable: true },
  // Faults.
  internal_error: { status: 500, type: 'server_error', retryable: false },
  plugin_failed: { status: 500, type: 'server_error', retryable: false },
  plugin_timed_out: { status: 504, type: 'timeout_error', retryable: false },
} as const satisfies Record<string, ErrorSpec>;

/** A code tollgate writes itself. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface ErrorExtras {
  param?: string | null;
  /** Extra response headers (retry-after, x-ratelimit-*). */
  headers?: Record<string, string>;
  upstreamStatus?: number;
  /** Only for a code that declares other `types` (rate limits: `requests` or `tokens`). */
  type?: string;
  /** What an `internal_error` stands for: logged, never shown. */
  cause?: unknown;
  /** The operator's fuller message (see GatewayErrorInit.operatorMessage): logged, never shown. */
  operatorMessage?: string;
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, code);
}

/** The error for a catalogued code: status, type and retryability from the catalogue, the words from the site. */
export function gatewayError(code: ErrorCode, message: string, extras: ErrorExtras = {}): GatewayError {
  const spec: ErrorSpec = ERROR_CATALOGUE[code];
  let type: ErrorType = spec.type;
  if (extras.type !== undefined && extras.type !== type) {
    if (!spec.types?.includes(extras.type)) throw new TypeError(`error code ${code} cannot carry type ${extras.type}`);
    type = extras.type;
  }
  return new GatewayError({
    status: spec.status,
    type,
    code,
    message,
    retryable: spec.retryable,
    ...(extras.param !== undefined ? { param: extras.param } : {}),
    ...(extras.headers !== undefined ? { headers: extras.headers } : {}),
    ...(extras.upstreamStatus !== undefined ? { upstreamStatus: extras.upstreamStatus } : {}),
    ...(extras.cause !== undefined ? { cause: extras.cause } : {}),
    ...(extras.operatorMessage !== undefined ? { operatorMessage: extras.operatorMessage } : {}),
  });
}

/**
 * What the operator's log and the request log say of an error: its operator message when it has one, else what the
 * client read. (A GatewayError of another copy of tollgate, see the brand, may have no operator message at all.)
 */
export function loggedMessage(error: GatewayError): string {
  return (error.operatorMessage as string | null | undefined) ?? error.message;
}

/** Anything thrown that is not a GatewayError becomes a 500 without leaking its message or stack. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  // The client is told nothing of it; the error itself goes with it, so whoever logs the 500 can say what it was.
  return gatewayError('internal_error', INTERNAL_MESSAGE, { cause: err });
}

/** What a 500 says when nothing more may be said. */
export const INTERNAL_MESSAGE = 'Internal gateway error.';
