import type { TracingChannel } from 'node:diagnostics_channel';
import { Observable, throwError, type Subscriber, type Subscription, type TeardownLogic } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { RequestSummary, StageOutcome } from '../core/events.js';
import type { PluginDefinition } from '../core/plugin.js';
import type { Log } from '../log.js';
import { BUS, LOG, type ServiceRegistry } from '../services.js';
import type { RuntimeConfig } from '../core/config.js';
import type { ResponseEvent } from '../core/canonical.js';
import { GatewayError, loggedMessage, toGatewayError } from '../core/errors.js';
import { requestMetadata, type RequestContext } from '../core/context.js';
import type { PipelineDefinition } from './definition.js';
import { isolate, type PluginGuard } from './isolate.js';
import { closeWithin } from './bounded-close.js';
import type { Next, Stage } from '../core/stage.js';
import { gatewayError } from '../core/errors.js';
import { BodyCapture } from './body-capture.js';
import { redactedPrefix, redactPath, redactSecrets } from '../core/redact-secrets.js';
import { requestChannel, stageChannel, type StageTraceMessage } from '../core/trace-channels.js';
import { GUARDRAIL_ACTIONS } from '../core/guardrail-keys.js';
import type { StageTimeline } from '../core/stage-timeline.js';
import { subscribeGuarded } from '../core/subscribe-guarded.js';

/** The built-in stages by name, each declared with definePlugin like a user's plugin. */
export type StageRegistry = ReadonlyMap<string, PluginDefinition>;

/** A user plugin's stage for one config version, with how it is held to its contract. */
export interface PluginStage {
  stage: Stage;
  guard: PluginGuard;
}

/**
 * The plugins of one config version: the full stage order (built-in names and plugin names) and each plugin's
 * stage (null when its `create` returned null: left out, like an unconfigured built-in).
 */
export interface PipelinePlugins {
  order: readonly string[];
  stages: ReadonlyMap<string, PluginStage | null>;
}

/**
 * Wraps a stage so that the runner reports `stage.completed` for it, publishes its tracing channel and records
 * it in the request's stage timeline; stages get all three for free.
 */
function instrument(stage: Stage, bus: EventBus): Stage {
  const channel = stageChannel(stage.name);
  // The Observable's subscribe function runs once per subscription, so each run's state lives in its StageRun.
  const run = (ctx: RequestContext, next: Next): Observable<ResponseEvent> =>
    new Observable<ResponseEvent>((subscriber) => new StageRun(stage, channel, bus, ctx, next, subscriber).start());
  if (!stage.appliesTo) return { name: stage.name, run };
  // A stage with nothing to do for a request is passed by: no run of its own, nothing reported, no span.
  return { name: stage.name, run: (ctx, next) => (stage.appliesTo?.(ctx) === false ? next() : run(ctx, next)) };
}

/**
 * One run of an instrumented stage on one request: it reports the stage's outcome once (`stage.completed`),
 * publishes the tracing channel's events in order, and records the run in the request's stage timeline when it
 * has one. One object per stage and request holds what a closure each would otherwise hold (the onion runs every
 * stage on every request, so this is paid six or more times a request).
 */
class StageRun {
  private readonly started = performance.now();
  private readonly trace: StageTraceMessage | null;
  private readonly timeline: StageTimeline | null;
  /** This run's index in the timeline (-1 without one). */
  private readonly slot: number;
  private reported = false;
  private flowing = false;
  private finished = false;
  private passedOn = false;
  private subscription: Subscription | null = null;

  constructor(
    private readonly stage: Stage,
    private readonly channel: TracingChannel<StageTraceMessage>,
    private readonly bus: EventBus,
    private readonly ctx: RequestContext,
    private readonly inner: Next,
    private readonly subscriber: Subscriber<ResponseEvent>,
  ) {
    this.trace = channel.hasSubscribers ? { requestId: ctx.id, stage: stage.name, ctx } : null;
    this.timeline = ctx.timings.stages;
    this.slot = this.timeline ? this.timeline.started(stage.name, this.started) : -1;
  }

  /** Runs the stage and relays its answer; returns the teardown for when the caller unsubscribes. */
  start(): TeardownLogic {
    const { trace, channel } = this;
    let answer: Observable<ResponseEvent>;
    if (trace) channel.start.publish(trace);
    try {
      answer = this.stage.run(this.ctx, this.passOn);
    } catch (err) {
      // A stage that throws instead of returning an error Observable still gets its event.
      this.report('failed');
      if (trace) channel.end.publish(trace);
      this.finish('failed', err);
      this.subscriber.error(err);
      return undefined;
    }
    if (trace) channel.end.publish(trace);
    this.subscription = answer.subscribe(this);
    return this.teardown;
  }

  /** The `next` the stage is given: the stage passed the request on. */
  private readonly passOn: Next = () => {
    this.passedOn = true;
    this.report('passed');
    return this.inner();
  };

  // The stage's answer, observed (rxjs calls these as methods of this object).
  next(event: ResponseEvent): void {
    this.report('answered');
    this.answering();
    this.subscriber.next(event);
  }

  error(err: unknown): void {
    this.report('failed');
    this.finish('failed', err);
    this.subscriber.error(err);
  }

  complete(): void {
    this.report('answered');
    this.finish(this.passedOn ? 'passed' : 'answered');
    this.subscriber.complete();
  }

  private readonly teardown = (): void => {
    this.subscription?.unsubscribe();
    // Unsubscribed before its answer ended: the client left.
    if (!this.finished) this.finish(this.passedOn ? 'passed' : 'answered', undefined, true);
  };

  private report(outcome: StageOutcome): void {
    if (this.reported) return;
    this.reported = true;
    // Nothing subscribes to it by default (it is there for plugins and alerts): the event is not even built then.
    if (this.bus.hasListeners('stage.completed')) this.bus.emit('stage.completed', { requestId: this.ctx.id, stage: this.stage.name, durationMs: performance.now() - this.started, outcome });
  }

  private answering(): void {
    if (this.flowing || !this.trace) return;
    this.flowing = true;
    this.channel.asyncStart.publish(this.trace);
  }

  private finish(outcome: StageOutcome, err?: unknown, cancelled = false): void {
    if (this.finished) return;
    this.finished = true;
    this.timeline?.ended(this.slot, performance.now(), cancelled ? 'cancelled' : outcome, err);
    const trace = this.trace;
    if (!trace) return;
    trace.outcome = outcome;
    if (cancelled) trace.cancelled = true;
    if (err !== undefined) {
      trace.error = err;
      this.channel.error.publish(trace);
    }
    this.answering();
    this.channel.asyncEnd.publish(trace);
  }
}

/** How long retirement waits for ended requests' after-work (their charge, then their terminal event). */
const SETTLE_WAIT_MS = 2_000;

const endOfPipeline: Next = () =>
  throwError(() => gatewayError('internal_error', 'The pipeline ended without a stage that answers the request.'));

/**
 * A pipeline compiled for one config version: stage factories ran once, unconfigured stages were dropped,
 * and the onion is composed so that per request only the stages' own work remains.
 */
export class Pipeline {
  readonly stageNames: string[];
  private readonly stages: Stage[];
  /** The stages as created (unwrapped), for `close()` at retirement. */
  private readonly created: Stage[] = [];
  /** Requests running on this pipeline: retirement waits for them. */
  private inFlight = 0;
  /**
   * Terminal events still waiting on their request's after-work (a cut-off stream's charge, see whenSettled):
   * retirement waits for those too, so at shutdown they reach the request log before it flushes and the store closes.
   */
  private readonly settling = new Set<Promise<void>>();
  /** At shutdown, ends the wait for requests still running (see retire). */
  private shutdownWait: NodeJS.Timeout | undefined;
  private retiring: (() => void) | null = null;
  private retired: Promise<void> | null = null;
  /** At shutdown, when the wait for requests and their after-work ends (SETTLE_WAIT_MS after retire was called). */
  private shutdownDeadline: number | null = null;
  /**
   * Set by the gateway when the shutdown grace period is over, just before it closes the connections still open:
   * a request unsubscribed before its end from then on was cut by the gateway (this error), not left by its client.
   */
  private shutdownCut: GatewayError | null = null;
  private readonly bus: EventBus;
  private readonly log: Log;

  constructor(
    definition: PipelineDefinition,
    registry: StageRegistry,
    config: RuntimeConfig,
    services: ServiceRegistry,
    plugins: PipelinePlugins | null = null,
  ) {
    const bus = (this.bus = services.require(BUS));
    this.log = services.require(LOG);
    this.stages = [];
    for (const name of plugins?.order ?? definition.stages) {
      if (plugins?.stages.has(name)) {
        const plugin = plugins.stages.get(name);
        if (!plugin) continue;
        this.created.push(plugin.stage);
        // Only users' plugins pay for isolation (and a timer only when they set timeout_ms).
        this.stages.push(instrument(isolate(plugin.stage, plugin.guard, bus, this.log), bus));
        continue;
      }
      const builtin = registry.get(name);
      if (!builtin) throw new Error(`pipeline "${definition.name}": unknown stage "${name}"`);
      // Built-ins keep the plugin contract: options from their schema's defaults, only the services they require.
      const options: unknown = builtin.options ? builtin.options.parse(undefined) : undefined;
      const stage = builtin.create(options, config, services.scoped(name, builtin.requires ?? []));
      if (stage) {
        this.created.push(stage);
        this.stages.push(instrument(stage, bus));
      }
    }
    this.stageNames = this.stages.map((stage) => stage.name);
  }

  /**
   * Closes the stages of a config version that is no longer current, once no request runs on it any more
   * (requests keep the config, so the pipeline, they started with). Idempotent; resolves when all closed.
   * A stage's close error is logged: the version is gone either way. `immediately` (shutdown) waits at most
   * SETTLE_WAIT_MS for requests to end: those whose connections the shutdown cut end within a few ticks, and their
   * after-work (the charge of what a cut-off stream used, then its terminal event for the request log) is waited for,
   * so it is written before the store closes; a request that does not end is not waited for longer.
   */
  retire(immediately = false): Promise<void> {
    this.retired ??= new Promise<void>((resolve) => {
      this.retiring = resolve;
      if (this.inFlight === 0) resolve();
    }).then(async () => {
      clearTimeout(this.shutdownWait);
      await this.settled();
      for (const stage of this.created) {
        if (stage.close) await closeWithin(() => stage.close?.(), this.log, { stage: stage.name }, `stage "${stage.name}"`);
      }
    });
    // At shutdown nothing waits long for requests that never end: one deadline for their end and their after-work.
    if (immediately) this.shutdownDeadline ??= Date.now() + SETTLE_WAIT_MS;
    if (immediately && this.inFlight > 0) this.shutdownWait ??= setTimeout(() => this.retiring?.(), SETTLE_WAIT_MS);
    return this.retired;
  }

  /**
   * The shutdown's grace period is over and the gateway is about to close the connections still open: the requests
   * that end unfinished from now on are reported as cut by the gateway (`error`, a 503 `shutting_down`, with
   * `cancelled`), not as clients that left (499).
   */
  cutOnShutdown(error: GatewayError): void {
    this.shutdownCut ??= error;
  }

  /** Runs one request. Lifecycle events are emitted here so every dialect and the SDK get them alike. */
  execute(ctx: RequestContext): Observable<ResponseEvent> {
    const { bus } = this;
    const composed = this.stages.reduceRight<Next>((next, stage) => () => stage.run(ctx, next), endOfPipeline);
    return new Observable<ResponseEvent>((subscriber) => {
      this.inFlight++;
      if (bus.hasListeners('request.received')) {
        bus.emit('request.received', { requestId: ctx.id, dialect: ctx.dialect, model: ctx.request.model, stream: ctx.stream, at: Date.now() });
      }
      if (requestChannel.hasSubscribers) requestChannel.start.publish({ requestId: ctx.id, ctx });
      let settled = false;
      const finishReasons: string[] = [];
      // Only when the operator asked for bodies in the log (an opt-in with its own cost).
      const capture = ctx.config.settings.logBodies.enabled ? new BodyCapture(ctx.config.settings.logBodies) : null;
      const summary = (status: number, endedAt: number): RequestSummary => summaryOf(ctx, status, endedAt, finishReasons, capture?.bodies(ctx) ?? null);
      const failed = (error: GatewayError, endedAt: number, cancelled = false): void =>
        this.whenSettled(ctx, () =>
          bus.emit(
            'request.failed',
            Object.assign(summary(error.status, endedAt), { type: error.type, code: error.code, message: redactSecrets(loggedMessage(error), ctx.config.settings.logBodies.redact), cancelled }),
          ),
        );
      const subscription = subscribeGuarded(composed(), {
        next: (event) => {
          ctx.timings.firstEventAt ??= performance.now();
          collectFinishReasons(event, finishReasons);
          capture?.add(event);
          subscriber.next(event);
        },
        error: (err: unknown) => {
          settled = true;
          const endedAt = performance.now();
          const error = toGatewayError(err);
          // An error no stage expected, or one a stage turned into a 500 on its way (the call stage's attempts do).
          const unexpected = err instanceof GatewayError ? (err.code === 'internal_error' ? err.cause : undefined) : err;
          if (unexpected !== undefined) this.log.error({ err: unexpected, requestId: ctx.id }, 'unexpected pipeline error');
          // The client's answer goes out first; the subscribers (log, metrics, traces) hear of it after.
          subscriber.error(error);
          // Writing the error may itself have failed (ctx.answerFailed): the client got that one.
          failed(ctx.answerFailed ?? error, endedAt);
        },
        complete: () => {
          settled = true;
          const endedAt = performance.now();
          subscriber.complete();
          // A whole answer is written as it completes: when that failed, the client got an error, not this answer.
          if (ctx.answerFailed) failed(ctx.answerFailed, endedAt);
          else if (bus.hasListeners('request.completed')) this.whenSettled(ctx, () => bus.emit('request.completed', Object.assign(summary(200, endedAt), { cancelled: false })));
        },
      });
      return () => {
        // Unsubscribed before the end after the shutdown's grace period: the gateway closed the connection, the
        // client did not leave. Set before the unsubscribe, so the spend stage's charge says so too.
        const cut = !settled && ctx.answerFailed === null && this.shutdownCut !== null;
        if (cut) ctx.answerFailed = this.shutdownCut;
        subscription.unsubscribe();
        // Unsubscribed before the end because writing the answer failed, or cut at shutdown: the request failed
        // here, the client did not leave.
        if (!settled && ctx.answerFailed) failed(ctx.answerFailed, performance.now(), cut);
        // Unsubscribed before the end: the client went away (499). What was used so far is still accounted,
        // and the event waits for that (the spend stage settles after the unsubscribe).
        else if (!settled && bus.hasListeners('request.completed')) {
          const endedAt = performance.now();
          this.whenSettled(ctx, () => bus.emit('request.completed', Object.assign(summary(499, endedAt), { cancelled: true })));
        }
        if (--this.inFlight === 0 && this.retiring) this.retiring();
      };
    });
  }

  /** Runs `emit` once the request's after-work (`ctx.pending`) is done: at once when there is none. */
  private whenSettled(ctx: RequestContext, emit: () => void): void {
    if (ctx.pending.length === 0) {
      emit();
      return;
    }
    const done: Promise<void> = Promise.allSettled(ctx.pending)
      .then(emit)
      .finally(() => this.settling.delete(done));
    this.settling.add(done);
  }

  /** Resolves when the terminal events of the requests that ended so far are out (bounded: after-work is short). */
  private async settled(): Promise<void> {
    const deadline = this.shutdownDeadline ?? Date.now() + SETTLE_WAIT_MS;
    while (this.settling.size > 0 && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.settling]), new Promise<void>((resolve) => (timer = setTimeout(resolve, deadline - Date.now())))]);
      clearTimeout(timer);
    }
  }
}

/** Appends the finish reasons an answer event carries (a completion's choices, or a chunk's last). */
function collectFinishReasons(event: ResponseEvent, into: string[]): void {
  const choices = event.kind === 'completion' ? event.completion.choices : event.kind === 'chunk' ? event.chunk.choices : null;
  if (!choices) return;
  for (const choice of choices) {
    const reason = (choice as { finish_reason?: unknown }).finish_reason;
    if (typeof reason === 'string' && into.length < 16) into.push(reason);
  }
}

/** The request's `metadata` tags with string values (the shape OpenAI defines), or null. */
function metadataTags(value: unknown, patterns: readonly string[]): Record<string, string> | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const tags: Record<string, string> = {};
  let count = 0;
  for (const [name, tag] of Object.entries(value as Record<string, unknown>)) {
    if (typeof tag !== 'string' || ++count > 16) continue;
    tags[redactedPrefix(name, 64, patterns)] = redactedPrefix(tag, 512, patterns);
  }
  return count > 0 ? tags : null;
}

/**
 * The terminal events' common part, read off the context as the request ended (`endedAt`, performance time). Each
 * terminal event is this object with its own fields added (Object.assign), not a copy of it: a summary is some thirty
 * fields, and spreading it into a new object for every request cost more than building it.
 */
function summaryOf(ctx: RequestContext, status: number, endedAt: number, finishReasons: string[], bodies: RequestSummary['bodies']): RequestSummary {
  const spent = ctx.spent;
  const request = ctx.request as { user?: unknown };
  // What the client wrote into these reaches the log, traces and alerts: secrets pasted into them are redacted.
  const patterns = ctx.config.settings.logBodies.redact;
  return {
    requestId: ctx.id,
    dialect: ctx.dialect,
    // A /genai path names the model, where a client may have pasted a key as into any model name.
    path: redactPath(ctx.path),
    operation: ctx.operation,
    // The operator's patterns are for people's text: a model name gets the built-in secret shapes only.
    model: redactSecrets(ctx.request.model),
    route: ctx.plan?.route ?? null,
    provider: ctx.upstream?.provider ?? null,
    upstreamModel: ctx.upstream ? redactSecrets(ctx.upstream.upstreamModel) : null,
    keyId: ctx.identity?.key.id ?? null,
    teamId: ctx.identity?.team?.id ?? null,
    stream: ctx.stream,
    status,
    durationMs: endedAt - ctx.startedAt,
    attempts: ctx.upstream?.attempts ?? 0,
    cache: ctx.responseHeaders['x-tollgate-cache'] ?? null,
    guardrails: ctx.extensions.get(GUARDRAIL_ACTIONS) ?? null,
    fallback: ctx.upstream?.fallback ?? false,
    upstreamMs: ctx.timings.upstreamMs,
    firstTokenMs: ctx.timings.firstEventAt === null ? null : ctx.timings.firstEventAt - ctx.startedAt,
    finishReasons,
    user: typeof request.user === 'string' ? redactedPrefix(request.user, 256, patterns) : null,
    metadata: metadataTags(requestMetadata(ctx), patterns),
    usage: spent?.usage ?? null,
    costUsd: spent ? spent.usd : null,
    priced: spent?.priced ?? true,
    estimated: spent?.estimated ?? false,
    bodies,
  };
}
