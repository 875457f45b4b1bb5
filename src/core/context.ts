import type { IncomingHttpHeaders } from 'node:http';
import { newRequestId } from './request-id.js';
import type { ChatCompletionRequest, CompletionUsage, EmbeddingsRequest, NativeRequest } from './canonical.js';
import type { GatewayError } from './errors.js';
import type { RuntimeConfig } from './config.js';
import { Extensions } from './extensions.js';
import { isRecord } from './is-record.js';
import { NO_HINTS, parseRequestHints, type RequestHints } from './hints.js';
import type { Plan } from './plan.js';
import type { StageTimeline } from './stage-timeline.js';
import type { TeamRecord, VirtualKeyRecord } from './identity.js';
import type { TokenUsage } from './usage.js';

/** Who is calling: the virtual key presented and its team. */
export interface Identity {
  key: VirtualKeyRecord;
  team: TeamRecord | null;
}

/** What happened upstream, filled in by the call stage and read by the HTTP layer, logs and later stages. */
export interface UpstreamOutcome {
  provider: string;
  upstreamModel: string;
  /** The configured provider key's id (never the key) the answering attempt used; null for a client's key or none. */
  keyId?: string | null;
  attempts: number;
  status: number;
  /** The answering (or last tried) target is a fallback, not one of the primary choice's. */
  fallback: boolean;
  /**
   * The model the upstream's answer names (often a dated snapshot of `upstreamModel`, `gpt-4o-2024-08-06`), before
   * the client is given the name it asked for; unset until an answer named one.
   */
  answeredModel?: string | undefined;
}

/** Where a request's time went, for latency metrics, traces and the log (the runner and call stage fill it in). */
export interface Timings {
  /**
   * Milliseconds spent on upstream exchanges (every attempt, from dispatch to the end of its answer) and waiting
   * between them (a retry's back-off): what the request's total less this leaves is the gateway's own overhead.
   */
  upstreamMs: number;
  /** `performance.now()` when the first answer event left the pipeline (a stream's first chunk); null before. */
  firstEventAt: number | null;
  /**
   * The stages' runs with their times and nesting, kept only when someone asked for them (a tracer recording the
   * request sets it as the request starts); null otherwise, and then the runner records nothing.
   */
  stages: StageTimeline | null;
}

/** What a request was charged: tokens as billed (the upstream's counts within reason, else counted) and USD. */
export interface Spent {
  usage: TokenUsage;
  usd: number;
  /** False when no price was known for the model (then usd is 0). */
  priced: boolean;
  /**
   * True when some of the tokens were counted by the gateway because the upstream had not reported them (no usage
   * came, or a stream was cut before its final usage and the gateway counted what the upstream had not yet).
   */
  estimated: boolean;
  /**
   * True when the response cache answered: `usage` is the stored answer's, which no upstream processed this time, so
   * it counts against no token rate limit (and costs nothing: usd is 0).
   */
  cached?: boolean;
}

/**
 * Everything a stage may know about one request, whatever it asks for. It never holds fastify objects: the HTTP
 * layer translates in and out, so stages run the same for every dialect and in the in-process SDK.
 */
interface ContextBase {
  /** The request's id: the client sees it as `x-request-id`, and the request log keeps the request under it. */
  readonly id: string;
  /** The client dialect the request arrived in (`openai`, `openai-responses`, `anthropic`, `gemini`, `litellm`). */
  readonly dialect: string;
  /** The HTTP path the request came in on (without the query), or `''` for an in-process call. */
  readonly path: string;
  /** `performance.now()` at arrival, for durations. */
  readonly startedAt: number;
  /** The config version this request runs on, start to finish. */
  readonly config: RuntimeConfig;
  /**
   * The model name the answer shows: the one the client wrote. Usually `request.model`; a dialect that maps
   * model names (e.g. LiteLLM's `together_ai/...`) routes by the mapped `request.model` and echoes this one.
   */
  readonly responseModel: string;
  /** Whether the answer streams (chat with `stream: true`; never for embeddings). */
  readonly stream: boolean;
  /** A provider key the client brought itself; used only where no key is configured. */
  readonly clientProviderKey: string | null;
  /** Fallbacks the request itself named (its `fallbacks` field, taken off the upstream request). */
  readonly requestFallbacks: readonly string[];
  /**
   * The request's metadata when its dialect took it off the request because it is the gateway's alone and no
   * upstream is to get it (LiteLLM's `metadata`, which the LiteLLM proxy reads and never forwards); null
   * otherwise. Read through requestMetadata(), like a `metadata` left on the request.
   */
  readonly gatewayMetadata: Record<string, unknown> | null;
  /** The credential the client presented (Authorization bearer or x-api-key); never forwarded upstream. */
  readonly credential: string | null;
  /** Whether the client is on another machine (not loopback, after trusted proxies); in-process callers are not. */
  readonly fromRemote: boolean;
  /**
   * The headers the client sent (lower-case names, as Node parsed them), for the few a provider is meant to see
   * (`openai-organization`, `anthropic-beta`, an operator's `forward_headers`); never forwarded wholesale.
   */
  readonly clientHeaders: Readonly<IncomingHttpHeaders>;
  /**
   * The body held numbers a double cannot hold exactly, kept as marker strings (see exact-numbers.ts); the call
   * stage turns them back into the client's digits in the upstream body.
   */
  readonly exactNumbers: boolean;
  /**
   * The client's own body when its dialect speaks a wire format an upstream may speak too (the Anthropic route):
   * an attempt on an upstream of that format sends it instead of translating `request`. Stages read `request`.
   */
  readonly native: NativeRequest | null;
  /**
   * The wire format the client reads its stream in when an upstream's own events can reach it as they came (the
   * OpenAI-format routes: `openai`): an upstream of that format keeps each event's text beside its chunk
   * (`native`), and the dialect writes those bytes instead of re-serialising the chunk. Null when every answer is
   * rendered from the canonical one. (The Anthropic route's pass-through goes by `native`, which also carries the
   * client's body.)
   */
  readonly verbatimFormat: string | null;
  /** Set by the auth stage when a virtual key was presented. */
  identity: Identity | null;
  /**
   * Where the request may go (the route's targets, then its fallbacks), how to survive failure there, and the
   * route's price; set by the route stage before spend, so the budget is reserved for what the request can reach.
   */
  plan: Plan | null;
  upstream: UpstreamOutcome | null;
  /**
   * Whether the call stage's attempt under way has its upstream's 2xx headers and has not failed: the upstream took
   * the request and is generating. False before the first attempt, while an attempt connects, and from an attempt's
   * failure through the back-off wait before the next, though `upstream.status` still says the failed attempt's 2xx.
   * A stream's keep-alives open the client's answer only while it holds (see http/stream-keepalive.ts).
   */
  upstreamAnswering: boolean;
  /** When (performance.now()) the attempt under way got its upstream's 2xx headers: a keep-alive waits an interval from it. */
  upstreamAnsweredAt: number;
  /** The usage reported by the upstream (last value seen for streams), in the canonical wire shape. */
  usage: CompletionUsage | null;
  /**
   * What the answering attempt's upstream had counted while its stream ran, before its final usage (`usage`):
   * Anthropic's message_start counts the prompt and its cache reads and writes, Gemini's events carry running
   * totals. Set by the call stage from its stream decoder, this attempt's only (reset with `usage`); the spend
   * stage charges it when the stream ends without `usage` (the client left, or the stream broke off). It is never
   * shown to the client.
   */
  usageSoFar: CompletionUsage | null;
  /** What the request was charged, once the spend stage settled it (also when it failed or was cancelled). */
  spent: Spent | null;
  readonly timings: Timings;
  /**
   * Work the request still finishes after its answer ended (the spend stage settling a cancelled stream): the
   * runner waits for it before the terminal event, so that event carries the real cost.
   */
  readonly pending: Promise<unknown>[];
  /** Parsed request headers every stage may consult: `cache-control`, `traceparent`, `x-tollgate-*`. */
  readonly hints: RequestHints;
  /** Response headers stages want the client to see (e.g. `x-tollgate-provider`). */
  readonly responseHeaders: Record<string, string>;
  /** Typed per-request data shared between stages and plugins (see extensions.ts). */
  readonly extensions: Extensions;
  /**
   * Set by the party consuming the answer: resolves when the client can take more data, or returns null
   * when it already can. Producers await it between upstream reads, so a slow client slows the upstream
   * read instead of piling chunks up in memory.
   */
  clientReady: () => Promise<void> | null;
  /**
   * Set by the party consuming the answer: whether any of the answer's events reached the client as bytes (a
   * keep-alive is none). A dialect may write nothing for an event its format has no place for (Gemini's for the
   * role-only chunk a stream opens with), so the call stage may still move on after such an event. The default, for
   * consumers that do not say, is true: an event emitted counts as received.
   */
  clientReceived: () => boolean;
  /**
   * Set by the party consuming the answer when writing it failed (a header value Node refuses, a rendering bug):
   * the client got this error (or, once the answer had started, a cut connection) whatever the pipeline answered,
   * so the request's terminal event reports it instead of a success or a client that left.
   */
  answerFailed: GatewayError | null;
}

/** A chat completion (every dialect's chat: OpenAI chat and responses, Anthropic messages, Gemini generateContent). */
export interface ChatContext extends ContextBase {
  readonly operation: 'chat';
  readonly request: ChatCompletionRequest;
}

/** An embeddings request (OpenAI embeddings, Gemini embedContent and batchEmbedContents). */
export interface EmbeddingsContext extends ContextBase {
  readonly operation: 'embeddings';
  readonly request: EmbeddingsRequest;
}

/**
 * One request's context, discriminated by what it asks for: `if (ctx.operation === 'chat')` narrows `ctx.request`
 * to the chat shape. Fields every operation has (`request.model`) read without narrowing. Later operations
 * (images, audio, rerank) join this union with their own canonical request.
 */
export type RequestContext = ChatContext | EmbeddingsContext;

/** The request and what it asks for; a chat request needs no `operation`. */
export type OperationInit = { operation?: 'chat'; request: ChatCompletionRequest } | { operation: 'embeddings'; request: EmbeddingsRequest };

export type ContextInit = OperationInit & {
  dialect: string;
  config: RuntimeConfig;
  /** The HTTP path (query string is dropped). */
  path?: string;
  /** The model name to echo when it differs from `request.model`; defaults to it. */
  responseModel?: string;
  clientProviderKey?: string | null;
  requestFallbacks?: readonly string[];
  gatewayMetadata?: Record<string, unknown> | null;
  credential?: string | null;
  fromRemote?: boolean;
  clientHeaders?: Readonly<IncomingHttpHeaders>;
  /**
   * The headers the request's hints are read from, when the body says some of what headers say (LiteLLM's cache
   * controls); `clientHeaders` otherwise. Never forwarded anywhere.
   */
  hintHeaders?: Readonly<IncomingHttpHeaders> | null;
  exactNumbers?: boolean;
  native?: NativeRequest | null;
  verbatimFormat?: string | null;
  id?: string;
};

const NO_HEADERS: Readonly<IncomingHttpHeaders> = Object.freeze({});

export function createRequestContext(init: ContextInit): RequestContext {
  const operation: OperationInit =
    init.operation === 'embeddings' ? { operation: 'embeddings', request: init.request } : { operation: 'chat', request: init.request };
  const base: ContextBase = {
    id: init.id ?? newRequestId(),
    dialect: init.dialect,
    path: init.path ? pathOnly(init.path) : '',
    startedAt: performance.now(),
    config: init.config,
    responseModel: init.responseModel ?? init.request.model,
    stream: operation.operation === 'chat' && operation.request.stream === true,
    clientProviderKey: init.clientProviderKey ?? null,
    requestFallbacks: init.requestFallbacks ?? [],
    gatewayMetadata: init.gatewayMetadata ?? null,
    credential: init.credential ?? null,
    fromRemote: init.fromRemote ?? false,
    clientHeaders: init.clientHeaders ?? NO_HEADERS,
    exactNumbers: init.exactNumbers ?? false,
    native: init.native ?? null,
    verbatimFormat: init.verbatimFormat ?? null,
    identity: null,
    plan: null,
    upstream: null,
    upstreamAnswering: false,
    upstreamAnsweredAt: 0,
    usage: null,
    usageSoFar: null,
    spent: null,
    timings: { upstreamMs: 0, firstEventAt: null, stages: null },
    pending: [],
    hints: init.hintHeaders ? parseRequestHints(init.hintHeaders) : init.clientHeaders ? parseRequestHints(init.clientHeaders) : NO_HINTS,
    responseHeaders: {},
    extensions: new Extensions(),
    clientReady: () => null,
    clientReceived: () => true,
    answerFailed: null,
  };
  return Object.assign(base, operation) as RequestContext;
}

/**
 * The request's metadata as the gateway reads it (routing rules' `when.metadata`, the request log's tags): its
 * `metadata` object, or the metadata its dialect took off the request (gatewayMetadata); null when neither.
 */
export function requestMetadata(ctx: RequestContext): Record<string, unknown> | null {
  const own: unknown = ctx.request.metadata;
  return isRecord(own) ? own : ctx.gatewayMetadata;
}

function pathOnly(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
