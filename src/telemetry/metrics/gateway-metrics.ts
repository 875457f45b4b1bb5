import { Counter, Gauge, Registry } from 'prom-client';
import type { EventBus } from '../../bus/bus.js';
import type { RuntimeConfig } from '../../core/config.js';
import { answeredFromCache, type GatewayEvents, type RequestSummary } from '../../core/events.js';
import type { GovernanceStore } from '../../governance/governance-store.js';
import type { HealthRegistry } from '../../routing/health-registry.js';
import { BufferedCounter } from './buffered-counter.js';
import { BufferedHistogram } from './buffered-histogram.js';
import { modelPool } from './known-models.js';
import { LabelValues } from './label-values.js';
import { processMetrics } from './process-metrics.js';

/** Latency buckets in seconds: sub-millisecond gateway work up to multi-minute reasoning answers. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** The gateway's own time per request: tenths of a millisecond up to a second. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const BREAKER_VALUE: Record<string, number> = { closed: 0, 'half-open': 1, open: 2 };
/** Label values used when no upstream was called (a refusal before routing). */
const NONE = 'none';
/** The error code of an attempt cut short because its client left. */
const CANCELLED = 'client_cancelled';

/** A target's `<provider>/<model>` label in its parts (provider names hold no slash; model names may). */
function targetLabel(label: string): { provider: string; model: string } {
  const slash = label.indexOf('/');
  return { provider: label.slice(0, slash), model: label.slice(slash + 1) };
}

export interface MetricsSources {
  bus: EventBus;
  health: HealthRegistry;
  governance: GovernanceStore;
  config: () => RuntimeConfig;
  storeBytes: () => number;
}

/**
 * The Prometheus series (`GET /metrics`), fed by bus events as requests finish and, for state (breakers, provider
 * health, key spend, store size), read at scrape time. Every label a client can influence is capped (LabelValues):
 * past the cap values fold into `other`. Recording is a few map lookups per event; nothing is awaited.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly stops: Array<() => void>;
  private readonly providers = new LabelValues(100);
  /**
   * Models by provider (the context), capped per kind (see modelPool): the config's always keep their labels, the
   * catalogue's and made-up names have 200 each. A refused request's model label (no provider) is a route's name or
   * `none`, named by the config too.
   */
  private readonly models = new LabelValues(200, (model, provider) =>
    provider === NONE ? (model === NONE || this.sources.config().routes.has(model) ? null : 'unknown') : modelPool(this.sources.config(), provider, model),
  );
  private readonly statuses = new LabelValues(60);
  private readonly keys = new LabelValues(2_000);
  /** Requests in the pipeline (a refusal before it, reported by the HTTP layer, was never in flight). */
  private readonly running = new Set<string>();
  /** Requests whose next attempt follows a fallback (so it is not counted as a retry). */
  private readonly afterFallback = new Set<string>();

  private readonly requests = new BufferedCounter(this.registry, 'tollgate_requests_total', 'Requests that reached the pipeline, by the HTTP status the client got (499: the client left).', ['provider', 'model', 'status']);
  private readonly duration = new BufferedHistogram(this.registry, 'tollgate_request_duration_seconds', 'Time from arrival to the end of the answer.', LATENCY_BUCKETS);
  private readonly firstToken = new BufferedHistogram(this.registry, 'tollgate_time_to_first_token_seconds', 'Streams: time from arrival to the first chunk sent to the client.', LATENCY_BUCKETS);
  private readonly overhead = new BufferedHistogram(this.registry, 'tollgate_gateway_overhead_seconds', 'Time the gateway itself took: the total minus the time spent waiting on upstreams.', OVERHEAD_BUCKETS);
  private readonly tokens = new BufferedCounter(this.registry, 'tollgate_tokens_total', 'Tokens as charged, by direction (input, output).', ['provider', 'model', 'direction']);
  private readonly cost = new BufferedCounter(this.registry, 'tollgate_cost_usd_total', 'USD charged.', ['provider', 'model']);
  private readonly attempts = new BufferedCounter(this.registry, 'tollgate_upstream_attempts_total', 'Upstream attempts, retries and fallbacks included, by outcome (success, error, cancelled: the client left).', ['provider', 'model', 'outcome']);
  private readonly fallbacks = this.counter('tollgate_fallbacks_total', 'Moves from one target group to the next (a fallback used).', []);
  private readonly retries = this.counter('tollgate_retries_total', 'Attempts after the first that did not follow a fallback (the same group tried again).', []);
  private readonly rateLimited = this.counter('tollgate_ratelimit_rejections_total', 'Requests refused by a rate limit (429).', ['scope', 'unit']);
  private readonly budgetRefused = this.counter('tollgate_budget_rejections_total', 'Requests refused because a budget was spent (429, code budget_exceeded).', ['account']);
  private readonly authRefused = this.counter('tollgate_auth_rejections_total', 'Requests refused by authentication or a key\'s model list.', ['reason']);
  private readonly cacheLookups = this.counter(
    'tollgate_cache_lookups_total',
    'Cache lookups by tier (exact, semantic; none for a miss) and result (hit, miss, shadow_hit).',
    ['tier', 'result'],
  );
  private readonly guardrailRules = new LabelValues(200);
  private readonly guardrailActions = this.counter(
    'tollgate_guardrail_actions_total',
    'Guardrail rules acting on requests (side input) and answers (side output), by rule and action (blocked, redacted, flagged).',
    ['rule', 'action', 'side'],
  );
  private readonly cacheSaved = this.counter('tollgate_cache_saved_usd_total', 'USD not spent because the cache answered (what each answer cost when it was bought).', []);
  /** Read from `running` when scraped, instead of a gauge update on every arrival and end. */
  private readonly inflight: Gauge = new Gauge({
    name: 'tollgate_inflight_requests',
    help: 'Requests in the pipeline right now.',
    registers: [this.registry],
    collect: (): void => this.inflight.set(this.running.size),
  });

  constructor(private readonly sources: MetricsSources) {
    const { bus } = sources;
    this.registerStateGauges();
    this.stops = [
      bus.on('request.received', (event: GatewayEvents['request.received']) => {
        this.running.add(event.requestId);
      }),
      bus.on('request.completed', (event: GatewayEvents['request.completed']) => this.finished(event)),
      bus.on('request.failed', (event: GatewayEvents['request.failed']) => this.finished(event)),
      bus.on('provider.attempted', (event: GatewayEvents['provider.attempted']) => this.attempted(event)),
      bus.on('fallback.used', (event: GatewayEvents['fallback.used']) => {
        this.fallbacks.inc();
        this.afterFallback.add(event.requestId);
      }),
      bus.on('ratelimit.exceeded', (event: GatewayEvents['ratelimit.exceeded']) => this.rateLimited.inc({ scope: event.scope, unit: event.unit })),
      bus.on('budget.exceeded', (event: GatewayEvents['budget.exceeded']) => this.budgetRefused.inc({ account: event.account })),
      bus.on('auth.rejected', (event: GatewayEvents['auth.rejected']) => this.authRefused.inc({ reason: event.reason })),
      bus.on('cache.hit', (event: GatewayEvents['cache.hit']) => {
        this.cacheLookups.inc({ tier: event.tier, result: event.served ? 'hit' : 'shadow_hit' });
        if (event.served && event.savedUsd > 0) this.cacheSaved.inc(event.savedUsd);
      }),
      bus.on('cache.miss', () => this.cacheLookups.inc({ tier: 'none', result: 'miss' })),
      bus.on('guardrail.blocked', (event: GatewayEvents['guardrail.blocked']) => this.guardrailActed(event, 'blocked')),
      bus.on('guardrail.redacted', (event: GatewayEvents['guardrail.redacted']) => this.guardrailActed(event, 'redacted')),
      bus.on('guardrail.flagged', (event: GatewayEvents['guardrail.flagged']) => this.guardrailActed(event, 'flagged')),
    ];
  }

  /** The exposition: tollgate's series and the process's (prom-client defaults), in Prometheus text format. */
  async render(): Promise<string> {
    return Registry.merge([this.registry, processMetrics()]).metrics();
  }

  static readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;

  stop(): void {
    for (const stop of this.stops) stop();
  }

  private finished(event: RequestSummary): void {
    this.running.delete(event.requestId);
    this.afterFallback.delete(event.requestId);
    const provider = this.providers.of(event.provider ?? NONE);
    // A request no provider took (refused by auth, a limit, an unknown model) is labelled by its route, or
    // `none`: the model name it sent is the client's to invent, and refusals cost no key, so they must not
    // use up the model label's values before the real models are seen.
    const model = this.models.of(event.upstreamModel ?? (event.provider === null ? this.refusedModel(event) : event.model), event.provider ?? NONE);
    this.requests.add(1, provider, model, this.statuses.of(String(event.status)));
    const seconds = event.durationMs / 1000;
    this.duration.observe(provider, model, seconds);
    this.overhead.observe(provider, model, Math.max(0, event.durationMs - event.upstreamMs) / 1000);
    if (event.stream && event.firstTokenMs !== null) this.firstToken.observe(provider, model, event.firstTokenMs / 1000);
    // An answer from the response cache was charged no tokens (its usage is the stored answer's): they were counted
    // when it was bought, and counting them again would show the provider more tokens than it billed.
    const cached = answeredFromCache(event);
    if (event.usage && !cached) {
      if (event.usage.input_tokens > 0) this.tokens.add(event.usage.input_tokens, provider, model, 'input');
      if (event.usage.output_tokens > 0) this.tokens.add(event.usage.output_tokens, provider, model, 'output');
    }
    if (event.costUsd !== null && event.costUsd > 0) this.cost.add(event.costUsd, provider, model);
  }

  /** The model label of a request no provider took: its route, the route it named, or `none`. */
  private refusedModel(event: RequestSummary): string {
    if (event.route !== null) return event.route;
    return this.sources.config().routes.has(event.model) ? event.model : NONE;
  }

  private guardrailActed(event: GatewayEvents['guardrail.blocked'], action: 'blocked' | 'redacted' | 'flagged'): void {
    this.guardrailActions.inc({ rule: this.guardrailRules.of(event.rule), action, side: event.side });
  }

  private attempted(event: GatewayEvents['provider.attempted']): void {
    // An attempt its client left did not fail (the breaker does not count it either): an upstream error rate must
    // not rise each time a user stops an answer.
    const outcome = event.ok ? 'success' : event.errorCode === CANCELLED ? 'cancelled' : 'error';
    this.attempts.add(1, this.providers.of(event.provider), this.models.of(event.model, event.provider), outcome);
    // The attempt right after a fallback is no retry; a request sent straight to a fallback (its route's targets
    // could not be called) has its fallback before its first attempt, and its later attempts are retries.
    if (event.attempt === 1) this.afterFallback.delete(event.requestId);
    else if (!this.afterFallback.delete(event.requestId)) this.retries.inc();
  }

  /** Series read at scrape time from the state the gateway already keeps. */
  private registerStateGauges(): void {
    const { health, governance, config, storeBytes } = this.sources;
    const providers = this.providers;
    const models = this.models;
    const keys = this.keys;
    new Gauge({
      name: 'tollgate_breaker_state',
      help: 'Circuit breaker per provider and model: 0 closed, 1 half-open, 2 open (the worst over the provider keys).',
      labelNames: ['provider', 'model'],
      registers: [this.registry],
      collect() {
        this.reset();
        const now = Date.now();
        const worst = new Map<string, { provider: string; model: string; value: number }>();
        for (const target of health.all()) {
          const label = targetLabel(target.label);
          const provider = providers.of(label.provider);
          const model = models.of(label.model, label.provider);
          const value = BREAKER_VALUE[target.breaker.stateNow(now)] ?? 0;
          const key = `${provider}\0${model}`;
          const seen = worst.get(key);
          if (!seen || seen.value < value) worst.set(key, { provider, model, value });
        }
        for (const { provider, model, value } of worst.values()) this.set({ provider, model }, value);
      },
    });
    new Gauge({
      name: 'tollgate_provider_healthy',
      help: 'Per configured provider: 1 unless every target of it tollgate called lately has its breaker open.',
      labelNames: ['provider'],
      registers: [this.registry],
      collect() {
        this.reset();
        const now = Date.now();
        const open = new Map<string, boolean>();
        for (const target of health.all()) {
          const { provider } = targetLabel(target.label);
          const isOpen = target.breaker.stateNow(now) === 'open';
          open.set(provider, (open.get(provider) ?? true) && isOpen);
        }
        for (const name of config().providers.keys()) this.set({ provider: providers.of(name) }, open.get(name) === true ? 0 : 1);
      },
    });
    new Gauge({
      name: 'tollgate_key_spend_usd',
      help: "Each virtual key's spend in its current budget period, as the store holds it.",
      labelNames: ['key', 'team'],
      registers: [this.registry],
      collect() {
        this.reset();
        // Keys past the label cap share the `other` series: their spends add up there instead of the last one
        // read overwriting the rest.
        const spends = new Map<string, { key: string; team: string; usd: number }>();
        const live = governance.keySpends();
        keys.retain(new Set(live.map((key) => key.id)));
        for (const key of live) {
          const labels = { key: keys.of(key.id), team: key.team ?? NONE };
          const id = `${labels.key}\0${labels.team}`;
          const seen = spends.get(id);
          if (seen) seen.usd += key.spend;
          else spends.set(id, { ...labels, usd: key.spend });
        }
        for (const { key, team, usd } of spends.values()) this.set({ key, team }, usd);
      },
    });
    new Gauge({
      name: 'tollgate_store_bytes',
      help: 'Size of the LMDB store on disk.',
      registers: [this.registry],
      collect() {
        this.set(storeBytes());
      },
    });
  }

  private counter(name: string, help: string, labelNames: string[]): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }
}
