import type { FastifyInstance } from 'fastify';
import { EventBus } from './bus/bus.js';
import { ConfigStore } from './config/config-store.js';
import type { RuntimeConfig } from './config/runtime.js';
import type { ConfigFile } from './config/schema.js';
import type { Env } from './config/secret-ref.js';
import { buildHttpApp } from './http/app.js';
import { Pipeline } from './pipeline/runner.js';
import type { PipelineDefinition } from './pipeline/definition.js';
import { loadStageRegistry } from './pipeline/load-stages.js';
import { UpstreamTransport } from './providers/transport.js';
import { Store } from './store/store.js';
import { createLog, type Log } from './telemetry/log.js';
import { logRequestFailures } from './telemetry/request-events-log.js';
import { VERSION } from './version.js';
import defaultPipeline from '../pipelines/default.js';

export interface GatewayOptions {
  /** Parsed config file content; `{}` is a valid zero config. */
  config?: ConfigFile;
  /** Environment to read provider keys and settings from; defaults to `process.env`. */
  env?: Env;
  pipeline?: PipelineDefinition;
  log?: Log;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly bus: EventBus;
  readonly config: ConfigStore;
  readonly store: Store;
  readonly log: Log;
  /** The compiled pipeline for a config version (compiled once per version). */
  pipelineFor(config: RuntimeConfig): Pipeline;
  /** Starts listening; resolves with the base URL (e.g. `http://127.0.0.1:8080`). */
  listen(options?: { port?: number; host?: string }): Promise<string>;
  /**
   * Stops accepting connections, lets in-flight requests finish for up to `graceMs` (default from
   * settings), then closes what is left and releases the store.
   */
  close(graceMs?: number): Promise<void>;
}

/** Wires the gateway: config, store, bus, pipeline, HTTP. Used by `main.ts`, tests and embedders alike. */
export async function createGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const env = options.env ?? process.env;
  const config = new ConfigStore(options.config ?? {}, env);
  const settings = config.current().settings;
  const log = options.log ?? createLog(settings.logLevel);
  const bus = new EventBus();
  const definition = options.pipeline ?? defaultPipeline;
  const registry = await loadStageRegistry(definition);
  const store = await Store.open(settings.dataDir, VERSION);
  const transport = new UpstreamTransport();
  const stageDeps = { bus, log, transport };
  const pipelines = new WeakMap<RuntimeConfig, Pipeline>();
  const pipelineFor = (runtime: RuntimeConfig): Pipeline => {
    let pipeline = pipelines.get(runtime);
    if (!pipeline) {
      pipeline = new Pipeline(definition, registry, runtime, stageDeps);
      pipelines.set(runtime, pipeline);
    }
    return pipeline;
  };
  // Compile now so a bad pipeline definition fails at start, not on the first request.
  pipelineFor(config.current());

  const unsubscribers = [logRequestFailures(bus, log)];
  const app = buildHttpApp({ config, pipelineFor, log, version: VERSION, startedAt: Date.now() });

  let closing: Promise<void> | null = null;
  const close = (graceMs = config.current().settings.shutdownGraceMs): Promise<void> => {
    closing ??= (async () => {
      const forced = setTimeout(() => {
        log.warn({ graceMs }, 'shutdown grace period over: closing remaining connections');
        app.server.closeAllConnections();
      }, graceMs);
      forced.unref();
      // Connections that finish their last response while draining would otherwise linger until the
      // client's keep-alive timeout; close them as soon as they go idle.
      const reaper = setInterval(() => app.server.closeIdleConnections(), 50);
      reaper.unref();
      try {
        await app.close();
      } finally {
        clearTimeout(forced);
        clearInterval(reaper);
        for (const unsubscribe of unsubscribers) unsubscribe();
        await transport.close();
        await store.close();
      }
    })();
    return closing;
  };

  return {
    app,
    bus,
    config,
    store,
    log,
    pipelineFor,
    async listen(listenOptions = {}) {
      const current = config.current().settings;
      return app.listen({ port: listenOptions.port ?? current.port, host: listenOptions.host ?? current.host });
    },
    close,
  };
}
