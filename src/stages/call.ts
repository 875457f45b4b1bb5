import { upstreamLimitPairs } from '../providers/upstream-rate-limits.js';
import { setUpstreamLimitHeaders, withUpstreamLimitHeaders } from '../core/upstream-limit-headers.js';
import type { IncomingHttpHeaders } from 'node:http';
import { Observable } from 'rxjs';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, EmbeddingsRequest, EmbeddingsResponse, NativeAnswer, NativeRequest, NativeStreamEvent, ResponseEvent } from '../core/canonical.js';
import { headerSafeName } from '../core/header-value.js';
import { GatewayError, loggedMessage, toGatewayError } from '../core/errors.js';
import type { ChatContext, RequestContext } from '../core/context.js';
import type { CandidateGroup } from '../core/plan.js';
import type { Stage } from '../core/stage.js';
import { definePlugin } from '../core/plugin.js';
import type { EventBus } from '../bus/bus.js';
import type { UpstreamTransport } from '../providers/transport.js';
import type { HealthRegistry } from '../routing/health-registry.js';
import { BUS, HEALTH, TRANSPORT } from '../services.js';
import type { BreakerPolicy } from '../core/config.js';
import type { ProviderAdapter, StreamDecoder, Target, UpstreamRequest, UpstreamTimeouts } from '../core/provider.js';
import { adapterFor } from '../providers/registry.js';
import { hasEstimatedUsage, reencodeEmbeddings } from '../providers/embedding-encoding.js';
import { restoreExactNumbers } from '../exact-numbers.js';
import { forwardClientHeaders, upstreamRequestId } from '../providers/forward-headers.js';
import type { UpstreamCall } from '../providers/transport.js';
import { targetCredentials, upstreamError, withoutCredentials } from '../providers/upstream-error.js';
import { chunksBefore } from '../providers/sse-decoder.js';
import { isRecord } from '../core/is-record.js';
import { withBaseQuery } from '../providers/base-url.js';
import { ATTEMPT_GATE, AttemptPlan, type Attempt } from '../routing/attempt-plan.js';
import { retryAfterMs } from '../routing/backoff.js';
import type { AttemptOutcome } from '../routing/health-registry.js';
import { plannedFailure } from '../routing/plan-errors.js';
import { accountCannotPay, asCannotPaySaid, asUpstreamSaid, notToRetry, upstreamSaysNoRetry } from '../routing/should-retry.js';
import { gatewayError, INTERNAL_MESSAGE, withChanges } from '../core/errors.js';
import { upstreamChannel, type UpstreamTraceMessage } from '../core/trace-channels.js';
import { withOutputLimit, type TargetLimits } from '../core/output-limit.js';
import { modelLimits } from '../catalog/output-limits.js';
import { promptTokensOf } from '../governance/prompt-tokens.js';

function invalidUpstream(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: ${what}`);
}

/** An upstream error body is read up to this size; a longer one is cut there (its message needs far less). */
const ERROR_BODY_BYTES = 64 * 1024;

function formatBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  if (Number.isInteger(mib)) return `${mib} MiB (${bytes} bytes)`;
  const kib = bytes / 1024;
  return Number.isInteger(kib) ? `${kib} KiB (${bytes} bytes)` : `${bytes} bytes`;
}

/** The upstream sent more than `max_response_bytes`: tollgate stops reading (the transport closes the connection). */
function answerTooLarge(target: Target, what: string): GatewayError {
  const name = target.provider.name;
  return gatewayError('upstream_response_too_large', `${name}: ${what} exceeded the limit of ${formatBytes(target.provider.maxResponseBytes)}, so tollgate stopped reading it; ` +
      `raise providers.${name}.max_response_bytes or settings.max_response_bytes if such answers are expected.`);
}

function declaredLength(headers: IncomingHttpHeaders): number {
  const raw = headers['content-length'];
  const value = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(value) ? value : -1;
}

/**
 * How long an upstream error asked the gateway to wait, in ms: its answer's retry-after, else the one its adapter
 * read from the error body (Gemini states the wait only there, as a RetryInfo `retryDelay`), so both pause the
 * target and hold its retries alike. Null when neither says.
 */
function askedWaitMs(error: GatewayError, headers: IncomingHttpHeaders): number | null {
  return retryAfterMs(headers) ?? retryAfterMs(error.headers);
}

/**
 * What `decode` (a stream decoder's push or end) returns; when it throws (an upstream error event), the chunks it
 * decoded before that event in the same read go to `before` first (see chunksBefore), then the failure is raised.
 */
function decodedOrBefore<T>(decode: () => T, before: (chunks: ChatCompletionChunk[]) => void): T {
  try {
    return decode();
  } catch (err) {
    before(chunksBefore(err));
    throw err;
  }
}

/** What one request's attempts share: whether the client got anything yet, and how to stop what is live. */
interface CallState {
  /** An event was emitted. */
  started: boolean;
  /** An event beyond a stream's opening (see opensOnly) was emitted: the answer itself has begun. */
  answered: boolean;
  cancelled: boolean;
  live: UpstreamCall | null;
  /** Ends a backoff wait early (client gone). */
  wake: (() => void) | null;
}

const CANCELLED = gatewayError('client_cancelled', 'The client closed the request.');

/** The upstream's own stream events that only open an answer (Anthropic's message_start and ping, a Response's creation). */
const OPENING_EVENTS: ReadonlySet<string> = new Set(['message_start', 'ping', 'response.created', 'response.in_progress', 'response.queued']);

/**
 * Whether an event only opens a stream, saying nothing of the answer: a chunk whose choices carry at most a role and
 * empty content (OpenAI's first chunk, Anthropic's message_start), no finish, no usage, and, when it carries the
 * upstream's own events, only opening ones (see OPENING_EVENTS; an OpenAI-format upstream's own chunk is judged by its
 * canonical chunk). A client's dialect may write nothing for it (Gemini's format has no such event).
 */
function opensOnly(event: ResponseEvent): boolean {
  if (event.kind !== 'chunk' || event.chunk.usage) return false;
  const native = event.native;
  if (native && (native.body !== undefined || (native.events ? !native.events.every((item) => OPENING_EVENTS.has(item.event)) : native.text === undefined))) return false;
  return event.chunk.choices.every((choice) => {
    if (!isRecord(choice) || (choice.finish_reason ?? null) !== null || (choice.logprobs ?? null) !== null || !isRecord(choice.delta)) return false;
    for (const [key, value] of Object.entries(choice.delta)) {
      if (key === 'role' || ((key === 'content' || key === 'refusal') && (value ?? '') === '')) continue;
      return false;
    }
    return true;
  });
}

function sleep(ms: number, state: CallState): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      state.wake = null;
      resolve();
    }
    state.wake = done;
  });
}

/** What one attempt's exchange reports to: the adapter, the upstream outcome, and the target's health. */
interface AttemptRun {
  adapter: ProviderAdapter;
  /** The chat request as this attempt's upstream gets it (shaped once, see requestFor); null for embeddings. */
  chatRequest: ChatCompletionRequest | null;
  upstream: { status: number };
  started: number;
  record(outcome: AttemptOutcome): void;
  attempted(ok: boolean, errorCode: string | null): void;
  /** How long a key whose account cannot pay (see accountCannotPay) is kept from later requests: the breaker's cool-down. */
  quotaPauseMs: number;
}

/**
 * An upstream 401 or 403 to a key from the gateway's config (revoked, expired, not allowed the model or region), or an
 * error saying its account cannot pay (a 402, OpenAI's 429 insufficient_quota, Anthropic's spend limit: see
 * accountCannotPay; no wait mends it): the operator's to fix, not the client's request. It counts against that key's
 * breaker, and the request moves on to the provider's other keys and the fallbacks. With the client's own key it is the
 * client's answer.
 */
function operatorKeyRefused(error: GatewayError, target: Target): boolean {
  if (error.upstreamStatus !== 401 && error.upstreamStatus !== 403 && !accountCannotPay(error)) return false;
  // A Microsoft Entra identity or AWS credentials of the config (an IAM role) are the operator's credential too, though the target has no key.
  return target.keySource === 'none' ? target.provider.options.entra !== undefined || target.provider.options.aws !== undefined : target.keySource !== 'client';
}

/**
 * The refusal of credentials fetched afresh after a first refusal: the provider named, and that a fresh fetch did
 * not help (the identity itself lost access, or the upstream is misconfigured), so an operator looks there.
 */
function refusedAfresh(err: unknown, target: Target): unknown {
  if (!(err instanceof GatewayError) || (err.upstreamStatus !== 401 && err.upstreamStatus !== 403)) return err;
  return withChanges(err, { message: `${target.provider.name} refused freshly fetched credentials too: ${err.message}` });
}

/**
 * Errors an adapter raised while building a target's request, before any call: that target cannot take this request
 * (Gemini embeds 100 texts a call, Titan one; a field only other formats take), though another target of the plan may.
 * The request moves on to the other targets without spending an attempt; with none left, the client gets the first
 * such refusal (or the last upstream error, when some target was called).
 */
const refusals = new WeakSet<GatewayError>();

/** The error of a request refused while being built for a target: a 4xx is that target's refusal (see refusals). */
function refused(err: unknown): GatewayError {
  const error = toGatewayError(err);
  if (error.status >= 400 && error.status < 500) refusals.add(error);
  return error;
}

/** A client error the route may fail over on (`fallback_on_client_errors`); a client that left is not one. */
function isClientError(error: GatewayError): boolean {
  return error.status >= 400 && error.status < 500 && error.status !== 499 && error.status !== 429;
}

/**
 * The innermost stage: calls the request's targets through their provider adapters and turns the upstream
 * answer into canonical response events. It retries and fails over as the routing policy says, skips targets
 * whose breaker is open, and records every attempt's outcome on the target's health. Unsubscribing aborts
 * the upstream request (or the backoff wait).
 */
class CallStage implements Stage {
  readonly name = 'call';

  constructor(private readonly deps: { bus: EventBus; transport: UpstreamTransport; health: HealthRegistry }) {}

  run(ctx: RequestContext): Observable<ResponseEvent> {
    return new Observable<ResponseEvent>((subscriber) => {
      const state: CallState = { started: false, answered: false, cancelled: false, live: null, wake: null };
      const emit = (event: ResponseEvent): void => {
        state.started = true;
        if (!state.answered && !opensOnly(event)) state.answered = true;
        subscriber.next(event);
      };
      this.call(ctx, emit, state).then(
        () => subscriber.complete(),
        (err: unknown) => {
          if (!state.cancelled) subscriber.error(err);
        },
      );
      return () => {
        // Runs on completion too, when nothing is live any more.
        state.cancelled = true;
        state.live?.abort();
        state.wake?.();
      };
    });
  }

  /**
   * Runs attempts until one answers. A retryable failure before anything reached the client moves on (another
   * target, a fallback, or a retry after backoff); a non-retryable one (bad request, auth) goes straight back to
   * the client unless the route fails over on client errors; once the answer has started, nothing is retried.
   */
  private async call(ctx: RequestContext, emit: (event: ResponseEvent) => void, state: CallState): Promise<void> {
    // The route stage plans; a pipeline without it is a wiring mistake, said plainly rather than guessed around.
    if (!ctx.plan) throw gatewayError('internal_error', 'The call stage needs a plan: the pipeline has no route stage before it.');
    const { policy } = ctx.plan;
    const { bus, health: registry } = this.deps;
    // A key's per-model limits, when it has some (left by the rate-limit stage): targets over them are passed over.
    const gate = ctx.extensions.get(ATTEMPT_GATE) ?? null;
    const plan = new AttemptPlan(callableGroups(ctx), policy, registry, Date.now(), Math.random, gate);
    let lastError: GatewayError | null = null;
    /** The error of the last target really called, and the first refusal of a target that never was (see refusals). */
    let calledError: GatewayError | null = null;
    let firstRefusal: GatewayError | null = null;
    let previous: Attempt | null = null;
    let attempt = plan.next();
    for (;;) {
      if (!attempt) throw (lastError === null ? gate?.refusal() : null) ?? plannedFailure(plan, lastError, registry);
      if (attempt.delayMs > 0) {
        // A retry's back-off is time the upstream cost the request, not the gateway's own (its overhead).
        const waitFrom = performance.now();
        await sleep(attempt.delayMs, state);
        ctx.timings.upstreamMs += performance.now() - waitFrom;
      }
      // Looked up before the cancel check below: loading a catalogue module is a wait. Only translated attempts wait.
      const limits = limitsFor(ctx, attempt.candidate.target);
      const outputLimits = limits === null ? null : await limits;
      if (state.cancelled) {
        attempt.health.breaker.release(attempt.admission);
        throw CANCELLED;
      }
      // A fallback is a move on to a later target group. Another target of the same group, or the route's own
      // targets again on a retry pass, is a retry: counting those as fallbacks inflated tollgate_fallbacks_total
      // and hid them from tollgate_retries_total. A first attempt on a later group is a fallback too: the route's
      // own targets could not be called (breakers open, paused by a 429), and the answer says x-tollgate-fallback.
      if (previous ? attempt.group > previous.group : attempt.group > 0) {
        bus.emit('fallback.used', {
          requestId: ctx.id,
          from: previous ? previous.candidate.label : (plan.groups[0]?.name ?? ctx.request.model),
          to: attempt.candidate.label,
          reason: previous ? (lastError?.code ?? String(lastError?.status ?? 'error')) : plan.passedOver(0),
        });
      }
      const number = plan.attempts;
      try {
        await this.attempt(ctx, attempt, number, emit, state, policy.breaker, outputLimits);
        return;
      } catch (err) {
        const error = toGatewayError(err);
        lastError = error;
        const refusal = refusals.has(error);
        if (refusal) {
          plan.refused(attempt.candidate);
          firstRefusal ??= error;
        } else calledError = error;
        const keyRefused = operatorKeyRefused(error, attempt.candidate.target);
        // A failure another try cannot mend (a refused key, a bad request the route fails over on) would come back the
        // same from this target: it is not called again in this request, only the other targets are.
        // So is one whose upstream said `x-should-retry: false`: the other targets still get their turn.
        if (!error.retryable || upstreamSaysNoRetry(error.headers)) plan.exclude(attempt.candidate);
        const movesOn = refusal || error.retryable || keyRefused || (policy.fallbackOnClientErrors && isClientError(error));
        // The next attempt is planned before the failure is reported, so `willRetry` says whether one really follows
        // (not after the last of max_attempts, nor past the deadline).
        // A stream moves on until its first byte reached the client: an opening event its dialect wrote nothing for
        // (a /genai client of an OpenAI or Anthropic upstream) does not hold it to a target that then failed.
        const begun = state.started && (state.answered || ctx.clientReceived());
        const next = !state.cancelled && !begun && movesOn ? plan.next() : null;
        const willRetry = next !== null;
        if (!state.cancelled && bus.hasListeners('provider.failed')) {
          bus.emit('provider.failed', {
            requestId: ctx.id,
            provider: attempt.candidate.target.provider.name,
            model: attempt.candidate.target.model,
            keyId: attempt.candidate.target.keyId,
            attempt: number,
            status: error.status,
            code: error.code,
            message: loggedMessage(error),
            retryable: error.retryable,
            willRetry,
          });
        }
        // Nothing (more) to try: the request ends with this error, the last upstream error as it came (after a
        // refusal, the error of the last target called, else the first refusal).
        if (!next) throw refusal ? (calledError ?? firstRefusal ?? error) : error;
        // What the failed attempt emitted reached no client: the next one's answer starts afresh.
        state.started = false;
        previous = attempt;
        attempt = next;
      }
    }
  }

  private attempt(
    ctx: RequestContext,
    attempt: Attempt,
    number: number,
    emit: (event: ResponseEvent) => void,
    state: CallState,
    breakerPolicy: BreakerPolicy,
    outputLimits: TargetLimits | null,
  ): Promise<void> {
    const { target } = attempt.candidate;
    const { health: registry, bus } = this.deps;
    const record = (outcome: AttemptOutcome): void => registry.finished(attempt.health, attempt.admission, breakerPolicy, outcome);
    const adapter = adapterFor(target.provider.vendor.format);
    if (!adapter) {
      record({ kind: 'neutral' });
      return Promise.reject(gatewayError('internal_error', `No adapter for wire format '${target.provider.vendor.format}'.`));
    }
    // Shaped and built before anything counts as a call: a target whose adapter refuses the request (a provider's
    // limit such as Gemini's 100 embeddings a call, a field its format cannot take) was never called (see refused).
    let chatRequest: ChatCompletionRequest | null;
    let built: UpstreamRequest;
    try {
      chatRequest = ctx.operation === 'chat' ? shapedRequest(ctx, adapter, target, outputLimits) : null;
      built = buildRequest(ctx, adapter, target, chatRequest);
      if (ctx.exactNumbers && built.body !== undefined) built.body = restoreExactNumbers(built.body);
      // A base URL's query (`?api_key=`) goes after the operation's path the adapter appended (see providers/base-url.ts).
      if (target.provider.baseQuery !== undefined) built.url = withBaseQuery(built.url, target.provider.baseQuery);
      // Before signing: a signature (SigV4) covers the headers that go out.
      forwardClientHeaders(built, target, ctx.dialect, ctx.clientHeaders, ctx.config.settings.forwardHeaders);
    } catch (err) {
      attempt.health.breaker.release(attempt.admission);
      return Promise.reject(refused(err));
    }
    // W3C trace context passes through to the provider; a tracer subscribed below puts its own span there instead.
    if (ctx.hints.traceparent !== null) {
      built.headers.traceparent = ctx.hints.traceparent;
      if (ctx.hints.tracestate !== null) built.headers.tracestate = ctx.hints.tracestate;
    }
    // answeredModel is in the literal so every outcome has one shape (set later only when the answer names a model).
    const upstream = { provider: target.provider.name, upstreamModel: target.model, keyId: target.keyId, attempts: number, status: 0, fallback: attempt.group > 0, answeredModel: undefined };
    ctx.upstream = upstream;
    // Connecting: nothing generates for the client until this attempt's upstream answers 2xx (see upstreamAnswering).
    ctx.upstreamAnswering = false;
    // Usage is this attempt's to report: what an earlier attempt reported before it failed (a stream's usage, then no
    // end) was not the answer's, and left here it would be charged for an answer whose upstream reports none.
    ctx.usage = null;
    ctx.usageSoFar = null;
    ctx.responseHeaders['x-tollgate-provider'] = headerSafeName(target.provider.name);
    ctx.responseHeaders['x-tollgate-model'] = headerSafeName(target.model);
    ctx.responseHeaders['x-tollgate-attempts'] = String(number);
    ctx.responseHeaders['x-tollgate-fallback'] = attempt.group > 0 ? 'true' : 'false';
    // The upstream's id is this attempt's to set once it answers: an earlier attempt's would be quoted to the wrong provider.
    delete ctx.responseHeaders['x-upstream-request-id'];
    // So are its rate-limit headers: an attempt that gets no answer (a refused connection) leaves none of another's.
    setUpstreamLimitHeaders(ctx, null);
    if (attempt.group > 0) ctx.responseHeaders['x-tollgate-fallback-from'] = headerSafeName(ctx.plan?.groups[0]?.name ?? ctx.request.model);
    else delete ctx.responseHeaders['x-tollgate-fallback-from'];
    const started = performance.now();
    registry.started(attempt.health, Date.now());
    let trace: UpstreamTraceMessage | null = null;
    const attempted = (ok: boolean, errorCode: string | null): void => {
      ctx.timings.upstreamMs += performance.now() - started;
      if (trace) {
        trace.ok = ok;
        trace.status = upstream.status || null;
        trace.errorCode = errorCode;
        upstreamChannel.asyncEnd.publish(trace);
      }
      if (!bus.hasListeners('provider.attempted')) return;
      bus.emit('provider.attempted', {
        requestId: ctx.id,
        provider: target.provider.name,
        model: target.model,
        attempt: number,
        ok,
        status: upstream.status || null,
        durationMs: performance.now() - started,
        errorCode,
      });
    };
    const run: AttemptRun = { adapter, chatRequest, upstream, started, record, attempted, quotaPauseMs: breakerPolicy.cooldownMs };
    if (upstreamChannel.hasSubscribers) {
      trace = { requestId: ctx.id, ctx, provider: target.provider.name, model: target.model, attempt: number, fallback: attempt.group > 0, headers: built.headers };
      upstreamChannel.start.publish(trace);
    }
    const authorize = adapter.authorize?.bind(adapter);
    if (!authorize) return this.exchange(ctx, attempt, built, emit, state, run, null);
    // Signing or fetching a token is part of the attempt: its failure is the target's failure.
    const authorizeAndExchange = (retried: boolean): Promise<void> =>
      authorize(built, target, this.deps.transport.dispatcher).then(
        (authorized) => {
          if (state.cancelled) {
            record({ kind: 'neutral' });
            attempted(false, 'client_cancelled');
            throw CANCELLED;
          }
          // A cached credential refused before its expiry (a token revoked, role credentials rotated): dropped, and the
          // call made once more with fresh ones. Once only: a second refusal is the answer, said to follow a fresh fetch.
          const again = retried
            ? null
            : (error: GatewayError): Promise<void> | null =>
                adapter.forgetCredential?.(authorized, target, error) ? authorizeAndExchange(true).catch((err: unknown) => Promise.reject(refusedAfresh(err, target))) : null;
          return this.exchange(ctx, attempt, authorized, emit, state, run, again);
        },
        (err: unknown) => {
          const error = toGatewayError(err);
          record(error.retryable ? { kind: 'failure', reason: error.code ?? 'authorization failed', latencyMs: null } : { kind: 'neutral' });
          attempted(false, error.code);
          throw error;
        },
      );
    return authorizeAndExchange(false);
  }

  /** One upstream exchange: dispatch, relay the answer, record the outcome on the target's health. */
  private exchange(
    ctx: RequestContext,
    attempt: Attempt,
    built: UpstreamRequest,
    emit: (event: ResponseEvent) => void,
    state: CallState,
    run: AttemptRun,
    againOnRefusal: ((error: GatewayError) => Promise<void> | null) | null,
  ): Promise<void> {
    const { target } = attempt.candidate;
    const { adapter, upstream, started, record, attempted } = run;
    const registry = this.deps.health;
    let firstByteMs: number | null = null;
    const maxBytes = target.provider.maxResponseBytes;
    return new Promise<void>((resolve, reject) => {
      let headers: IncomingHttpHeaders = {};
      /** An error answer's rate-limit headers, for its error (a successful answer's are kept on the request). */
      let errorLimits: Array<[string, string]> | null = null;
      let buffered: Buffer[] | null = null;
      /** Bytes in `buffered`, and the most it may hold (the body limit, or less for an error body). */
      let bufferedBytes = 0;
      let bufferLimit = maxBytes;
      /** Stream bytes since the decoder last produced a chunk: an upper bound on what it holds undecoded. */
      let pendingBytes = 0;
      let decoder: StreamDecoder | null = null;
      // Its x-should-retry decides over the status whether it is retried, as in the vendors' SDKs (see asUpstreamSaid).
      // An account that cannot pay (insufficient_quota, a 402) is not retried whatever it says (see asCannotPaySaid).
      const errorFrom = (bodyText: string): GatewayError =>
        withUpstreamLimitHeaders(
          ctx,
          asCannotPaySaid(asUpstreamSaid(upstreamError(target.provider.name, upstream.status, headers, bodyText, (text) => adapter.parseError(upstream.status, headers, text, target)), headers)),
          errorLimits,
        );
      const succeed = (): void => {
        state.live = null;
        record({ kind: 'success', latencyMs: firstByteMs, headers });
        attempted(true, null);
        resolve();
      };
      const fail = (error: GatewayError): void => {
        state.live = null;
        // This upstream generates no more: its 2xx no longer lets a keep-alive open the client's answer, which the
        // next attempt (after a back-off, perhaps) may still refuse with a status of its own.
        ctx.upstreamAnswering = false;
        const refused = error.upstreamStatus === 401 || error.upstreamStatus === 403;
        const again = refused && !state.cancelled && !state.started && againOnRefusal ? againOnRefusal(error) : null;
        if (again) return void again.then(resolve, reject);
        // Asked once for the pause and the rate-limit branch (it reads the type, the code and, on a 400 or 429, the message).
        const cannotPay = accountCannotPay(error);
        if (state.cancelled) record({ kind: 'neutral' });
        else if (error.upstreamStatus === 429 && !cannotPay) record({ kind: 'rate-limited', retryAfterMs: askedWaitMs(error, headers), headers });
        else if (error.retryable || state.started || operatorKeyRefused(error, target)) {
          // An upstream error answer may say when to come back (a 503's retry-after): the retry waits that long. A used-up
          // quota (an account that cannot pay) keeps the key from later requests as long as an open breaker would, however
          // soon its answer said to come back.
          let wait = error.upstreamStatus !== undefined ? askedWaitMs(error, headers) : null;
          if (cannotPay) wait = Math.max(wait ?? 0, run.quotaPauseMs);
          record({ kind: 'failure', reason: error.code ?? `HTTP ${error.status}`, latencyMs: performance.now() - started, retryAfterMs: wait });
        }
        else record({ kind: 'neutral' });
        attempted(false, state.cancelled ? 'client_cancelled' : error.code);
        // An error answer that says not to retry it: this target is not called again in the request (see call).
        const said = upstream.status >= 400 && upstreamSaysNoRetry(headers) ? notToRetry(error) : error;
        reject(withoutCredentials(said, targetCredentials(target)));
      };
      /**
       * A stream's opening events (see opensOnly), held back while nothing of the request's answer was emitted: the
       * client gets them with the first event that says something. An error right after them (Anthropic's
       * overloaded_error after message_start) then finds the client with nothing yet, and the request moves on to
       * another try or target, as for an error before them; written at once, they held it to this target.
       */
      let opening: ResponseEvent[] | null = null;
      const flushOpening = (): void => {
        if (opening === null) return;
        const held = opening;
        opening = null;
        for (const event of held) emit(event);
      };
      const relayEmit = (event: ResponseEvent): void => {
        if (!state.started && opensOnly(event)) {
          (opening ??= []).push(event);
          return;
        }
        flushOpening();
        emit(event);
      };
      /** Relays the chunks one read of the stream decoded (`bytes` long), with the upstream's own events and usage so far. */
      const relayDecoded = (chunks: ChatCompletionChunk[], bytes: number): void => {
        // What the upstream counted so far, charged should the stream be cut before its final usage.
        if (decoder?.usageSoFar) ctx.usageSoFar = decoder.usageSoFar();
        const native = nativeEvents(ctx, adapter, target, decoder);
        if (chunks.length > 0 || native !== null) pendingBytes = 0;
        else if ((pendingBytes += bytes) > maxBytes) throw answerTooLarge(target, 'one event of the upstream stream (bytes without an event boundary)');
        relayChunks(ctx, chunks, relayEmit, native, decoder?.nativePerChunk === true);
        // A half-open trial whose answer has begun closes its breaker now, not when the stream ends.
        if (state.started && attempt.admission === 'trial') attempt.admission = registry.answered(attempt.health, attempt.admission);
      };
      /**
       * The chunks a read decoded before the upstream's error event in it: they came first, so they reach the client
       * (and count for usage) before the error. Only an answer they begin or continue: the upstream's own events
       * alone (a ping) before an error do not start an answer, so the attempt can still move on to another try.
       */
      const relayBeforeFailure = (chunks: ChatCompletionChunk[]): void => {
        if (chunks.length > 0 || state.started) relayDecoded(chunks, 0);
        else if (decoder?.usageSoFar) ctx.usageSoFar = decoder.usageSoFar();
      };
      const timeouts = ctx.stream || ctx.operation !== 'chat' ? target.provider.timeouts : wholeAnswerTimeouts(target.provider.timeouts);
      const call = this.deps.transport.dispatch(built, timeouts, target.provider.name, {
        onStart(status, responseHeaders) {
          firstByteMs = performance.now() - started;
          upstream.status = status;
          ctx.upstreamAnswering = status >= 200 && status < 300;
          ctx.upstreamAnsweredAt = performance.now();
          headers = responseHeaders;
          // The provider's own id for this exchange, so a client can quote it to the provider's support.
          const upstreamId = upstreamRequestId(responseHeaders);
          if (upstreamId !== null) ctx.responseHeaders['x-upstream-request-id'] = upstreamId;
          const limits = upstreamLimitPairs(ctx, responseHeaders);
          if (status < 400) setUpstreamLimitHeaders(ctx, limits);
          else errorLimits = limits;
          if (status >= 400) {
            buffered = [];
            bufferLimit = Math.min(maxBytes, ERROR_BODY_BYTES);
          } else if (!ctx.stream) {
            buffered = [];
            // A body declared too large is refused before a byte of it is read.
            if (declaredLength(responseHeaders) > maxBytes) throw answerTooLarge(target, `the upstream answer (content-length ${declaredLength(responseHeaders)})`);
          } else if (run.chatRequest !== null) decoder = adapter.createStreamDecoder(target, run.chatRequest, nativeRequest(ctx, adapter, target), verbatim(ctx, adapter));
        },
        onData(chunk) {
          if (buffered) {
            bufferedBytes += chunk.length;
            if (bufferedBytes > bufferLimit) {
              // An error body is read from what arrived so far; an answer past the limit is refused.
              if (upstream.status >= 400) throw errorFrom(Buffer.concat([...buffered, chunk]).subarray(0, bufferLimit).toString('utf8'));
              throw answerTooLarge(target, 'the upstream answer');
            }
            buffered.push(chunk);
            return;
          }
          const open = decoder;
          relayDecoded(open ? decodedOrBefore(() => open.push(chunk), relayBeforeFailure) : [], chunk.length);
          // A slow client pauses the upstream read instead of piling chunks up in memory.
          const ready = ctx.clientReady();
          if (ready) {
            call.pause();
            void ready.then(() => call.resume());
          }
        },
        onEnd() {
          try {
            if (upstream.status >= 400) {
              throw errorFrom(Buffer.concat(buffered ?? []).toString('utf8'));
            }
            if (buffered && ctx.operation === 'embeddings') relayEmbeddings(ctx, adapter, target, ctx.request, Buffer.concat(buffered).toString('utf8'), emit);
            else if (buffered) relayCompletion(ctx, adapter, target, Buffer.concat(buffered).toString('utf8'), emit);
            else if (decoder) {
              const open = decoder;
              const tail = decodedOrBefore(() => open.end(), relayBeforeFailure);
              if (tail.usage) ctx.usage = tail.usage;
              // Judged before the tail is relayed: a usage chunk made at the end of a stream that never finished (Gemini's
              // usage with no candidate) would otherwise start the answer, and the attempt could no longer move on.
              if (!tail.complete) throw invalidUpstream(target.provider.name, 'the upstream stream ended before its end marker; the answer may be incomplete.');
              relayChunks(ctx, tail.chunks, relayEmit, nativeEvents(ctx, adapter, target, decoder), decoder.nativePerChunk === true);
              // A stream that ended properly with its opening alone: the client gets it (an empty answer of its own).
              flushOpening();
              // A stream that ended properly without one event (some servers answer a failed generation with a bare
              // `data: [DONE]`) is a bad upstream answer, not an empty one: failing here lets the request move on to
              // another target, and the client gets a 502 naming the provider rather than the dialect's 500.
              // Attempts run only while nothing was emitted, so `started` still false means this one sent nothing.
              if (!state.started) throw invalidUpstream(target.provider.name, 'the upstream stream ended without any answer event.');
            }
            succeed();
          } catch (err) {
            fail(err instanceof GatewayError ? err : gatewayError('internal_error', INTERNAL_MESSAGE));
          }
        },
        onError: fail,
      });
      state.live = call;
    });
  }
}

/**
 * The client's own body when this attempt's upstream speaks the client's dialect (native pass-through), else
 * null: the attempt then translates the canonical request, as on a failover to another format, or when a plugin
 * changed the request and not the body (`outdated`).
 */
function nativeRequest(ctx: RequestContext, adapter: ProviderAdapter, target: Target): NativeRequest | null {
  return ctx.native !== null && ctx.native.outdated !== true && speaksNative(adapter, target, ctx.native.format) ? ctx.native : null;
}

/** Whether this adapter sends a client's own body of `format` to this target (nativeFormat, or takesNative). */
function speaksNative(adapter: ProviderAdapter, target: Target, format: string): boolean {
  return nativeFormat(adapter, target) === format || adapter.takesNative?.(target, format) === true;
}

/** The wire format this adapter speaks with this target (see ProviderAdapter.nativeFormat). */
function nativeFormat(adapter: ProviderAdapter, target: Target): string {
  return adapter.nativeFormat?.(target) ?? adapter.format;
}

/**
 * The target model's limits by the catalogue when the attempt translates (its upstream speaks another format than
 * the client: see withOutputLimit), else null at once: a client of the target's own format has its limit sent as written.
 */
function limitsFor(ctx: RequestContext, target: Target): Promise<TargetLimits | null> | null {
  if (ctx.operation !== 'chat') return null;
  const adapter = adapterFor(target.provider.vendor.format);
  const clientFormat = ctx.native?.format ?? ctx.verbatimFormat ?? 'openai';
  if (!adapter || answerFormat(adapter) === clientFormat || speaksNative(adapter, target, clientFormat)) return null;
  return modelLimits(target.provider.vendor.id, target.model).catch(() => null);
}

/** The chat request as this attempt's upstream is to get it: shaped for its format, its output limit fitted to its model's. */
function shapedRequest(ctx: ChatContext, adapter: ProviderAdapter, target: Target, limits: TargetLimits | null): ChatCompletionRequest {
  const request = requestFor(ctx, adapter, target);
  return limits === null ? request : withOutputLimit(request, limits, adapter.defaultOutputLimit?.(target, request) ?? null, () => promptTokensOf(ctx));
}

/** The canonical request shaped for this attempt's upstream format, as the client's dialect says (see NativeRequest.requestFor). */
function requestFor(ctx: ChatContext, adapter: ProviderAdapter, target: Target): ChatCompletionRequest {
  return ctx.native?.requestFor ? ctx.native.requestFor(ctx.request, adapter.format, target) : ctx.request;
}

/**
 * The plan's candidate groups this request can be sent to. When the client's body holds what the canonical form
 * cannot express (the dialect recorded the 400 it would give), only targets of the client's own format can take it
 * (they get the body as it is): the others are left out of the plan before any attempt, so a route mixing formats
 * reaches its targets of the client's format without spending attempts (or retries) on the others, and with none
 * left the client gets that 400. Else the plan's groups as they are.
 */
function callableGroups(ctx: RequestContext): readonly CandidateGroup[] {
  const groups = (ctx.plan as NonNullable<RequestContext['plan']>).groups;
  const native = ctx.native;
  if (native === null || !native.untranslatable) return groups;
  const callable: CandidateGroup[] = [];
  for (const group of groups) {
    const candidates = group.candidates.filter((candidate) => {
      const adapter = adapterFor(candidate.target.provider.vendor.format);
      return adapter !== undefined && speaksNative(adapter, candidate.target, native.format);
    });
    if (candidates.length > 0) callable.push({ name: group.name, candidates });
  }
  if (callable.length === 0) throw native.untranslatable;
  return native.pinned ? pinnedGroups(callable, native.pinned, native.untranslatable) : callable;
}

/**
 * The groups' candidates of the provider that keeps the state the body names, and of its keys the one that made it
 * when it is still among them (any other key of that provider's account would not find it); the 400 when none is left.
 */
function pinnedGroups(groups: readonly CandidateGroup[], pinned: NonNullable<NativeRequest['pinned']>, refusal: GatewayError): CandidateGroup[] {
  const ofProvider = (candidate: CandidateGroup['candidates'][number]): boolean => candidate.target.provider.name === pinned.provider;
  const keyed = pinned.keyId !== null && groups.some((group) => group.candidates.some((candidate) => ofProvider(candidate) && candidate.target.keyId === pinned.keyId));
  const pinnedGroups: CandidateGroup[] = [];
  for (const group of groups) {
    const candidates = group.candidates.filter((candidate) => ofProvider(candidate) && (!keyed || candidate.target.keyId === pinned.keyId));
    if (candidates.length > 0) pinnedGroups.push({ name: group.name, candidates });
  }
  if (pinnedGroups.length === 0) throw refusal;
  return pinnedGroups;
}

/** The format this adapter's answers are written in (see ProviderAdapter.answerFormat). */
function answerFormat(adapter: ProviderAdapter): string {
  return adapter.answerFormat ?? adapter.format;
}

/** Whether the client reads the upstream's answer format, so its own bytes may reach the client. */
function verbatim(ctx: RequestContext, adapter: ProviderAdapter): boolean {
  return ctx.verbatimFormat !== null && ctx.verbatimFormat === answerFormat(adapter);
}

/**
 * The upstream's own stream events the decoder kept since it was last asked, when native (in the client's format) or
 * verbatim (in the adapter's answer format); null when none.
 */
function nativeEvents(ctx: RequestContext, adapter: ProviderAdapter, target: Target, decoder: StreamDecoder | null): NativeAnswer | null {
  const events = decoder?.takeNative?.();
  if (!events || events.length === 0) return null;
  return { format: nativeRequest(ctx, adapter, target)?.format ?? answerFormat(adapter), events };
}

/**
 * The upstream request for this operation (`chatRequest`: a chat's request as shaped for this attempt); a provider
 * without an embeddings API cannot take embeddings.
 */
function buildRequest(ctx: RequestContext, adapter: ProviderAdapter, target: Target, chatRequest: ChatCompletionRequest | null): UpstreamRequest {
  if (ctx.operation === 'chat') return adapter.buildChatRequest(chatRequest ?? requestFor(ctx, adapter, target), target, nativeRequest(ctx, adapter, target));
  if (!adapter.buildEmbeddingsRequest || !adapter.parseEmbeddingsResponse) {
    throw gatewayError('embeddings_not_supported', `Provider '${target.provider.name}' (${target.provider.vendor.displayName}) has no embeddings API in tollgate.`, { param: 'model' });
  }
  return adapter.buildEmbeddingsRequest(ctx.request, target);
}

function parseJson(target: Target, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalidUpstream(target.provider.name, 'the upstream answered with a body that is not JSON.');
  }
}

function relayEmbeddings(ctx: RequestContext, adapter: ProviderAdapter, target: Target, request: EmbeddingsRequest, text: string, emit: (event: ResponseEvent) => void): void {
  const response = (adapter.parseEmbeddingsResponse as NonNullable<ProviderAdapter['parseEmbeddingsResponse']>)(parseJson(target, text), target, request);
  // Adapters whose upstream names no model in its vectors' answer (Gemini, Bedrock, Cohere) echo the request's.
  if (response.model !== request.model) noteAnsweredModel(ctx, response.model);
  response.model = ctx.responseModel;
  // Some compatible servers leave usage out: the cost stage then counts the input with its tokenizer, as it does when
  // the adapter counted it (the upstream reported none): that count is the client's, not the upstream's report.
  const usage = response.usage as EmbeddingsResponse['usage'] | undefined;
  ctx.usage = usage && !hasEstimatedUsage(response) ? { prompt_tokens: usage.prompt_tokens, completion_tokens: 0, total_tokens: usage.total_tokens } : null;
  // Vectors in the encoding the client asked for, whatever the upstream sent; re-encoded ones are written from the parse.
  const reencoded = Array.isArray(response.data) && reencodeEmbeddings(response, request.encoding_format);
  if (!reencoded && verbatim(ctx, adapter)) emit({ kind: 'embeddings', response, native: { format: answerFormat(adapter), text } });
  else emit({ kind: 'embeddings', response });
}

/** Keeps the model the upstream's answer names (traces report it as gen_ai.response.model), once per attempt. */
function noteAnsweredModel(ctx: RequestContext, model: unknown): void {
  if (ctx.upstream !== null && ctx.upstream.answeredModel === undefined && typeof model === 'string' && model !== '') ctx.upstream.answeredModel = model;
}

function relayCompletion(ctx: RequestContext, adapter: ProviderAdapter, target: Target, text: string, emit: (event: ResponseEvent) => void): void {
  const body = parseJson(target, text);
  const native = nativeRequest(ctx, adapter, target);
  let completion: ChatCompletion;
  try {
    completion = adapter.parseChatResponse(body, target, native);
  } catch (err) {
    // A failed answer the upstream bills all the same (a generation that broke off) is charged what it reported.
    ctx.usageSoFar = adapter.reportedUsage?.(body, target) ?? null;
    throw err;
  }
  // Clients see the model name they asked for, whichever upstream model served it.
  noteAnsweredModel(ctx, completion.model);
  completion.model = ctx.responseModel;
  ctx.usage = completion.usage ?? null;
  // The adapter accepted the body as an answer, so a client of the same format may have it as it came.
  // The text goes along so the dialect writes the upstream's own digits (JSON.parse rounds integers past 2^53).
  if (native !== null) emit({ kind: 'completion', completion, native: { format: native.format, body: body as Record<string, unknown>, text } });
  else if (verbatim(ctx, adapter)) emit({ kind: 'completion', completion, native: { format: answerFormat(adapter), text } });
  else emit({ kind: 'completion', completion });
}

/**
 * Emits the chunks. The upstream's own events decoded with them (native pass-through) ride on the first, or on
 * a chunk without choices when they made none (a ping, a block's end), so they reach the client as they arrive
 * and a native answer's first chunk always carries its events. When each event is one chunk's own
 * (`perChunk`), each rides on its chunk instead.
 */
function relayChunks(ctx: RequestContext, chunks: ChatCompletionChunk[], emit: (event: ResponseEvent) => void, native: NativeAnswer | null = null, perChunk = false): void {
  const own = perChunk && native !== null && native.events?.length === chunks.length ? native.events : null;
  if (own === null && chunks.length === 0 && native !== null) emit({ kind: 'chunk', chunk: { id: '', object: 'chat.completion.chunk', model: ctx.responseModel, choices: [] }, native });
  for (let i = 0; i < chunks.length; i++) {
    const chunk = chunks[i] as ChatCompletionChunk;
    noteAnsweredModel(ctx, chunk.model);
    chunk.model = ctx.responseModel;
    if (chunk.usage) ctx.usage = chunk.usage;
    const carried = own !== null && native !== null ? { format: native.format, text: (own[i] as NativeStreamEvent).data } : i === 0 ? native : null;
    if (carried !== null) emit({ kind: 'chunk', chunk, native: carried });
    else emit({ kind: 'chunk', chunk });
  }
}

export default definePlugin({
  name: 'call',
  requires: [BUS, TRANSPORT, HEALTH],
  create: (_options, _config, services) => new CallStage({ bus: services.get(BUS), transport: services.get(TRANSPORT), health: services.get(HEALTH) }),
});

const wholeAnswers = new WeakMap<UpstreamTimeouts, UpstreamTimeouts>();

/**
 * The timeouts of a whole (non-streamed) chat answer: it arrives with its headers, so the wait for them is the whole
 * generation (a reasoning model's minutes), bounded by total_ms; first_byte_ms bounds how long a stream takes to start,
 * as LiteLLM's `stream_timeout` does (its `timeout` covers the rest). Made once per provider's timeouts.
 */
function wholeAnswerTimeouts(timeouts: UpstreamTimeouts): UpstreamTimeouts {
  let whole = wholeAnswers.get(timeouts);
  if (!whole) wholeAnswers.set(timeouts, (whole = { ...timeouts, firstByteMs: timeouts.totalMs }));
  return whole;
}
