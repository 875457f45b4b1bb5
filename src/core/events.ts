/**
 * The event catalogue: dotted past-tense names, one payload type each. Subscribers (metrics, traces, logs,
 * alerts) listen here; stages only emit.
 */
import type { TokenUsage } from './usage.js';

/**
 * What both terminal events (`request.completed`, `request.failed`) say about a request that reached the pipeline:
 * who sent it, where it went, what the client got and what it cost. The request log, metrics and alerts need
 * nothing else.
 */
export interface RequestSummary {
  requestId: string;
  /** The client format: `openai`, `anthropic`, `gemini`, `litellm`. */
  dialect: string;
  /** The HTTP path the request came in on (`''` for an in-process call). */
  path: string;
  /** What the request asked for: `chat` or `embeddings`. */
  operation: string;
  /** The model (or route) name as the request named it. */
  model: string;
  /** The route the plan followed, or null for a direct model name (or a request refused before routing). */
  route: string | null;
  /** The provider that answered, or was tried last; null when no upstream was called. */
  provider: string | null;
  upstreamModel: string | null;
  keyId: string | null;
  teamId: string | null;
  stream: boolean;
  /** The HTTP status the client got: 200, the error's status, or 499 when the client left before the end. */
  status: number;
  durationMs: number;
  /** Upstream calls made, retries and fallbacks included. */
  attempts: number;
  /** The answering (or last tried) target was a fallback. */
  fallback: boolean;
  /** Milliseconds spent on upstream exchanges, every attempt included (a stream: until its last byte). */
  upstreamMs: number;
  /** Milliseconds from arrival to the first answer event sent to the client (a stream's first chunk); null when none was sent. */
  firstTokenMs: number | null;
  /** The choices' finish reasons as the answer gave them (`stop`, `length`, `tool_calls`, ...), in order. */
  finishReasons: string[];
  /** The request's `user` field, when it had one. */
  user: string | null;
  /** The request's `metadata` tags (string values), when it had them. */
  metadata: Record<string, string> | null;
  /** Request and answer bodies, only with `settings.log_bodies.enabled`: secrets redacted, size-capped. */
  bodies: { request: string; response: string } | null;
  /** What the cache did: `hit-exact`, `hit-semantic`, `miss`, `skip`, `shadow-hit`; null when the cache is off. */
  cache: string | null;
  /** What guardrails did, as `<side>:<rule>:<action>` (`input:cards:redacted`, `output:secrets:blocked`); null when none acted. */
  guardrails: string[] | null;
  /**
   * Tokens as charged (the upstream's counts within reason, else counted); null when nothing was settled. For an answer
   * from the response cache, the stored answer's (what the client got; see answeredFromCache).
   */
  usage: TokenUsage | null;
  /** USD charged; null when the pipeline settled no cost (a refusal before the spend stage, or no spend stage). */
  costUsd: number | null;
  /** False when the model had no known price (then the cost is 0). */
  priced: boolean;
  /** True when tollgate counted the tokens because the upstream reported none. */
  estimated: boolean;
}

/**
 * Whether the response cache answered the request. Its `usage` is then the stored answer's, which the client gets
 * as it was, but no provider was paid for it: token counts kept as charged (metrics, usage rollups, spans) leave it out.
 */
export function answeredFromCache(summary: Pick<RequestSummary, 'cache'>): boolean {
  return summary.cache === 'hit-exact' || summary.cache === 'hit-semantic';
}

/** What a summary of a call no provider took says of itself (see summaryWithoutUpstream). */
export type CallFacts = Pick<RequestSummary, 'requestId' | 'dialect' | 'path' | 'operation' | 'model' | 'keyId' | 'teamId' | 'status' | 'durationMs'>;

/**
 * The summary of a call that never reached the pipeline's upstream (a request refused before the pipeline, a call on
 * a stored Response): no route, provider, attempts, usage or cost; every other field as a pipeline request has it.
 */
export function summaryWithoutUpstream(facts: CallFacts): RequestSummary {
  return {
    ...facts,
    route: null,
    provider: null,
    upstreamModel: null,
    stream: false,
    attempts: 0,
    fallback: false,
    upstreamMs: 0,
    firstTokenMs: null,
    finishReasons: [],
    user: null,
    metadata: null,
    bodies: null,
    cache: null,
    guardrails: null,
    usage: null,
    costUsd: null,
    priced: true,
    estimated: false,
  };
}

/** One MCP tool call as `mcp.tool.called` and `mcp.tool.failed` report it (sizes in bytes of JSON; never the arguments or the result). */
export interface McpToolCall {
  requestId: string;
  keyId: string | null;
  teamId: string | null;
  server: string;
  /** The tool's own name on its server. */
  tool: string;
  /** `agent` (a model's tool call run by tollgate), `api` (`POST /v1/mcp/tools/call`), `mcp` (an MCP client at `/mcp`). */
  via: 'agent' | 'api' | 'mcp';
  durationMs: number;
  /** `ok`: the tool answered (maybe with `isError`); `error`: it failed, timed out or could not be reached. */
  status: 'ok' | 'error';
  isError: boolean;
  argumentsBytes: number;
  /** The result's size as the server gave it, before `max_result_bytes` cut it. */
  resultBytes: number;
  truncated: boolean;
  /**
   * What the output guardrails did to the result of a tool called directly (`api`, `mcp`), as `<side>:<rule>:<action>`
   * (`output:secrets:redacted`, `output:deny:blocked`, `output:emails:flagged`), as in the request log; null when none
   * acted, and in agent mode (there a result is checked as the next turn's prompt, by the input rules).
   */
  guardrails: string[] | null;
}

/** What an alert is about: the key or team of a budget, the provider (and model, target) or route of a failure. */
export interface AlertSubject {
  key?: string;
  team?: string;
  provider?: string;
  model?: string;
  /** The route (or the model name a request gave, when it named no route) of 5xx-rate and fallbacks-exhausted alerts. */
  route?: string;
  /** `<provider>/<model>#<key id>`, for a breaker. */
  target?: string;
}

export type StageOutcome = 'passed' | 'answered' | 'failed';

/** A guardrail rule acted on a request (`input`) or its answer (`output`); the matched text itself is never carried. */
export interface GuardrailAction {
  requestId: string;
  rule: string;
  /** The rule's detector: `email`, `payment_card`, `secret`, `regex`, `moderation`, ... */
  kind: string;
  side: 'input' | 'output';
  /** How many matches the rule acted on in this step. */
  count: number;
  keyId: string | null;
  route: string | null;
}

export interface GatewayEvents {
  'request.received': { requestId: string; dialect: string; model: string; stream: boolean; at: number };
  'stage.completed': { requestId: string; stage: string; durationMs: number; outcome: StageOutcome };
  'provider.attempted': {
    requestId: string;
    provider: string;
    model: string;
    attempt: number;
    ok: boolean;
    status: number | null;
    durationMs: number;
    errorCode?: string | null;
  };
  /** The answer ended (status 200), or the client went away before it did (`cancelled`, status 499). */
  'request.completed': RequestSummary & {
    /** The client went away before the answer ended. */
    cancelled: boolean;
  };
  'auth.rejected': { requestId: string; reason: 'unknown_key' | 'disabled_key' | 'expired_key' | 'missing_key' | 'model_not_allowed'; keyId: string | null };
  'ratelimit.exceeded': { requestId: string; keyId: string; teamId: string | null; scope: 'key' | 'key_model' | 'team'; unit: 'requests' | 'tokens'; limit: number };
  'budget.exceeded': { requestId: string; account: 'key' | 'team'; id: string; budget: number; spend: number; reserved: number; needed: number };
  'budget.threshold': { account: 'key' | 'team'; id: string; threshold: 50 | 80 | 100; budget: number; spend: number };
  'cost.recorded': {
    requestId: string;
    keyId: string | null;
    teamId: string | null;
    model: string;
    provider: string | null;
    usd: number;
    priced: boolean;
    promptTokens: number;
    completionTokens: number;
    estimated: boolean;
    /** The status the request ended with (499: the client left mid-answer). */
    status: number;
    cancelled: boolean;
  };
  'cost.unpriced': { requestId: string; provider: string; model: string };
  /** An upstream reported usage that cannot be true (not a count, or more than the request can have used); `charged` is what was billed instead. */
  'usage.implausible': {
    requestId: string;
    provider: string | null;
    model: string;
    reason: string;
    reported: { promptTokens: number | null; completionTokens: number | null };
    charged: { promptTokens: number; completionTokens: number };
  };
  'key.created': { keyId: string; name: string; team: string | null };
  'route.selected': { requestId: string; route: string; target: string; fallbacks: string[] };
  /** A cached answer was found: served (`served`), or only recorded in shadow mode. `savedUsd` is what the answer cost when bought. */
  'cache.hit': { requestId: string; model: string; keyId: string | null; teamId: string | null; tier: 'exact' | 'semantic'; similarity: number; savedUsd: number; served: boolean };
  /** No cached answer; `semanticSkipped` says why the semantic tier was not consulted, when it was not. */
  'cache.miss': { requestId: string; model: string; keyId: string | null; teamId: string | null; semanticSkipped: string | null };
  /** An answer was stored after a miss (`semantic`: with an embedding, so paraphrases can find it). */
  'cache.stored': { requestId: string; model: string; entryId: number; semantic: boolean; expiresAt: string };
  /** The next attempt moves on to a later target group (a fallback); another target of the same group is a retry. */
  'fallback.used': { requestId: string; from: string; to: string; reason: string };
  /** A `block` rule refused the request (400 `guardrail_blocked`) or withheld the answer (`content_filter`, or an error by setting). */
  'guardrail.blocked': GuardrailAction;
  /** A `redact` rule replaced matched text before it went on (upstream for input, to the client for output). */
  'guardrail.redacted': GuardrailAction;
  /** A `flag` rule matched: recorded (event, log, metric), nothing changed. */
  'guardrail.flagged': GuardrailAction;
  /** An upstream attempt failed; `willRetry` says whether the request goes on to another attempt. */
  'provider.failed': {
    requestId: string;
    provider: string;
    model: string;
    keyId: string | null;
    attempt: number;
    status: number;
    code: string | null;
    /** The error's message as the operator reads it: with what the client is not shown (GatewayError.operatorMessage). */
    message: string;
    retryable: boolean;
    willRetry: boolean;
  };
  /** `target` is `<provider>/<model>#<key id>`; `label` is `<provider>/<model>`. */
  'breaker.opened': { target: string; label: string; reason: string; cooldownMs: number };
  'breaker.closed': { target: string; label: string };
  'routing_rule.applied': { requestId: string; rule: string; from: string; to: string };
  /**
   * A plugin stage broke its contract on one request: it threw, returned something that is not an Observable,
   * emitted something that is not a ResponseEvent (or, answering itself, one of a kind the request does not take: a
   * completion for a stream), completed without answering or calling the next stage (`no_answer`), failed with an
   * error that is not a GatewayError, or put in `ctx.responseHeaders` a header Node cannot send (`bad_header`).
   * `skipped`: the plugin is optional and the request went on without it; otherwise the request failed (500).
   * `teardown`: a teardown of its answer (a `finalize`) threw as the answer ended or the client left; the request
   * had its answer by then, and keeps it.
   */
  'plugin.failed': {
    requestId: string;
    plugin: string;
    reason: 'threw' | 'not_observable' | 'bad_event' | 'errored' | 'no_answer' | 'teardown' | 'bad_header';
    message: string;
    optional: boolean;
    skipped: boolean;
  };
  /** A plugin stage neither called the next stage nor answered within its `timeout_ms`; `skipped` as for `plugin.failed` (else 504). */
  'plugin.timed_out': { requestId: string; plugin: string; timeoutMs: number; optional: boolean; skipped: boolean };
  'config.changed': {
    version: number;
    source: 'api' | 'file';
    action: string;
    /** What changed, e.g. `providers.openai`, `routes.chat-default`, `config`. */
    target: string;
    /** Who changed it (`loopback:127.0.0.1`, `admin-key:10.0.0.4`, `file:/etc/tollgate.yaml`); never a credential. */
    actor: string;
  };
  /** An alert rule's condition began to hold for a subject (one open alert per rule and subject); `id` names the alert. */
  'alert.fired': { id: string; rule: string; kind: string; severity: string; subject: AlertSubject; summary: string; notified: boolean };
  /** An open alert's condition no longer holds; `id` is the one `alert.fired` gave. */
  'alert.resolved': { id: string; rule: string; kind: string; subject: AlertSubject; summary: string; notified: boolean };
  /** An MCP tool was called (by a model in agent mode, `POST /v1/mcp/tools/call` or an MCP client at `/mcp`), whatever the outcome. */
  'mcp.tool.called': McpToolCall;
  /** An MCP tool call failed (`status: error`: a timeout, a closed or missing server, a protocol error); also reported as `mcp.tool.called`. */
  'mcp.tool.failed': McpToolCall & { error: string };
  /** The request ended with an error (refused by auth, a limit or a budget, or failed upstream); `status` is the client's. */
  'request.failed': RequestSummary & {
    type: string;
    code: string | null;
    /** The error's message as the operator reads it: with what the client is not shown (GatewayError.operatorMessage). */
    message: string;
    /**
     * The gateway ended the answer before its end: the shutdown's grace period was over and the gateway closed the
     * connection (a 503 `shutting_down`; the client left nothing). False for every other failure.
     */
    cancelled: boolean;
  };
}

export type EventName = keyof GatewayEvents;
