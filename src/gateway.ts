import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { dirname, resolve } from 'node:path';
import { EventBus } from './bus/bus.js';
import { warmModelPrices } from './catalog/warm-prices.js';
import { ConfigService } from './config/config-service.js';
import { resolveRuntimeConfig } from './config/runtime.js';
import { type RuntimeConfig } from './core/config.js';
import { parseConfigDocument } from './config/load-file.js';
import type { ConfigInput } from './config/schema.js';
import { SecretBox } from './config/secret-box.js';
import { ConfigError, type Env } from './config/secret-ref.js';
import { gatewayError } from './core/errors.js';
import { watchConfigFile } from './config/watch-file.js';
import { buildHttpApp } from './http/app.js';
import { ResponseStore } from './store/response-store.js';
import { startResponseSweeper } from './store/response-sweeper.js';
import type { PipelineDefinition } from './pipeline/definition.js';
import { loadStageRegistry } from './pipeline/load-stages.js';
import { Pipeline } from './pipeline/runner.js';
import { PluginHost } from './pipeline/plugin-host.js';
import { BUS, CACHE, GATEWAY_SERVICE_IDS, GOVERNANCE, HEALTH, IN_PROCESS, LIMITER, LOG, MCP, RESERVATIONS, ServiceRegistry, TRANSPORT, type InProcessCalls } from './services.js';
import { McpHubService, type McpHubView } from './mcp/mcp-hub.js';
import type { ChatCompletion } from './core/canonical.js';
import { CHARGE_TO, INTERNAL_CALL } from './core/guardrail-keys.js';
import { CacheService } from './cache/cache-service.js';
import { createRequestContext } from './core/context.js';
import { lastValueFrom, toArray } from 'rxjs';
import { GovernanceStore } from './governance/governance-store.js';
import { startLogSweeper } from './governance/log-retention.js';
import { SlidingWindowLimiter } from './governance/rate-limiter.js';
import { Reservations } from './governance/reservations.js';
import { UpstreamTransport } from './providers/transport.js';
import { OutboundNetwork } from './network/outbound-network.js';
import { HealthRegistry } from './routing/health-registry.js';
import { replacedKeys } from './routing/replaced-keys.js';
import { Store } from './store/store.js';
import { createLog, type Log } from './log.js';
import { logRequestFailures } from './telemetry/request-events-log.js';
import { RequestLogWriter } from './telemetry/request-log.js';
import { McpCallLog } from './telemetry/mcp-call-log.js';
import { GatewayMetrics } from './telemetry/metrics/gateway-metrics.js';
import { modelPool } from './telemetry/metrics/known-models.js';
import { UsageRollupWriter } from './telemetry/usage-rollup.js';
import { UsageRollups } from './governance/usage-rollups.js';
import { RequestTracer } from './telemetry/tracing/request-tracer.js';
import { AlertService, type AlertsView } from './telemetry/alerts/alert-service.js';
import { VERSION } from './version.js';
import defaultPipeline from '../pipelines/default.js';

export interface GatewayOptions {
  /** Parsed config file content; `{}` is a valid zero config. */
  config?: ConfigInput;
  /** The config file to watch: saving it applies it without a restart. */
  configPath?: string | null;
  /** Environment to read provider keys and settings from; defaults to `process.env`. */
  env?: Env;
  pipeline?: PipelineDefinition;
  log?: Log;
  /** The built web dashboard to serve at `/` (default: this package's dashboard/dist); tests point it elsewhere. */
  dashboardDir?: string;
  /**
   * The clock rate-limit windows are measured on, usage rollups count a request's arrival by, budget periods turn on,
   * keys expire by and alerts are timed by (default `Date.now`); tests move it past a window, a period's end or a key's
   * expiry instead of waiting, or set it to count requests in chosen hours.
   */
  clock?: () => number;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly bus: EventBus;
  readonly configService: ConfigService;
  /** Virtual keys, teams, spend and the request log. */
  readonly governance: GovernanceStore;
  readonly store: Store;
  /** The Responses API answers tollgate keeps (previous_response_id, GET/DELETE /v1/responses/{id}). */
  readonly responses: ResponseStore;
  readonly log: Log;
  /** Whether /api requires the admin key (TOLLGATE_ADMIN_KEY) rather than a loopback client. */
  readonly adminKeyRequired: boolean;
  /** Money held for requests in flight, per budget account (read it; the budget and cost stages change it). */
  readonly reservations: Pick<Reservations, 'reserved' | 'snapshot'>;
  /** Alerts: the open ones, the delivery log and the delivery queue (the rules and channels are in the config). */
  readonly alerts: AlertsView;
  /** The connections to the configured MCP servers: their tools, health, and tool calls. */
  readonly mcp: McpHubView;
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

/** Why a data directory could not be used, in words (the errno alone for the rest). */
const DATA_DIR_PROBLEMS: Record<string, string> = {
  EEXIST: 'it is a file, not a directory',
  ENOTDIR: 'a part of its path is a file, not a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
};

/**
 * Opens the store in the data directory, or says in one line which directory could not be used and why: a path that
 * is a file or cannot be written is the operator's to fix (TOLLGATE_DATA_DIR, settings.data_dir), not a stack trace.
 */
async function openStore(dataDir: string, env: Env): Promise<Store> {
  try {
    return await Store.open(dataDir, VERSION, env.TOLLGATE_FSYNC === 'true');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const problem = (code !== undefined && DATA_DIR_PROBLEMS[code]) || oneLineMessage(err);
    throw new ConfigError(`cannot use the data directory ${resolve(dataDir)}: ${problem}; set TOLLGATE_DATA_DIR (or settings.data_dir) to a directory tollgate can write`);
  }
}

function oneLineMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n', 1)[0] ?? '';
}

/** Wires the gateway: config, store, bus, pipeline, HTTP. Used by `main.ts`, tests and embedders alike. */
export async function createGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const env = options.env ?? process.env;
  // Embedders and tests pass documents directly; they get the same validation as the file.
  const fileDocument = parseConfigDocument(options.config ?? {}, 'options.config');
  // The file and environment alone decide where the data lives and how to log, before the store is open.
  const boot = resolveRuntimeConfig({ api: {}, file: fileDocument }, env, 0).settings;
  const log = options.log ?? createLog(boot.logLevel);
  const bus = new EventBus();
  const definition = options.pipeline ?? defaultPipeline;
  const registry = await loadStageRegistry(definition);
  const store = await openStore(boot.dataDir, env);
  let configService: ConfigService;
  try {
    configService = new ConfigService({
      env,
      bus,
      log,
      repo: store.config,
      audit: store.audit,
      box: SecretBox.fromEnvOrDataDir(env, store.path),
      file: { path: options.configPath ?? null, document: fileDocument },
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  // Every outbound HTTP(S) call (providers, collector, webhooks, MCP servers) leaves through this one dispatcher;
  // settings.network changes swap it live (see the config subscription below).
  const outbound = new OutboundNetwork(configService.current().settings.network);
  const transport = new UpstreamTransport(outbound);
  const governance = new GovernanceStore(store.root, bus, options.clock ? () => new Date((options.clock as () => number)()) : undefined);
  const health = new HealthRegistry(bus);
  const reservations = new Reservations();
  const cache = new CacheService(store.root, resolve(store.path, 'tollgate.lmdb'), store.path, log);
  // `<provider>/<model>` cache embedders call the provider through this gateway's own pipeline: routed, keyed,
  // retried, logged and costed like any embeddings request (as an in-process caller, like the SDK).
  cache.embedThrough(async (model, texts) => {
    const runtime = configService.current();
    const ctx = createRequestContext({ operation: 'embeddings', dialect: 'openai', config: runtime, request: { model, input: texts, encoding_format: 'float' } });
    const events = await lastValueFrom(pipelineFor(runtime).execute(ctx).pipe(toArray()));
    const answer = events.find((event) => event.kind === 'embeddings');
    if (!answer || answer.kind !== 'embeddings') throw new Error(`${model} answered no embeddings`);
    return [...answer.response.data].sort((a, b) => a.index - b.index).map((item) => {
      if (!Array.isArray(item.embedding)) throw new Error(`${model} answered an encoded vector where floats were asked for`);
      return item.embedding;
    });
  });
  // Guardrail moderation calls a configured model through this same pipeline, as an internal caller.
  const inProcess: InProcessCalls = {
    chat(request, { purpose, signal, chargeTo }) {
      const runtime = configService.current();
      const ctx = createRequestContext({ dialect: 'openai', config: runtime, request: { ...request, stream: false } });
      ctx.extensions.set(INTERNAL_CALL, purpose);
      if (chargeTo) ctx.extensions.set(CHARGE_TO, chargeTo);
      return new Promise<ChatCompletion>((resolveAnswer, reject) => {
        let answer: ChatCompletion | null = null;
        let subscription: { unsubscribe(): void } | null = null;
        const abandon = (): void => {
          subscription?.unsubscribe();
          reject(signal?.reason instanceof Error ? signal.reason : new Error('abandoned'));
        };
        if (signal?.aborted) return abandon();
        signal?.addEventListener('abort', abandon, { once: true });
        subscription = pipelineFor(runtime).execute(ctx).subscribe({
          next(event) {
            if (event.kind === 'completion') answer = event.completion;
          },
          error(err: unknown) {
            signal?.removeEventListener('abort', abandon);
            reject(err);
          },
          complete() {
            signal?.removeEventListener('abort', abandon);
            if (answer) resolveAnswer(answer);
            else reject(new Error(`${request.model} answered no completion`));
          },
        });
      });
    },
  };
  const limiter = new SlidingWindowLimiter(60_000, options.clock);
  // MCP servers are connected once the pipeline compiled (below); stages that use tools find the hub as a service.
  const mcp = new McpHubService({ bus, log, clientInfo: { name: 'tollgate', version: VERSION }, outbound });
  // Built-in stages and plugins get these same instances, each only the ones it lists in `requires`.
  const services = new ServiceRegistry()
    .set(BUS, bus)
    .set(LOG, log)
    .set(TRANSPORT, transport)
    .set(GOVERNANCE, governance)
    .set(LIMITER, limiter)
    .set(RESERVATIONS, reservations)
    .set(HEALTH, health)
    .set(CACHE, cache)
    .set(IN_PROCESS, inProcess)
    .set(MCP, mcp);
  // check-config holds plugins' `requires` to this list: it must say what the gateway really offers.
  if (services.ids().sort().join() !== [...GATEWAY_SERVICE_IDS].sort().join()) throw new Error('GATEWAY_SERVICE_IDS must list the services the gateway registers');
  const plugins = new PluginHost({
    services,
    builtins: definition.stages,
    baseDir: options.configPath ? dirname(options.configPath) : process.cwd(),
    cwd: process.cwd(),
    log,
  });
  const pipelines = new WeakMap<RuntimeConfig, Pipeline>();
  /** Compiled pipelines not yet retired, with the plugin modules each holds. */
  const live = new Map<Pipeline, ReadonlySet<string>>();
  const NO_PLUGINS: ReadonlySet<string> = new Set();
  // Traces: a subscriber to the pipeline's request and upstream tracing channels, on while an OTLP endpoint is set.
  const tracer = new RequestTracer(bus, log, VERSION, outbound);
  const build = (runtime: RuntimeConfig, compiled: Awaited<ReturnType<PluginHost['compile']>> | null): Pipeline => {
    const pipeline = new Pipeline(definition, registry, runtime, services, compiled?.plugins ?? null);
    pipelines.set(runtime, pipeline);
    live.set(pipeline, compiled?.keys ?? NO_PLUGINS);
    return pipeline;
  };
  /**
   * Compiles a config version's pipeline before it becomes current: plugin modules are imported (async) and their
   * options, requires and placement checked here, so a bad entry refuses the change whole (ConfigError -> 400, or a
   * rejected file save) and the next request after a good one runs on the new pipeline.
   */
  const prepare = async (runtime: RuntimeConfig): Promise<void> => {
    if (pipelines.has(runtime)) return;
    if (runtime.plugins.length === 0) {
      build(runtime, null);
      return;
    }
    const compiled = await plugins.compile(runtime);
    try {
      build(runtime, compiled);
    } catch (err) {
      await plugins.release(compiled.keys);
      throw err;
    }
  };
  const pipelineFor = (runtime: RuntimeConfig): Pipeline => {
    const pipeline = pipelines.get(runtime);
    if (pipeline) return pipeline;
    // Versions the config service publishes were prepared; an embedder's own config without plugins compiles here.
    if (runtime.plugins.length > 0) throw new Error(`config version ${runtime.version} names plugins but was not prepared by the gateway`);
    return build(runtime, null);
  };
  /**
   * Retires every compiled pipeline but the current one: its stages' close() runs once no request is still on it,
   * then the plugins no version names any more are closed. (A version compiled but never published, say its
   * save failed, is retired at the next change.)
   */
  const retireSuperseded = (current: RuntimeConfig | null, immediately = false): Promise<unknown> => {
    const keep = current ? pipelines.get(current) : undefined;
    const done: Promise<void>[] = [];
    for (const [pipeline, keys] of live) {
      if (pipeline === keep) continue;
      live.delete(pipeline);
      done.push(pipeline.retire(immediately).then(() => plugins.release(keys)));
    }
    return Promise.all(done);
  };
  // Compile now so a bad pipeline definition or plugin fails the start with the field named, not the first request.
  try {
    await prepare(configService.current());
  } catch (err) {
    await plugins.closeAll();
    await cache.close();
    await store.close();
    if (err instanceof ConfigError) throw new ConfigError(`cannot start: ${err.message}`);
    throw err;
  }
  configService.setPreparer(prepare);
  // GET /api/config/schema folds in the options schemas of the plugins the running config loaded.
  configService.setPluginSchemas((config) => plugins.optionSchemas(config));
  // The options plugins declare secret are masked wherever the config is shown and sealed where it is stored.
  configService.setPluginSecrets((name) => plugins.secretOptions(name));
  tracer.configure(configService.current().settings.tracing);
  let previousConfig = configService.current();
  const configSubscription = configService.changes.subscribe((current) => {
    // Breakers and health outlive config versions, except a key's whose value was replaced under the same id (the
    // renewed key is called at once, not held back by the breaker the refused one opened) and a removed provider's.
    for (const { provider, keyId } of replacedKeys(previousConfig, current)) health.forgetKey(provider, keyId);
    // A provider taken out is forgotten: its open breakers would otherwise never close (see forgetProvider).
    for (const name of previousConfig.providers.keys()) if (!current.providers.has(name)) health.forgetProvider(name);
    previousConfig = current;
    // First, so the collector, MCP servers and the next requests below already go out the new way.
    if (outbound.apply(current.settings.network)) log.info({ proxy: current.settings.network.httpsProxy !== null, caFile: current.settings.network.caFile }, 'network settings applied');
    tracer.configure(current.settings.tracing);
    // settings.log_level is live like the rest: a file save or an API change turns debug logging on or off without a
    // restart. Only the gateway's own logger: an embedder's (options.log) keeps the level its owner gave it.
    if (!options.log && log.level !== current.settings.logLevel) log.level = current.settings.logLevel;
    // MCP servers connect in the background (the current config at once: changes is a behaviour subject); a
    // change keeps unchanged servers' connections and replaces the rest.
    void mcp.reconfigure(current.mcp);
    void retireSuperseded(current);
  });

  const adminKey = env.TOLLGATE_ADMIN_KEY || null;
  // Every request that reached the pipeline, refused or answered, is written to the request log from its terminal event.
  const requestLog = new RequestLogWriter(bus, governance, log);
  const stoppers = [logRequestFailures(bus, log)];
  if (options.configPath) stoppers.push(watchConfigFile(options.configPath, configService, log));
  // Usage per key, team, model, provider and route per hour and day, kept as requests finish (GET /api/usage).
  const usage = new UsageRollupWriter(bus, new UsageRollups(store.root), log, options.clock);
  // Prometheus series, fed by bus events and read from the gateway's state at scrape time; while
  // settings.metrics.enabled is false nothing is subscribed (turned on again, the counters start from zero).
  const metricsSources = { bus, health, governance, config: () => configService.current(), storeBytes: () => store.sizeBytes() };
  let metricsNow: GatewayMetrics | null = null;
  const switchMetrics = (enabled: boolean): void => {
    if (enabled && !metricsNow) metricsNow = new GatewayMetrics(metricsSources);
    else if (!enabled && metricsNow) {
      metricsNow.stop();
      metricsNow = null;
    }
  };
  switchMetrics(configService.current().settings.metrics.enabled);
  const metricsSwitch = configService.changes.subscribe((current) => switchMetrics(current.settings.metrics.enabled));
  // Alerts: rules over bus events, delivered to the configured channels from a queue persisted in the store.
  const alerts = new AlertService({
    bus,
    root: store.root,
    log,
    alerts: () => configService.current().alerts,
    budgetUsage: (account, id) => {
      const record = account === 'key' ? governance.getKeyRecord(id) : governance.getTeamRecord(id);
      if (!record || record.budget === null || record.budget === undefined) return null;
      return { spend: governance.currentUsage(record).spend, budget: record.budget };
    },
    isRoute: (name) => configService.current().routes.has(name),
    isKnownModel: (subject) => {
      const slash = subject.indexOf('/');
      return slash > 0 && modelPool(configService.current(), subject.slice(0, slash), subject.slice(slash + 1)) !== 'unknown';
    },
    ...(options.clock ? { now: options.clock } : {}),
    userAgent: `tollgate/${VERSION}`,
    outbound,
  });
  // Every MCP tool call, whichever door it came through, is kept in the store (GET /api/mcp/calls).
  const mcpCalls = new McpCallLog(store.root, bus, log);
  const metrics = {
    contentType: GatewayMetrics.contentType,
    render: () => metricsNow?.render() ?? Promise.resolve(''),
  };
  // Work on existing data that runs in the background after start, named in /health's `loading` until done.
  let backfilling = true;
  // Price warmings running (one per config change that adds providers; see below).
  let warmingPrices = 0;
  const loading = (): string[] => [...cache.loading(), ...(backfilling ? ['request_log_error_index'] : []), ...(warmingPrices > 0 ? ['model_prices'] : [])];
  // Responses API answers kept for previous_response_id and GET /v1/responses/{id}, on the gateway's clock.
  const responses = new ResponseStore(store.root, options.clock);
  const app = buildHttpApp({ config: configService, bus, governance, responses, pipelineFor, log, version: VERSION, startedAt: Date.now(), adminKey, health, metrics, usage, cache, alerts, mcp, mcpCalls, limiter, outbound, loading, dashboardDir: options.dashboardDir });

  // Stores from before the error index get it built in the background (failed-request filters of /api/logs use it).
  let closingStore = false;
  const backfill = governance.backfillErrorIndex(() => closingStore).finally(() => (backfilling = false)).then(
    (indexed) => indexed > 0 && log.info({ indexed }, 'request log: error index built for earlier entries'),
    (err: unknown) => log.error({ err }, 'request log: could not build the error index'),
  );
  // The model list's prices, computed between requests after start and after a change adds providers (warm-prices.ts):
  // built on the first GET /v1/models instead, they held every request for a quarter of a second.
  let stopWarming = false;
  const priceWarmer = configService.changes.subscribe((current) => {
    warmingPrices++;
    void warmModelPrices(current, () => stopWarming)
      .catch((err: unknown) => log.warn({ err }, 'catalogue: could not price the model list ahead'))
      .finally(() => warmingPrices--);
  });
  stoppers.push(() => {
    stopWarming = true;
    priceWarmer.unsubscribe();
  });
  // The request log is kept within settings.log_retention_days / log_max_entries / log_max_bytes (a sweep at start, then every few minutes).
  // Stored Responses are kept within their expiry, settings.response_max_entries and response_max_bytes the same way.
  const responseSweeper = startResponseSweeper(responses, () => ({ maxEntries: configService.current().settings.responseMaxEntries, maxBytes: configService.current().settings.responseMaxBytes }), log);
  const logSweeper = startLogSweeper(governance, () => {
    const { logRetentionDays, logMaxEntries, logMaxBytes } = configService.current().settings;
    return { days: logRetentionDays, maxEntries: logMaxEntries, maxBytes: logMaxBytes };
  }, log);

  // Every open connection, with the exchanges it carries that are not answered yet (none before a request's head has
  // fully arrived, or between two requests; several when pipelined), so a drain can tell the requests it accepted
  // from connections that have not sent one.
  const exchanges = new Map<Socket, Set<{ req: IncomingMessage; res: ServerResponse }>>();
  app.server.on('connection', (socket: Socket) => {
    exchanges.set(socket, new Set());
    socket.once('close', () => exchanges.delete(socket));
  });
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const exchange = { req, res };
    const pending = exchanges.get(req.socket);
    pending?.add(exchange);
    res.once('finish', () => pending?.delete(exchange));
  });
  /**
   * Draining: closes every connection that carries no accepted request. Node's closeIdleConnections() keeps one whose
   * client is still sending a request head or body (its parser is mid-message), so a client that trickles, or stalls
   * half-way, held the drain for the whole grace period. Such a request has reached no handler (its body was not
   * whole); its client gets the connection closed and retries elsewhere. A request read whole, or one being
   * answered already (the draining 503 goes out before the body is read), runs on.
   */
  const dropUnaccepted = (): void => {
    for (const [socket, pending] of exchanges) {
      const accepted = [...pending].some(({ req, res }) => req.complete || res.headersSent);
      if (!accepted) socket.destroy();
    }
  };

  let closing: Promise<void> | null = null;
  const close = (graceMs = configService.current().settings.shutdownGraceMs): Promise<void> => {
    closing ??= (async () => {
      const forced = setTimeout(() => {
        log.warn({ graceMs }, 'shutdown grace period over: closing remaining connections');
        // The requests these connections carry are ended by the gateway: their terminal events, charges and log
        // entries say so (a 503 shutting_down, cancelled), not that their clients left (499).
        const cut = gatewayError('shutting_down', `The gateway shut down before the answer ended: the shutdown grace period (${graceMs} ms) was over and it closed the connection.`);
        for (const pipeline of live.keys()) pipeline.cutOnShutdown(cut);
        app.server.closeAllConnections();
      }, graceMs);
      forced.unref();
      // Connections that finish their last response while draining would otherwise linger until the
      // client's keep-alive timeout; close them as soon as they go idle. Those still sending a request go at once.
      dropUnaccepted();
      const reaper = setInterval(dropUnaccepted, 50);
      reaper.unref();
      try {
        await app.close();
      } finally {
        clearTimeout(forced);
        clearInterval(reaper);
        for (const stop of stoppers) stop();
        configSubscription.unsubscribe();
        // In-flight requests are done or cut off by now: once they have unwound (and their cut-off streams are charged
        // and logged), close every version's stages, then the plugins.
        await retireSuperseded(null, true);
        await plugins.closeAll();
        // MCP connections close after the stages that call tools: stdio servers' processes end here.
        await mcp.close();
        // Log entries of the last requests (a cancelled stream settles after its client left) before the store closes.
        await requestLog.flush();
        requestLog.stop();
        await mcpCalls.flush();
        mcpCalls.stop();
        metricsSwitch.unsubscribe();
        switchMetrics(false);
        await usage.close();
        // Spans of the last requests go out before the process ends (bounded by the exporter's timeout).
        await tracer.close();
        // Notifications not delivered yet stay queued in the store and go out after the next start.
        await alerts.close();
        await logSweeper.stop();
        await responseSweeper.stop();
        closingStore = true;
        await backfill;
        // Upstream pools, and those of network settings replaced while calls ran on them.
        await outbound.close();
        // The semantic index is saved and the embedder's worker ends before the store closes.
        await cache.close();
        await store.close();
      }
    })();
    return closing;
  };

  return {
    app,
    bus,
    configService,
    governance,
    store,
    responses,
    log,
    adminKeyRequired: adminKey !== null,
    reservations,
    alerts,
    mcp,
    pipelineFor,
    async listen(listenOptions = {}) {
      const current = configService.current().settings;
      return app.listen({ port: listenOptions.port ?? current.port, host: listenOptions.host ?? current.host });
    },
    close,
  };
}
