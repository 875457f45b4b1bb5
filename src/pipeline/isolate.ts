import { validateHeaderName, validateHeaderValue } from 'node:http';
import { EMPTY, isObservable, Observable, type Subscription } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { GatewayEvents } from '../core/events.js';
import type { ResponseEvent } from '../core/canonical.js';
import { GatewayError } from '../core/errors.js';
import type { Log } from '../log.js';
import type { Next, Stage } from '../core/stage.js';
import type { RequestContext } from '../core/context.js';
import { gatewayError } from '../core/errors.js';
import { isChoiceList } from '../core/answer-shape.js';
import { FRAMING_HEADERS } from '../core/framing-headers.js';
import { quoteInput } from '../core/quote-input.js';
import { failureText, maskedError, maskedGatewayError, maskedMessage } from './masked-error.js';
import { ContainedSubscriber } from './contained-subscriber.js';

/** How a user plugin's stage is held to its contract (built-in stages are trusted and run unwrapped). */
export interface PluginGuard {
  /** The plugin's name in the config: every error and event names it. */
  plugin: string;
  /** Skip the plugin (the request goes on with `next()`) instead of failing the request. */
  optional: boolean;
  /** How long the plugin may take before it calls `next()` or answers; null for no limit (and no timer). */
  timeoutMs: number | null;
  /** The values of its secret options (see plugin-secrets.ts), masked in what is logged of its errors. */
  secrets?: readonly string[];
}

type FailureReason = GatewayEvents['plugin.failed']['reason'];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** A Promise or any thenable: what an `async run` returns. */
export const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';

/** The shapes a stage may emit; anything else would break the dialect that renders it, far from its cause. */
function isResponseEvent(value: unknown): value is ResponseEvent {
  if (!isObject(value)) return false;
  switch (value.kind) {
    case 'completion':
      return isObject(value.completion) && isChoiceList(value.completion.choices, 'message');
    case 'chunk':
      return isObject(value.chunk) && isChoiceList(value.chunk.choices, 'delta');
    case 'embeddings':
      return isObject(value.response) && Array.isArray(value.response.data);
    default:
      return false;
  }
}

/** A request as JSON text, or null when it cannot be written (a plugin put something unserialisable in it). */
function jsonOf(value: unknown): string | null {
  try {
    return JSON.stringify(value);
  } catch {
    return null;
  }
}

/** The request and the client's own body (ctx.native) as a plugin got them, on a route that keeps that body. */
interface NativeSnapshot {
  request: string | null;
  body: string | null;
}

function nativeSnapshot(ctx: RequestContext): NativeSnapshot | null {
  const native = ctx.native;
  if (native === null || native.outdated === true) return null;
  return { request: jsonOf(ctx.request), body: jsonOf(native.body) };
}

/**
 * On the Anthropic and Gemini routes an upstream of the client's format gets the client's own body (ctx.native),
 * not `ctx.request`. A plugin that changed the request without changing that body (it knows only `ctx.request`, as
 * plugins/README.md says) would have its change silently dropped there: the body is marked outdated, so attempts
 * translate the changed request. A plugin that changed the body too (team-system-prompt) kept the two in step
 * itself. A body the canonical form cannot express whole (server tools) must go as it is: that is logged.
 */
function reconcileNative(ctx: RequestContext, before: NativeSnapshot, plugin: string, log: Log): void {
  const native = ctx.native;
  if (native === null || native.outdated === true) return;
  const request = jsonOf(ctx.request);
  if (request !== null && request === before.request) return;
  const body = jsonOf(native.body);
  if (body === null || body !== before.body) return;
  if (native.untranslatable) {
    log.warn(
      { requestId: ctx.id, plugin },
      `plugin "${plugin}" changed the request but not the client's own ${native.format} body, which holds what the canonical request cannot express: an upstream of that format gets the body without the change`,
    );
    return;
  }
  (ctx as { native: RequestContext['native'] }).native = { ...native, outdated: true };
}

/** The kind of event a request's answer is made of: one embeddings or completion event, or chunks for a stream. */
function answerKind(ctx: RequestContext): ResponseEvent['kind'] {
  return ctx.operation === 'embeddings' ? 'embeddings' : ctx.stream ? 'chunk' : 'completion';
}

/**
 * Why an event a plugin emits cannot be part of this request's answer, or null when it can: its kind must be the
 * request's (`expected`), and a whole answer is one event (`whole`: one went out already). The dialects render by
 * the event's kind, whether the plugin answered itself or emitted the event after calling next(): a completion for a
 * streamed request went out as one JSON body to a client reading SSE (the OpenAI SDK then read an empty stream), or,
 * once chunks had gone, cut the connection with the gateway's own 500 ("writing the answer failed") naming no plugin;
 * chunks for a whole one went as SSE to a client expecting JSON; a second completion silently replaced the first.
 */
function misfit(ctx: RequestContext, event: ResponseEvent, expected: ResponseEvent['kind'], whole: boolean): string | null {
  if (event.kind === expected && !whole) return null;
  const request = ctx.operation === 'embeddings' ? 'an embeddings request' : ctx.stream ? 'a streamed chat request' : 'a chat request without stream';
  if (event.kind === expected) return `answered ${request} with a second '${event.kind}' event, where its answer is one`;
  return `answered ${request} with a '${event.kind}' event, where it takes '${expected}' events`;
}

/**
 * Why a GatewayError the plugin made cannot be the request's answer, or null when it can: its status must be an HTTP
 * error status. One without (a JavaScript plugin's `new GatewayError({ type, code, message })`) or with another was
 * written as it was: a 500 'Internal gateway error.' naming no plugin, a 302 or a bodiless 204 the client took for an
 * answer, a 101 that cut the connection.
 */
function badStatus(err: GatewayError): string | null {
  const status: unknown = err.status;
  if (typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599) return null;
  return `failed with a GatewayError whose status (${JSON.stringify(status) ?? 'none'}) is not an HTTP error status (400 to 599)`;
}

/** Whether Node writes the header `name: value` (an HTTP token for a name; a value without line breaks, other controls, or none). */
function writable(name: string, value: unknown): boolean {
  try {
    validateHeaderName(name);
    validateHeaderValue(name, value as string);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first header in `headers` that Node refuses to write (`res.writeHead` throws), or null when there is none. The
 * answer writers leave framing headers out (http/answer-headers.ts), so those are not counted.
 */
function refusedHeader(headers: Record<string, string>): string | null {
  for (const name in headers) {
    if (Object.hasOwn(headers, name) && !writable(name, headers[name]) && !FRAMING_HEADERS.has(name.toLowerCase())) return name;
  }
  return null;
}

/** Removes from `headers` every header Node refuses to write, so the request's error answer can go out. */
function dropRefusedHeaders(headers: Record<string, string>): void {
  for (let name = refusedHeader(headers); name !== null; name = refusedHeader(headers)) delete headers[name];
}

/** What a plugin that set a header Node refuses is told (its value is not repeated: it may hold anything). */
function refusedHeaderText(name: string): string {
  return `set the response header ${JSON.stringify(quoteInput(name, 60))}, which cannot be sent: a header's name must be an HTTP token and its value may hold no line break or other control character`;
}

const DESCRIBED: Record<FailureReason, string> = {
  threw: 'threw an error',
  not_observable: 'returned something that is not an Observable',
  bad_event: 'emitted something that is not a ResponseEvent',
  errored: 'failed with an error that is not a GatewayError',
  bad_header: 'set a response header that cannot be sent',
  no_answer: 'completed without answering or calling the next stage',
  teardown: 'threw while its answer was torn down',
};

/** What a throwing teardown threw: rxjs gathers the errors of a subscription's teardowns into an UnsubscriptionError. */
function teardownDetail(err: unknown): string {
  const errors = (err as { errors?: unknown }).errors;
  const first: unknown = Array.isArray(errors) && errors.length > 0 ? errors[0] : err;
  return failureText(first);
}

/**
 * Wraps a plugin's stage so that its faults stay inside the request that met them: a throw, a non-Observable,
 * a malformed event, a stray error or a hang becomes a clear error naming the plugin (500 `plugin_failed`,
 * 504 `plugin_timed_out`), or, for an optional plugin that has not yet called `next()` or answered, a skip.
 * Once the plugin has called `next()` the upstream call is under way, so a later fault fails the request even
 * when the plugin is optional (calling `next()` again would call the provider twice).
 * Errors from the stages after it (and a plugin's own GatewayErrors: a guardrail's refusal) pass unchanged.
 */
export function isolate(stage: Stage, guard: PluginGuard, bus: EventBus, log: Log): Stage {
  const { plugin, optional, timeoutMs } = guard;
  const secrets = guard.secrets ?? [];
  /** Requests whose `appliesTo` threw: their run fails (or skips, when optional) as a run that throws does. */
  const askFailed = new WeakMap<RequestContext, unknown>();
  return {
    // The config entry's name: one plugin file may be listed twice under two names, and its stage's own name is the
    // same in both; stage.completed, the tracing channel and the request's stage timeline go by this one.
    name: plugin,
    ...(stage.appliesTo
      ? {
          appliesTo(ctx: RequestContext): boolean {
            try {
              return stage.appliesTo?.(ctx) !== false;
            } catch (err) {
              askFailed.set(ctx, err);
              return true;
            }
          },
        }
      : {}),
    run(ctx, next) {
      return new Observable<ResponseEvent>((subscriber) => {
        let abandoned = false;
        let progressed = false;
        // What it emits, its own answer or not, is held to the request's shape (see misfit).
        const expected = answerKind(ctx);
        // Whether a whole answer (a completion, embeddings) went out: a second one is a fault.
        let whole = false;
        // Whether the answer's headers went out (a stream's, with its first chunk): what is set after is not sent.
        let headersOut = false;
        let timer: NodeJS.Timeout | null = null;
        let own: Subscription | null = null;
        let skip: Subscription | null = null;
        // Errors that came from the stages after the plugin, passed back through it: not the plugin's fault.
        const downstreamErrors = new WeakSet<object>();

        const stopTimer = (): void => {
          if (timer) clearTimeout(timer);
          timer = null;
        };
        // Only on a route that keeps the client's body (ctx.native): see reconcileNative.
        const native = nativeSnapshot(ctx);
        const guardedNext: Next = () => {
          // A plugin that timed out or failed may still call next() later; the request has moved on without it.
          if (abandoned) return EMPTY;
          // A header it set that Node refuses would fail the answer's writer, naming no plugin: its fault, found here.
          if (headerFault()) return EMPTY;
          progressed = true;
          stopTimer();
          if (native) reconcileNative(ctx, native, plugin, log);
          return new Observable<ResponseEvent>((inner) =>
            next().subscribe({
              next: (event) => inner.next(event),
              error: (err: unknown) => {
                if (isObject(err)) downstreamErrors.add(err);
                inner.error(err);
              },
              complete: () => inner.complete(),
            }),
          );
        };
        const abandon = (): boolean => {
          abandoned = true;
          stopTimer();
          own?.unsubscribe();
          const skipped = optional && !progressed;
          if (skipped) {
            // What the plugin changed before it failed goes on with the request, to the upstream too.
            if (native) reconcileNative(ctx, native, plugin, log);
            skip = next().subscribe(subscriber);
          }
          return skipped;
        };
        const fail = (reason: FailureReason, err?: unknown, said: string = DESCRIBED[reason]): void => {
          // The request's error answer (or, skipped, its answer) carries ctx.responseHeaders: none may stop it.
          dropRefusedHeaders(ctx.responseHeaders);
          const skipped = abandon();
          const detail = maskedMessage(err === undefined ? '' : failureText(err), secrets);
          log.warn({ requestId: ctx.id, plugin, reason, err: maskedError(err, secrets), skipped }, `plugin "${plugin}" ${said}${skipped ? '; skipped (optional)' : ''}`);
          bus.emit('plugin.failed', { requestId: ctx.id, plugin, reason, message: detail.slice(0, 500) || said, optional, skipped });
          if (skipped) return;
          subscriber.error(
            gatewayError('plugin_failed', `Plugin '${plugin}' ${said}; the request was not completed (details in the gateway log under request id ${ctx.id}).`),
          );
        };
        /**
         * Fails the request (or skips the plugin) when a header in ctx.responseHeaders cannot be sent and the answer's
         * headers are still to go out. Checked where the plugin hands the request or its answer on, so a header
         * it set is found before a stage after it (or the answer's writer) meets it.
         */
        const headerFault = (): boolean => {
          if (headersOut) return false;
          const name = refusedHeader(ctx.responseHeaders);
          if (name === null) return false;
          fail('bad_header', undefined, refusedHeaderText(name));
          return true;
        };
        const timedOut = (): void => {
          timer = null;
          dropRefusedHeaders(ctx.responseHeaders);
          const skipped = abandon();
          log.warn({ requestId: ctx.id, plugin, timeoutMs, skipped }, `plugin "${plugin}" timed out${skipped ? '; skipped (optional)' : ''}`);
          bus.emit('plugin.timed_out', { requestId: ctx.id, plugin, timeoutMs: timeoutMs ?? 0, optional, skipped });
          if (skipped) return;
          subscriber.error(
            gatewayError('plugin_timed_out', `Plugin '${plugin}' neither called the next stage nor answered within its timeout_ms (${timeoutMs} ms).`),
          );
        };

        let answer: unknown;
        try {
          if (askFailed.has(ctx)) {
            const err = askFailed.get(ctx);
            askFailed.delete(ctx);
            throw err;
          }
          answer = stage.run(ctx, guardedNext);
        } catch (err) {
          // A GatewayError thrown is the plugin's answer (plugins/README.md), as one its Observable errors with.
          const bad = err instanceof GatewayError ? badStatus(err) : null;
          if (err instanceof GatewayError && bad === null) {
            if (headerFault()) return () => skip?.unsubscribe();
            abandoned = true;
            subscriber.error(maskedGatewayError(err, secrets));
            return undefined;
          }
          fail('threw', err, bad ?? DESCRIBED.threw);
          return () => skip?.unsubscribe();
        }
        if (!isObservable(answer)) {
          if (isThenable(answer)) {
            // An `async run`: its rejection would otherwise be unhandled, which ends the process under `tollgate serve`.
            answer.then(undefined, (err: unknown) => log.warn({ requestId: ctx.id, plugin, err: maskedError(err, secrets) }, `plugin "${plugin}": the Promise its stage returned rejected`));
            fail('not_observable', 'its run returned a Promise (an async function?): run must return an Observable; wrap asynchronous work in defer() or from()');
          } else fail('not_observable');
          return () => skip?.unsubscribe();
        }
        if (timeoutMs !== null && !progressed) timer = setTimeout(timedOut, timeoutMs);
        // Its teardowns run as its answer ends or the client leaves, when the request has its answer (or is gone):
        // one that throws is reported, and fails nothing.
        const teardownFailed = (err: unknown): void => {
          log.warn({ requestId: ctx.id, plugin, err: maskedError(err, secrets) }, `plugin "${plugin}" ${DESCRIBED.teardown}`);
          bus.emit('plugin.failed', { requestId: ctx.id, plugin, reason: 'teardown', message: maskedMessage(teardownDetail(err), secrets).slice(0, 500) || DESCRIBED.teardown, optional, skipped: false });
        };
        own = (answer as Observable<unknown>).subscribe(new ContainedSubscriber<unknown>({
          next(event) {
            if (abandoned) return;
            if (!isResponseEvent(event)) {
              fail('bad_event');
              return;
            }
            const wrong = misfit(ctx, event, expected, whole);
            if (wrong !== null) {
              // After next() too: the stages outside it and the dialect cannot render it, so the fault is the plugin's.
              fail('bad_event', wrong, wrong);
              return;
            }
            // Checked as each event passes (a stage outside it sets headers as the event reaches it: it is checked
            // there, not blamed on this plugin at completion) until the answer's head has gone out: a stream's with its
            // first chunk, a whole answer's at completion (checked again there).
            if (headerFault()) return;
            if (event.kind !== 'chunk') whole = true;
            else headersOut = true;
            progressed = true;
            stopTimer();
            subscriber.next(event);
          },
          error(err: unknown) {
            if (abandoned) return;
            stopTimer();
            if (headerFault()) return;
            if (isObject(err) && downstreamErrors.has(err)) return subscriber.error(err);
            const bad = err instanceof GatewayError ? badStatus(err) : DESCRIBED.errored;
            // Its own refusal: logged like any error it fails with, so with its secrets masked.
            if (bad === null) subscriber.error(maskedGatewayError(err as GatewayError, secrets));
            else fail('errored', err, bad);
          },
          complete() {
            if (abandoned) return;
            stopTimer();
            // Nothing answered and nothing passed on: the client got 500 'The upstream answer was empty.', which
            // blamed a provider that was never called.
            if (!progressed) {
              fail('no_answer');
              return;
            }
            if (headerFault()) return;
            subscriber.complete();
          },
        }, teardownFailed));
        // A fault during the synchronous subscribe happened before `own` was assigned.
        if (abandoned) own.unsubscribe();
        return () => {
          stopTimer();
          own?.unsubscribe();
          skip?.unsubscribe();
        };
      });
    },
  };
}
