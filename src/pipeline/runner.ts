import { defer, Observable, throwError } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { StageOutcome } from '../core/events.js';
import type { RuntimeConfig } from '../core/config.js';
import type { ResponseEvent } from '../core/canonical.js';
import { GatewayError, toGatewayError } from '../errors.js';
import type { RequestContext } from '../core/context.js';
import type { PipelineDefinition } from './definition.js';
import { isolate, type PluginGuard } from './isolate.js';
import type { Next, Stage } from '../core/stage.js';
import type { StageDeps, StageFactory } from './stage.js';

export type StageRegistry = ReadonlyMap<string, StageFactory>;

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

/** Wraps a stage so that the runner reports `stage.completed` for it; stages get that event for free. */
function instrument(stage: Stage, bus: EventBus): Stage {
  return {
    name: stage.name,
    run(ctx, next) {
      return defer(() => {
        const started = performance.now();
        let reported = false;
        const report = (outcome: StageOutcome): void => {
          if (reported) return;
          reported = true;
          bus.emit('stage.completed', { requestId: ctx.id, stage: stage.name, durationMs: performance.now() - started, outcome });
        };
        const observed: Next = () => {
          report('passed');
          return next();
        };
        return new Observable<ResponseEvent>((subscriber) => {
          let answer: Observable<ResponseEvent>;
          try {
            answer = stage.run(ctx, observed);
          } catch (err) {
            // A stage that throws instead of returning an error Observable still gets its event.
            report('failed');
            subscriber.error(err);
            return undefined;
          }
          return answer.subscribe({
            next(event) {
              report('answered');
              subscriber.next(event);
            },
            error(err: unknown) {
              report('failed');
              subscriber.error(err);
            },
            complete() {
              report('answered');
              subscriber.complete();
            },
          });
        });
      });
    },
  };
}

const endOfPipeline: Next = () =>
  throwError(() => GatewayError.internal('The pipeline ended without a stage that answers the request.'));

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

  constructor(
    definition: PipelineDefinition,
    registry: StageRegistry,
    config: RuntimeConfig,
    private readonly deps: StageDeps,
    plugins: PipelinePlugins | null = null,
  ) {
    this.stages = [];
    for (const name of plugins?.order ?? definition.stages) {
      if (plugins?.stages.has(name)) {
        const plugin = plugins.stages.get(name);
        if (!plugin) continue;
        this.created.push(plugin.stage);
        // Only users' plugins pay for isolation (and a timer only when they set timeout_ms).
        this.stages.push(instrument(isolate(plugin.stage, plugin.guard, deps.bus, deps.log), deps.bus));
        continue;
      }
      const factory = registry.get(name);
      if (!factory) throw new Error(`pipeline "${definition.name}": unknown stage "${name}"`);
      const stage = factory.create(config, deps);
      if (stage) {
        this.created.push(stage);
        this.stages.push(instrument(stage, deps.bus));
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
          this.deps.log.error({ err, stage: stage.name }, 'a stage failed to close');
        }
      }
    });
    // At shutdown nothing waits for requests that never end.
    if (immediately) this.retiring?.();
    return this.retired;
  }

  /** Runs one request. Lifecycle events are emitted here so every dialect and the SDK get them alike. */
  execute(ctx: RequestContext): Observable<ResponseEvent> {
    const { bus } = this.deps;
    const composed = this.stages.reduceRight<Next>((next, stage) => () => stage.run(ctx, next), endOfPipeline);
    return new Observable<ResponseEvent>((subscriber) => {
      this.inFlight++;
      if (bus.hasListeners('request.received')) {
        bus.emit('request.received', { requestId: ctx.id, dialect: ctx.dialect, model: ctx.request.model, stream: ctx.stream, at: Date.now() });
      }
      let settled = false;
      const completed = (cancelled: boolean): void => {
        settled = true;
        if (!bus.hasListeners('request.completed')) return;
        bus.emit('request.completed', {
          requestId: ctx.id,
          model: ctx.request.model,
          provider: ctx.upstream?.provider ?? null,
          upstreamModel: ctx.upstream?.upstreamModel ?? null,
          stream: ctx.stream,
          status: 200,
          durationMs: performance.now() - ctx.startedAt,
          usage: ctx.usage,
          cancelled,
        });
      };
      const subscription = composed().subscribe({
        next: (event) => subscriber.next(event),
        error: (err: unknown) => {
          settled = true;
          const error = toGatewayError(err);
          if (!(err instanceof GatewayError)) this.deps.log.error({ err, requestId: ctx.id }, 'unexpected pipeline error');
          bus.emit('request.failed', {
            requestId: ctx.id,
            model: ctx.request.model,
            provider: ctx.upstream?.provider ?? null,
            stream: ctx.stream,
            status: error.status,
            type: error.type,
            code: error.code,
            message: error.message,
            durationMs: performance.now() - ctx.startedAt,
          });
          subscriber.error(error);
        },
        complete: () => {
          completed(false);
          subscriber.complete();
        },
      });
      return () => {
        subscription.unsubscribe();
        // Unsubscribed before the end: the client went away. What was used so far is still accounted.
        if (!settled) completed(true);
        if (--this.inFlight === 0 && this.retiring) this.retiring();
      };
    });
  }
}
