import { tracingChannel, type TracingChannel } from 'node:diagnostics_channel';
import { defer, Observable, throwError } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { RequestSummary, StageOutcome } from '../core/events.js';
import type { PluginDefinition } from '../core/plugin.js';
import type { Log } from '../log.js';
import { BUS, LOG, type ServiceRegistry } from '../services.js';
import type { RuntimeConfig } from '../core/config.js';
import type { ResponseEvent } from '../core/canonical.js';
import { GatewayError, toGatewayError } from '../core/errors.js';
import type { RequestContext } from '../core/context.js';
import type { PipelineDefinition } from './definition.js';
import { isolate, type PluginGuard } from './isolate.js';
import type { Next, Stage } from '../core/stage.js';
import { gatewayError } from '../core/errors.js';

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
 * What a stage's tracing channel publishes (`tollgate:stage:<name>`, node:diagnostics_channel): `start` when the
 * stage begins on a request, `end` when its `run` returned, `asyncStart` when its answer starts flowing back (the
 * first event, or the end of an empty answer), `asyncEnd` when it finished however it ended (answered, failed, or
 * the client left: `cancelled`), and `error` with the error. A tracer subscribes; with no subscriber it costs one
 * property read per stage and request.
 */
export interface StageTraceMessage {
  requestId: string;
  stage: string;
  ctx: RequestContext;
  outcome?: StageOutcome;
  cancelled?: boolean;
  error?: unknown;
}

const channels = new Map<string, TracingChannel<StageTraceMessage>>();

/** The tracing channel of a stage name (created once per name; channels are process-wide by name). */
export function stageChannel(name: string): TracingChannel<StageTraceMessage> {
  let channel = channels.get(name);
  if (!channel) {
    channel = tracingChannel<StageTraceMessage>(`tollgate:stage:${name}`);
    channels.set(name, channel);
  }
  return channel;
}

/**
 * Wraps a stage so that the runner reports `stage.completed` for it and publishes its tracing channel; stages get
 * both for free.
 */
function instrument(stage: Stage, bus: EventBus): Stage {
  const channel = stageChannel(stage.name);
  return {
    name: stage.name,
    run(ctx, next) {
      return defer(() => {
        const started = performance.now();
        const trace: StageTraceMessage | null = channel.hasSubscribers ? { requestId: ctx.id, stage: stage.name, ctx } : null;
        let reported = false;
        let flowing = false;
        const report = (outcome: StageOutcome): void => {
          if (reported) return;
          reported = true;
          bus.emit('stage.completed', { requestId: ctx.id, stage: stage.name, durationMs: performance.now() - started, outcome });
        };
        const answering = (): void => {
          if (flowing || !trace) return;
          flowing = true;
          channel.asyncStart.publish(trace);
        };
        let finished = false;
        const finish = (outcome: StageOutcome, err?: unknown): void => {
          if (finished || !trace) return;
          finished = true;
          trace.outcome = outcome;
          if (err !== undefined) {
            trace.error = err;
            channel.error.publish(trace);
          }
          answering();
          channel.asyncEnd.publish(trace);
        };
        let passedOn = false;
        const observed: Next = () => {
          passedOn = true;
          report('passed');
          return next();
        };
        return new Observable<ResponseEvent>((subscriber) => {
          let answer: Observable<ResponseEvent>;
          if (trace) channel.start.publish(trace);
          try {
            answer = stage.run(ctx, observed);
          } catch (err) {
            // A stage that throws instead of returning an error Observable still gets its event.
            report('failed');
            if (trace) channel.end.publish(trace);
            finish('failed', err);
            subscriber.error(err);
            return undefined;
          }
          if (trace) channel.end.publish(trace);
          const subscription = answer.subscribe({
            next(event) {
              report('answered');
              answering();
              subscriber.next(event);
            },
            error(err: unknown) {
              report('failed');
              finish('failed', err);
              subscriber.error(err);
            },
            complete() {
              report('answered');
              finish(passedOn ? 'passed' : 'answered');
              subscriber.complete();
            },
          });
          return () => {
            subscription.unsubscribe();
            if (trace && !finished) {
              trace.cancelled = true;
              finish(passedOn ? 'passed' : 'answered');
            }
          };
        });
      });
    },
  };
}

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
  private retiring: (() => void) | null = null;
  private retired: Promise<void> | null = null;
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
   * A stage's close error is logged: the version is gone either way. `immediately` (shutdown) does not wait.
   */
  retire(immediately = false): Promise<void> {
    this.retired ??= new Promise<void>((resolve) => {
      this.retiring = resolve;
      if (this.inFlight === 0) resolve();
    }).then(async () => {
      for (const stage of this.created) {
        if (!stage.close) continue;
        try {
          await stage.close();
        } catch (err) {
          this.log.error({ err, stage: stage.name }, 'a stage failed to close');
        }
      }
    });
    // At shutdown nothing waits for requests that never end.
    if (immediately) this.retiring?.();
    return this.retired;
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
      let settled = false;
      const subscription = composed().subscribe({
        next: (event) => subscriber.next(event),
        error: (err: unknown) => {
          settled = true;
          const error = toGatewayError(err);
          if (!(err instanceof GatewayError)) this.log.error({ err, requestId: ctx.id }, 'unexpected pipeline error');
          this.whenSettled(ctx, () =>
            bus.emit('request.failed', { ...summary(ctx, error.status), type: error.type, code: error.code, message: error.message }),
          );
          subscriber.error(error);
        },
        complete: () => {
          settled = true;
          if (bus.hasListeners('request.completed')) this.whenSettled(ctx, () => bus.emit('request.completed', { ...summary(ctx, 200), cancelled: false }));
          subscriber.complete();
        },
      });
      return () => {
        subscription.unsubscribe();
        // Unsubscribed before the end: the client went away (499). What was used so far is still accounted,
        // and the event waits for that (the spend stage settles after the unsubscribe).
        if (!settled && bus.hasListeners('request.completed')) this.whenSettled(ctx, () => bus.emit('request.completed', { ...summary(ctx, 499), cancelled: true }));
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
    void Promise.allSettled(ctx.pending).then(emit);
  }
}

/** The terminal events' common part, read off the context as the request ended. */
function summary(ctx: RequestContext, status: number): RequestSummary {
  const spent = ctx.spent;
  return {
    requestId: ctx.id,
    dialect: ctx.dialect,
    model: ctx.request.model,
    route: ctx.plan?.route ?? null,
    provider: ctx.upstream?.provider ?? null,
    upstreamModel: ctx.upstream?.upstreamModel ?? null,
    keyId: ctx.identity?.key.id ?? null,
    teamId: ctx.identity?.team?.id ?? null,
    stream: ctx.stream,
    status,
    durationMs: performance.now() - ctx.startedAt,
    attempts: ctx.upstream?.attempts ?? 0,
    usage: spent?.usage ?? null,
    costUsd: spent ? spent.usd : null,
    priced: spent?.priced ?? true,
    estimated: spent?.estimated ?? false,
  };
}
