import { randomUUID } from 'node:crypto';
import type { AlertRuleRuntime, AlertSeverity } from '../../core/config.js';
import type { AlertSubject, GatewayEvents, RequestSummary } from '../../core/events.js';
import { redactSecrets } from '../../core/redact-secrets.js';
import { CountWindow } from './bucket-ring.js';
import { LatencyWindow } from './latency-window.js';
import { SubjectWindows } from './subject-windows.js';

/** One notification: what every channel is given (the webhook channel sends it as it is, as JSON). */
export interface AlertNotification {
  /** The alert's id: its firing and its resolved notification carry the same one. */
  id: string;
  rule: string;
  /** The gateway event the rule watches (`budget.threshold`, `breaker.opened`, `breaker.closed`, `provider.attempted`, `request.completed`, `request.failed`). */
  event: string;
  severity: AlertSeverity;
  status: 'firing' | 'resolved';
  summary: string;
  subject: AlertSubject;
  details: Record<string, unknown>;
  /** ISO time the condition began (firing) or ended (resolved). */
  at: string;
}

/** An alert whose condition still holds. */
export interface OpenAlert {
  id: string;
  rule: string;
  kind: AlertRuleRuntime['kind'];
  subject: AlertSubject;
  summary: string;
  since: string;
  /**
   * False while the firing is held back by the rule's cooldown: it is sent once the cooldown is over, if the alert is
   * still open; one that resolves before then is not sent, and neither is its resolution.
   */
  notified: boolean;
}

/** A key's or team's budget and its spend in the current period; null when the account is gone or has no budget. */
export type BudgetUsage = (account: 'key' | 'team', id: string) => { spend: number; budget: number } | null;

/** An open alert as the state store keeps it, so a restart can still resolve it. */
export interface StoredOpenAlert extends OpenAlert {
  /** `<rule>|<subject key>`: one open alert per rule and subject. */
  key: string;
  /** What the rule groups by: a provider, `<provider>/<model>`, a route, a breaker target, `<account>:<id>|<threshold>`. */
  subjectKey: string;
  event: string;
  details: Record<string, unknown>;
  /**
   * The channels its firing went to, where its resolution goes too (the rule's channels may have changed since:
   * a pager's incident is closed only by a resolve sent to it). Absent in alerts stored by earlier versions.
   */
  channels?: string[];
  /** Its rule's severity when it fired: what its resolution carries should the rule be gone after a restart. */
  severity?: AlertSeverity;
}

/** What a resolution needs of its rule: the rule itself, or (its rule gone after a restart) the alert's own record. */
export type AlertRuleRef = Pick<AlertRuleRuntime, 'name' | 'severity' | 'channels'>;

/** Where the engine keeps its open alerts and cooldowns across restarts (LMDB in the gateway; nothing in unit tests). */
export interface AlertStateStore {
  load(): { open: StoredOpenAlert[]; notified: Array<[string, number]> };
  saveOpen(key: string, alert: StoredOpenAlert | null): void;
  saveNotified(key: string, at: number | null): void;
}

export interface AlertEngineOptions {
  rules: () => readonly AlertRuleRuntime[];
  state?: AlertStateStore;
  /**
   * Called for every firing or resolution, notified or not (`notification === null` inside a cooldown), and again
   * with `late: true` when a firing held back by the cooldown is sent after it.
   */
  publish: (change: { alert: OpenAlert; status: 'firing' | 'resolved'; notification: AlertNotification | null; rule: AlertRuleRef; channels: readonly string[]; late?: boolean }) => void;
  budgetUsage: BudgetUsage;
  /** Whether the config names this route: a route is always watched, whatever else is (see MAX_SUBJECTS). */
  isRoute?: (name: string) => boolean;
  /**
   * Whether `<provider>/<model>` is a model the config names or the catalogue knows: per-model rules watch those
   * beyond MAX_SUBJECTS, as route rules watch configured routes.
   */
  isKnownModel?: (subject: string) => boolean;
  /** The wall clock: alerts' times and cooldowns (which are kept across restarts). `Date.now` by default. */
  now?: () => number;
  /**
   * The clock windows, `for_ms` and refilling are measured on: monotonic by default (`performance.now`), so a step of
   * the wall clock neither empties the windows (NTP moving a slow clock forward: a false "resolved", then a new page)
   * nor keeps their samples for as long as the step (moved back). Unit tests give both clocks one hand-moved time.
   */
  windowNow?: () => number;
}

interface Open extends StoredOpenAlert {
  /** Read back from the store after a restart: the samples it fired on are gone. */
  restored?: boolean;
}

type WindowRule = Extract<AlertRuleRuntime, { kind: 'error_rate' | 'latency_p95' | 'ttft_p95' | 'fallbacks_exhausted' | 'server_errors' }>;
type LatencyRule = Extract<AlertRuleRuntime, { kind: 'latency_p95' | 'ttft_p95' }>;

/**
 * At most this many subjects (providers, models, routes) are watched per kind. They come from the config, but a
 * client can name a model of a configured provider that does not exist, so this bounds what it can make us keep.
 * A configured route is watched beyond it: a thousand model names asked for without a route (a client numbering
 * them, a gateway serving hundreds of models by name) otherwise left no room for a route that then failed, and its
 * server_errors and fallbacks_exhausted rules never fired. A model the config names or the catalogue knows is watched
 * beyond it by per-model rules for the same reason (both are bounded: by the config and by the catalogue).
 */
const MAX_SUBJECTS = 1_000;

const countWindows = (configured?: (subject: string) => boolean): SubjectWindows<CountWindow> =>
  new SubjectWindows((windowMs) => new CountWindow(windowMs), MAX_SUBJECTS, configured);
const latencyWindows = (): SubjectWindows<LatencyWindow> => new SubjectWindows((windowMs) => new LatencyWindow(windowMs), MAX_SUBJECTS);

function isWindowRule(rule: AlertRuleRuntime): rule is WindowRule {
  return rule.kind !== 'budget' && rule.kind !== 'breaker_opened';
}

function windowOf(rule: AlertRuleRuntime): number {
  return isWindowRule(rule) ? (rule.window_ms ?? 300_000) : 0;
}

function watches(rule: { providers?: string[] | undefined }, provider: string): boolean {
  return !rule.providers || rule.providers.includes(provider);
}

function watchesRoute(rule: { routes?: string[] | undefined }, route: string): boolean {
  return !rule.routes || rule.routes.includes(route);
}

/** The error code of an upstream attempt cut short because the client went away (see stages/call.ts). */
const CLIENT_CANCELLED = 'client_cancelled';

/** The error code of a request the gateway cut when its shutdown grace period was over (see gateway.ts). */
const SHUTTING_DOWN = 'shutting_down';

/** The codes of a request whose plan had targets and none could be tried (breakers open, all rate limited). */
const NO_TARGET_LEFT = new Set(['all_targets_unavailable', 'all_targets_rate_limited']);

/**
 * What a request is grouped under for route rules: its route, else the model it named when it was routed to a
 * provider: one that reached it, or one whose every target was passed over (its breakers open). A request that was
 * refused before routing (an unknown model) is not grouped: a client could invent names without end.
 */
function routeKeyOf(event: RequestSummary & { code?: string | null }): string | null {
  if (event.route !== null) return event.route;
  return event.provider || (event.code != null && NO_TARGET_LEFT.has(event.code)) ? event.model : null;
}

/**
 * The request failed after every target of its plan (primary and fallbacks) failed or could not be tried. One that
 * failed after its answer had begun (a stream broken mid-way) is not: no fallback can be tried once the client has
 * part of an answer, so a single broken stream of a route whose fallbacks were healthy and never called paged
 * "every target failed". It still counts as a 5xx (`server_errors`).
 */
function exhaustedPlan(event: GatewayEvents['request.failed']): boolean {
  if (event.code != null && NO_TARGET_LEFT.has(event.code)) return true;
  return event.status >= 500 && event.attempts > 0 && event.firstTokenMs === null;
}

/** The exact 95th percentile (nearest rank) of unsorted values: what a window's p95 estimates (see latency-window.ts). */
export function p95(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.95) - 1)] ?? 0;
}

function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * Turns gateway events into alerts: one open alert per rule and subject (a repeat while it is open is
 * deduplicated), a firing notification unless the same rule and subject notified within its cooldown, and a
 * resolved notification when the condition clears. Event handlers only record (a count or two per window); windows
 * are evaluated by `tick()`, which the service runs once a second off the request path.
 */
export class AlertEngine {
  private readonly open = new Map<string, Open>();
  /** The rules as the last evaluation saw them, by name: how an alert whose rule was since removed is resolved. */
  private readonly seen = new Map<string, AlertRuleRuntime>();
  /** When the rule and subject last sent a firing notification. */
  private readonly lastNotified = new Map<string, number>();
  /** When a latency rule's p95 first went over its threshold for a provider (still over since), by `<rule>|<provider>`. */
  private readonly breachSince = new Map<string, { rule: string; since: number }>();
  /** Upstream attempts (and how many failed) by provider and by `<provider>/<model>`. */
  private readonly attempts = countWindows();
  private readonly modelAttempts = countWindows((subject) => this.options.isKnownModel?.(subject) ?? false);
  /** Durations of answered requests, and first-token times of streamed ones, by provider. */
  private readonly latencies = latencyWindows();
  private readonly ttfts = latencyWindows();
  /** Requests by route (and how many ended 5xx), and failures that exhausted their plan, by route. */
  private readonly routeRequests = countWindows((subject) => this.options.isRoute?.(subject) ?? false);
  private readonly exhausted = countWindows((subject) => this.options.isRoute?.(subject) ?? false);
  /** The rules the windows were last sized for (a new config's rules are a new array). */
  private sizedFor: readonly AlertRuleRuntime[] | null = null;
  private readonly now: () => number;
  private readonly windowNow: () => number;
  /** When this engine started (window time): the samples of alerts restored from the store are gone, and windows fill from here. */
  private readonly startedAt: number;
  /** When each open alert of this process fired, in window time (see `refilling`). */
  private readonly firedAt = new Map<string, number>();

  constructor(private readonly options: AlertEngineOptions) {
    this.now = options.now ?? Date.now;
    // Monotonic, counted from the process's start in epoch milliseconds (so it reads like the wall clock did then).
    this.windowNow = options.windowNow ?? (() => performance.timeOrigin + performance.now());
    this.startedAt = this.windowNow();
    this.sizeWindows(options.rules(), this.startedAt);
    const saved = options.state?.load();
    for (const alert of saved?.open ?? []) this.open.set(alert.key, { ...alert, restored: true });
    for (const [key, at] of saved?.notified ?? []) this.lastNotified.set(key, at);
  }

  openAlerts(): OpenAlert[] {
    return [...this.open.values()].map((alert) => this.view(alert));
  }

  // ---- events ------------------------------------------------------------------------------------------

  budgetThreshold(event: GatewayEvents['budget.threshold']): void {
    for (const rule of this.options.rules()) {
      if (rule.kind !== 'budget') continue;
      if (rule.account && rule.account !== event.account) continue;
      if (rule.thresholds && !rule.thresholds.includes(event.threshold)) continue;
      const subject: AlertSubject = event.account === 'key' ? { key: event.id } : { team: event.id };
      this.fire(rule, `${event.account}:${event.id}|${event.threshold}`, subject, 'budget.threshold', {
        summary: `${event.account} ${event.id} spent ${event.threshold}% of its budget ($${round(event.spend, 6)} of $${event.budget})`,
        details: { account: event.account, id: event.id, threshold: event.threshold, budget: event.budget, spend: event.spend },
      });
    }
  }

  breakerOpened(event: GatewayEvents['breaker.opened']): void {
    // The target and label hold the model name, into which a client may have pasted a key (see core/redact-secrets.ts).
    const target = redactSecrets(event.target);
    const label = redactSecrets(event.label);
    const [provider = '', ...model] = label.split('/');
    for (const rule of this.options.rules()) {
      if (rule.kind !== 'breaker_opened' || !watches(rule, provider)) continue;
      this.fire(rule, target, { provider, model: model.join('/'), target }, 'breaker.opened', {
        summary: `circuit breaker opened for ${label} (${event.reason}); trial calls in ${Math.round(event.cooldownMs / 1000)} s`,
        details: { target, label, reason: event.reason, cooldownMs: event.cooldownMs },
      });
    }
  }

  breakerClosed(event: GatewayEvents['breaker.closed']): void {
    const target = redactSecrets(event.target);
    const label = redactSecrets(event.label);
    for (const rule of this.options.rules()) {
      if (rule.kind !== 'breaker_opened') continue;
      this.resolve(rule, target, 'breaker.closed', `circuit breaker closed again for ${label}`, { target, label });
    }
  }

  providerAttempted(event: GatewayEvents['provider.attempted']): void {
    // A client that went away (a chat UI's "stop", a timeout of its own) says nothing of the provider: counted as a
    // failure, a few users giving up on slow answers paged the on-call for a provider that was answering fine.
    if (event.errorCode === CLIENT_CANCELLED) return;
    const now = this.recording();
    for (const window of this.attempts.windowsOf(event.provider)) window.add(now, !event.ok);
    // A client may have pasted a key into the model name: the subject is what notifications and /api/alerts show.
    for (const window of this.modelAttempts.windowsOf(`${event.provider}/${redactSecrets(event.model)}`)) window.add(now, !event.ok);
  }

  requestCompleted(event: GatewayEvents['request.completed']): void {
    const now = this.recording();
    const route = routeKeyOf(event);
    if (route !== null) for (const window of this.routeRequests.windowsOf(route)) window.add(now, false);
    // Answers served by an upstream only: a cache hit or a client that left says nothing of the provider's speed.
    if (event.cancelled || event.status !== 200 || !event.provider || event.attempts === 0) return;
    for (const window of this.latencies.windowsOf(event.provider)) window.add(now, event.durationMs);
    const firstTokenMs = event.firstTokenMs;
    if (event.stream && firstTokenMs !== null) for (const window of this.ttfts.windowsOf(event.provider)) window.add(now, firstTokenMs);
  }

  requestFailed(event: GatewayEvents['request.failed']): void {
    // Cut by this gateway's own shutdown (its grace period over): says nothing of the route or its providers, and a
    // rolling restart that cut a few long streams paged "5xx" or "every target failed" for a healthy route.
    if (event.code === SHUTTING_DOWN) return;
    const route = routeKeyOf(event);
    if (route === null) return;
    const now = this.recording();
    for (const window of this.routeRequests.windowsOf(route)) window.add(now, event.status >= 500);
    if (exhaustedPlan(event)) for (const window of this.exhausted.windowsOf(route)) window.add(now, true);
  }

  /** The (window) time of a sample being recorded, the windows first sized for a config that changed since the last one. */
  private recording(): number {
    const now = this.windowNow();
    const rules = this.options.rules();
    if (rules !== this.sizedFor) this.sizeWindows(rules, now);
    return now;
  }

  /** Keeps a window of each length the rules ask for, for each kind of sample (none for a kind no rule reads). */
  private sizeWindows(rules: readonly AlertRuleRuntime[], now: number): void {
    this.sizedFor = rules;
    const lengths = (kinds: (rule: WindowRule) => boolean): number[] => rules.filter((rule) => isWindowRule(rule) && kinds(rule)).map(windowOf);
    this.attempts.use(lengths((rule) => rule.kind === 'error_rate' && rule.per !== 'model'), now);
    this.modelAttempts.use(lengths((rule) => rule.kind === 'error_rate' && rule.per === 'model'), now);
    this.latencies.use(lengths((rule) => rule.kind === 'latency_p95'), now);
    this.ttfts.use(lengths((rule) => rule.kind === 'ttft_p95'), now);
    this.routeRequests.use(lengths((rule) => rule.kind === 'server_errors'), now);
    this.exhausted.use(lengths((rule) => rule.kind === 'fallbacks_exhausted'), now);
  }

  /** What the windows hold: subjects, buckets (bounded by the rules' windows, not the traffic) and histograms. */
  footprint(): { subjects: number; buckets: number; histograms: number } {
    let subjects = 0;
    let buckets = 0;
    let histograms = 0;
    for (const map of [this.attempts, this.modelAttempts, this.routeRequests, this.exhausted, this.latencies, this.ttfts]) {
      subjects += [...map.keys()].length;
      for (const window of map.all()) {
        buckets += window.bucketCount();
        if (window instanceof LatencyWindow) histograms += window.histogramCount();
      }
    }
    return { subjects, buckets, histograms };
  }

  // ---- evaluation ----------------------------------------------------------------------------------------

  /** Evaluates the window rules and the open budget alerts; drops the alerts of rules no longer configured. */
  tick(): void {
    const now = this.now();
    const at = this.windowNow();
    const rules = this.options.rules();
    const byName = new Map(rules.map((rule) => [rule.name, rule]));
    for (const [key, alert] of this.open) {
      const current = byName.get(alert.rule);
      if (current?.kind === alert.kind) continue;
      // Its rule was removed or now watches something else: the alert closes. One whose firing was sent is resolved
      // through the channels it fired on (a pager's incident must not stay open). After a restart the rule as it was
      // is not known, and the alert's own record stands for it: dropped without a word, an alert whose rule was taken
      // out of the config while the gateway was down left its incident open for good.
      const previous = this.seen.get(alert.rule);
      const asItWas: AlertRuleRef | null =
        previous?.kind === alert.kind ? previous : alert.restored && alert.channels ? { name: alert.rule, severity: alert.severity ?? 'warning', channels: alert.channels } : null;
      if (asItWas) {
        this.resolve(asItWas, alert.subjectKey, alert.event, `${alert.summary} (closed: its rule "${alert.rule}" was ${current ? 'changed' : 'removed'})`, alert.details);
      } else this.forget(key);
    }
    this.seen.clear();
    for (const rule of rules) this.seen.set(rule.name, rule);
    // A latency breach's start belongs to its rule as it is: one removed (or made another kind) mid-breach and put
    // back later must wait its for_ms again, not fire at once on a breach timed from before.
    if (this.breachSince.size > 0) {
      const latencyRules = new Set(rules.filter((rule) => rule.kind === 'latency_p95' || rule.kind === 'ttft_p95').map((rule) => rule.name));
      for (const [key, breach] of this.breachSince) if (!latencyRules.has(breach.rule)) this.breachSince.delete(key);
    }
    this.sizeWindows(rules, at);
    // A subject with nothing left in any window goes (its open alerts are still evaluated: see `subjects`).
    for (const map of [this.attempts, this.modelAttempts, this.latencies, this.ttfts, this.routeRequests, this.exhausted]) map.prune(at);
    for (const rule of rules) {
      if (rule.kind === 'error_rate') this.errorRate(rule, at);
      else if (rule.kind === 'server_errors') this.serverErrors(rule, at);
      else if (rule.kind === 'fallbacks_exhausted') this.fallbacksExhausted(rule, at);
      else if (rule.kind === 'budget') this.budgets(rule);
      else if (rule.kind === 'breaker_opened') this.breakers(rule);
      else this.latency(rule, at);
    }
    this.heldBack(byName, now);
  }

  /**
   * Open alerts whose firing fell inside their rule's cooldown and still hold once it is over: their firing is sent
   * now. Held back for good, a condition that cleared and came back within the cooldown left the channel's last word
   * at "resolved" (and a pager's incident closed) for as long as it then lasted.
   */
  private heldBack(rules: ReadonlyMap<string, AlertRuleRuntime>, now: number): void {
    for (const alert of this.open.values()) {
      if (alert.notified) continue;
      const rule = rules.get(alert.rule);
      if (rule?.kind !== alert.kind) continue;
      const last = this.lastNotified.get(alert.key);
      if (last !== undefined && now - last < rule.cooldownMs) continue;
      alert.notified = true;
      alert.channels = [...rule.channels];
      alert.severity = rule.severity;
      this.lastNotified.set(alert.key, now);
      this.options.state?.saveNotified(alert.key, now);
      this.options.state?.saveOpen(alert.key, alert);
      this.options.publish({ alert: this.view(alert), status: 'firing', rule, channels: rule.channels, notification: this.firing(rule, alert), late: true });
    }
  }

  /**
   * The subjects a window rule looks at: those with samples, and those of its open alerts (after a restart an
   * alert has no samples left, and must still resolve).
   */
  private subjects(rule: WindowRule, samples: SubjectWindows<CountWindow | LatencyWindow>): string[] {
    const subjects = new Set(samples.keys());
    for (const alert of this.open.values()) if (alert.rule === rule.name) subjects.add(alert.subjectKey);
    return [...subjects];
  }

  /**
   * Whether the open alert of a window rule on this subject fired on samples its window does not hold, and the window
   * has not been kept for a whole window's length since: too few samples then say nothing yet, and the alert stays
   * open. That is an alert from before a restart (judged on the empty window, it resolved at the first evaluation
   * after every restart, and a subject still failing fired again under a new id: a false "resolved", then a new
   * page), or one whose rule's window_ms changed since it fired (a window of the new length starts empty).
   */
  private refilling(rule: WindowRule, windows: SubjectWindows<CountWindow | LatencyWindow>, subjectKey: string, now: number): boolean {
    const alert = this.open.get(`${rule.name}|${subjectKey}`);
    if (!alert) return false;
    const kept = windows.since(windowOf(rule)) ?? this.startedAt;
    return (alert.restored === true || (this.firedAt.get(alert.key) ?? Infinity) < kept) && now - kept < windowOf(rule);
  }

  private errorRate(rule: Extract<AlertRuleRuntime, { kind: 'error_rate' }>, now: number): void {
    const minRequests = rule.min_requests ?? 10;
    const perModel = rule.per === 'model';
    const map = perModel ? this.modelAttempts : this.attempts;
    for (const subjectKey of this.subjects(rule, map)) {
      const provider = perModel ? (subjectKey.split('/')[0] ?? '') : subjectKey;
      if (!watches(rule, provider)) {
        this.unwatched(rule, subjectKey, 'provider.attempted', { provider });
        continue;
      }
      const { count, failed } = map.window(subjectKey, windowOf(rule))?.read(now) ?? { count: 0, failed: 0 };
      if (count < minRequests && this.refilling(rule, map, subjectKey, now)) continue;
      const pct = count === 0 ? 0 : (failed / count) * 100;
      const subject: AlertSubject = perModel ? { provider, model: subjectKey.slice(provider.length + 1) } : { provider };
      const details = { ...subject, attempts: count, failed, errorRatePct: round(pct), thresholdPct: rule.threshold_pct, windowMs: windowOf(rule) };
      if (count >= minRequests && pct > rule.threshold_pct) {
        this.fire(rule, subjectKey, subject, 'provider.attempted', {
          summary: `${subjectKey}: ${round(pct, 1)}% of ${count} upstream attempts failed in the last ${Math.round(windowOf(rule) / 1000)} s (over ${rule.threshold_pct}%)`,
          details,
        });
      } else if (!this.stillOver(rule, subjectKey, count, pct > rule.threshold_pct)) {
        const summary =
          count === 0
            ? `${subjectKey}: no upstream attempt left in the last ${Math.round(windowOf(rule) / 1000)} s to judge the error rate by`
            : `${subjectKey}: error rate back to ${round(pct, 1)}% (${count} attempts in the window)`;
        this.resolve(rule, subjectKey, 'provider.attempted', summary, details);
      }
    }
  }

  private latency(rule: LatencyRule, now: number): void {
    const minRequests = rule.min_requests ?? 10;
    const forMs = rule.for_ms ?? 60_000;
    const ttft = rule.kind === 'ttft_p95';
    const what = ttft ? 'p95 time to first token' : 'p95 latency';
    const map = ttft ? this.ttfts : this.latencies;
    const subjects = this.subjects(rule, map);
    // A provider with no answer left in any window was pruned from the windows and is not evaluated below: its breach
    // is over (an empty window is not over the threshold). Kept, its start stood, and one slow answer after a quiet
    // spell fired at once, timed from a breach long over, though the p95 had never stayed over for for_ms.
    const evaluated = new Set(subjects.map((provider) => `${rule.name}|${provider}`));
    for (const [key, breach] of this.breachSince) if (breach.rule === rule.name && !evaluated.has(key)) this.breachSince.delete(key);
    for (const provider of subjects) {
      if (!watches(rule, provider)) {
        this.breachSince.delete(`${rule.name}|${provider}`);
        this.unwatched(rule, provider, 'request.completed', { provider });
        continue;
      }
      const window = map.window(provider, windowOf(rule));
      const count = window?.count(now) ?? 0;
      if (count < minRequests && this.refilling(rule, map, provider, now)) continue;
      const breachKey = `${rule.name}|${provider}`;
      // min_requests keeps a few slow answers from paging; an open alert is judged on the answers there are. Fewer
      // answers (clients giving up, the provider timing out, the night) do not make a provider fast: resolved on
      // too few, the alert said "back under" while every answer left was still slow, and paged again later.
      const judged = count >= minRequests || (count > 0 && this.open.has(breachKey));
      const value = judged ? (window?.p95(now) ?? null) : null;
      const details = { provider, p95Ms: value === null ? null : round(value), thresholdMs: rule.threshold_ms, requests: count, windowMs: windowOf(rule), forMs };
      if (value !== null && value > rule.threshold_ms) {
        const since = this.breachSince.get(breachKey)?.since ?? now;
        this.breachSince.set(breachKey, { rule: rule.name, since });
        if (now - since >= forMs) {
          this.fire(rule, provider, { provider }, 'request.completed', {
            summary: `${provider}: ${what} ${Math.round(value)} ms over ${rule.threshold_ms} ms for ${Math.round((now - since) / 1000)} s`,
            details,
          });
        }
      } else {
        this.breachSince.delete(breachKey);
        const summary =
          value === null
            ? `${provider}: no answered request left in the last ${Math.round(windowOf(rule) / 1000)} s to measure the ${what} by`
            : `${provider}: ${what} back under ${rule.threshold_ms} ms`;
        this.resolve(rule, provider, 'request.completed', summary, details);
      }
    }
  }

  /**
   * Whether the open alert of a rate rule on this subject holds on fewer samples than min_requests: min_requests keeps
   * a few failures from paging, but fewer requests (clients backing off, a breaker sending them elsewhere) do not
   * make a provider or a route well. Resolved on too few, the alert said 'error rate back to 100%' and paged again
   * when traffic came back; it is judged on the samples there are, and resolves once they are under the threshold or
   * none is left.
   */
  private stillOver(rule: WindowRule, subjectKey: string, count: number, over: boolean): boolean {
    return over && count > 0 && this.open.has(`${rule.name}|${subjectKey}`);
  }

  private serverErrors(rule: Extract<AlertRuleRuntime, { kind: 'server_errors' }>, now: number): void {
    const minRequests = rule.min_requests ?? 10;
    for (const route of this.subjects(rule, this.routeRequests)) {
      if (!watchesRoute(rule, route)) {
        this.unwatched(rule, route, 'request.failed', { route });
        continue;
      }
      const { count, failed } = this.routeRequests.window(route, windowOf(rule))?.read(now) ?? { count: 0, failed: 0 };
      if (count < minRequests && this.refilling(rule, this.routeRequests, route, now)) continue;
      const pct = count === 0 ? 0 : (failed / count) * 100;
      const details = { route, requests: count, serverErrors: failed, serverErrorPct: round(pct), thresholdPct: rule.threshold_pct, windowMs: windowOf(rule) };
      if (count >= minRequests && pct > rule.threshold_pct) {
        this.fire(rule, route, { route }, 'request.failed', {
          summary: `${route}: ${round(pct, 1)}% of ${count} requests ended with a 5xx status in the last ${Math.round(windowOf(rule) / 1000)} s (over ${rule.threshold_pct}%)`,
          details,
        });
      } else if (!this.stillOver(rule, route, count, pct > rule.threshold_pct)) {
        const summary =
          count === 0
            ? `${route}: no request left in the last ${Math.round(windowOf(rule) / 1000)} s to judge the 5xx rate by`
            : `${route}: 5xx rate back to ${round(pct, 1)}% (${count} requests in the window)`;
        this.resolve(rule, route, 'request.failed', summary, details);
      }
    }
  }

  private fallbacksExhausted(rule: Extract<AlertRuleRuntime, { kind: 'fallbacks_exhausted' }>, now: number): void {
    const minCount = rule.min_count ?? 1;
    for (const route of this.subjects(rule, this.exhausted)) {
      if (!watchesRoute(rule, route)) {
        this.unwatched(rule, route, 'request.failed', { route });
        continue;
      }
      const count = this.exhausted.window(route, windowOf(rule))?.count(now) ?? 0;
      if (count < minCount && this.refilling(rule, this.exhausted, route, now)) continue;
      const details = { route, failures: count, minCount, windowMs: windowOf(rule) };
      if (count >= minCount) {
        this.fire(rule, route, { route }, 'request.failed', {
          summary: `${route}: ${count} request${count === 1 ? '' : 's'} failed after every target (primary and fallbacks) failed or was unavailable in the last ${Math.round(windowOf(rule) / 1000)} s`,
          details,
        });
      } else {
        this.resolve(rule, route, 'request.failed', `${route}: no request exhausted its targets in the last ${Math.round(windowOf(rule) / 1000)} s`, details);
      }
    }
  }

  /**
   * A subject the rule no longer watches (its `providers` or `routes` were narrowed since it fired): its open alert is
   * resolved, as one of a removed rule is. Skipped without it, the alert stayed open for good (never evaluated again,
   * its incident never closed, and a later firing for the subject deduplicated into it).
   */
  private unwatched(rule: WindowRule, subjectKey: string, event: string, details: Record<string, unknown>): void {
    this.resolve(rule, subjectKey, event, `${subjectKey}: no longer watched by the rule "${rule.name}"`, { ...details, watched: false });
  }

  /**
   * Breaker alerts that are over without a `breaker.closed`: one from before a restart (the new process's breakers all
   * start closed), and one on a provider the rule no longer watches (its `providers` narrowed since it fired). The
   * latter stayed open until that breaker closed, which for a provider the operator then removed from the config was
   * never: its incident stayed open for good, and the README says narrowing resolves it as it does for window rules.
   */
  private breakers(rule: Extract<AlertRuleRuntime, { kind: 'breaker_opened' }>): void {
    for (const alert of [...this.open.values()]) {
      if (alert.rule !== rule.name) continue;
      const label = String(alert.details.label ?? alert.subjectKey);
      const details = { target: alert.details.target ?? null, label: alert.details.label ?? null };
      if (!watches(rule, alert.subject.provider ?? '')) {
        this.resolve(rule, alert.subjectKey, 'breaker.closed', `${label}: no longer watched by the rule "${rule.name}"`, { ...details, watched: false });
      } else if (alert.restored) {
        this.resolve(rule, alert.subjectKey, 'breaker.closed', `circuit breaker state reset by a gateway restart (${label} starts closed)`, { ...details, restarted: true });
      }
    }
  }

  /**
   * A budget alert resolves when the account's spend is under its threshold again (a new period, a raised budget), or
   * when its rule no longer watches that threshold or account: left open, it stayed so (its incident with it) until
   * the period ended, on a line the operator had just said not to alert on.
   */
  private budgets(rule: Extract<AlertRuleRuntime, { kind: 'budget' }>): void {
    for (const alert of [...this.open.values()]) {
      if (alert.rule !== rule.name) continue;
      const { account, id, threshold } = alert.details as { account: 'key' | 'team'; id: string; threshold: number };
      if ((rule.account && rule.account !== account) || (rule.thresholds && !(rule.thresholds as readonly number[]).includes(threshold))) {
        this.resolve(rule, alert.subjectKey, 'budget.threshold', `${account} ${id} at ${threshold}% of its budget: no longer watched by the rule "${rule.name}"`, {
          ...alert.details,
          watched: false,
        });
        continue;
      }
      const usage = this.options.budgetUsage(account, id);
      const pct = usage && usage.budget > 0 ? (usage.spend / usage.budget) * 100 : null;
      if (pct !== null && pct >= threshold) continue;
      const summary = usage === null ? `${account} ${id} has no budget any more` : `${account} ${id} is under ${threshold}% of its budget again ($${round(usage.spend, 6)} of $${usage.budget})`;
      this.resolve(rule, `${account}:${id}|${threshold}`, 'budget.threshold', summary, { account, id, threshold, budget: usage?.budget ?? null, spend: usage?.spend ?? null });
    }
  }

  // ---- state ----------------------------------------------------------------------------------------------

  private fire(rule: AlertRuleRuntime, subjectKey: string, subject: AlertSubject, event: string, what: { summary: string; details: Record<string, unknown> }): void {
    const key = `${rule.name}|${subjectKey}`;
    if (this.open.has(key)) return;
    const now = this.now();
    const last = this.lastNotified.get(key);
    const notified = last === undefined || now - last >= rule.cooldownMs;
    if (notified) {
      this.lastNotified.set(key, now);
      this.options.state?.saveNotified(key, now);
    }
    if (this.lastNotified.size > 50_000) this.forgetOldest();
    const alert: Open = {
      key,
      subjectKey,
      id: randomUUID(),
      rule: rule.name,
      kind: rule.kind,
      subject,
      summary: what.summary,
      since: new Date(now).toISOString(),
      notified,
      event,
      details: what.details,
      channels: [...rule.channels],
      severity: rule.severity,
    };
    this.open.set(key, alert);
    this.firedAt.set(key, this.windowNow());
    this.options.state?.saveOpen(key, alert);
    this.options.publish({
      alert: this.view(alert),
      status: 'firing',
      rule,
      channels: rule.channels,
      notification: notified ? this.firing(rule, alert) : null,
    });
  }

  /** The firing notification of an open alert. */
  private firing(rule: AlertRuleRuntime, alert: Open): AlertNotification {
    return { id: alert.id, rule: rule.name, event: alert.event, severity: rule.severity, status: 'firing', summary: alert.summary, subject: alert.subject, details: alert.details, at: alert.since };
  }

  private resolve(rule: AlertRuleRef, subjectKey: string, event: string, summary: string, details: Record<string, unknown>): void {
    const key = `${rule.name}|${subjectKey}`;
    const alert = this.open.get(key);
    if (!alert) return;
    this.forget(key);
    const at = new Date(this.now()).toISOString();
    this.options.publish({
      alert: { ...this.view(alert), summary },
      status: 'resolved',
      rule,
      channels: alert.channels ?? rule.channels,
      notification: alert.notified
        ? { id: alert.id, rule: rule.name, event, severity: rule.severity, status: 'resolved', summary, subject: alert.subject, details: { ...details, firedAt: alert.since }, at }
        : null,
    });
  }

  /** Closes an open alert without a notification (its rule was removed or changed kind), or after resolving it. */
  private forget(key: string): void {
    this.open.delete(key);
    this.firedAt.delete(key);
    this.options.state?.saveOpen(key, null);
  }

  private view(alert: Open): OpenAlert {
    return { id: alert.id, rule: alert.rule, kind: alert.kind, subject: alert.subject, summary: alert.summary, since: alert.since, notified: alert.notified };
  }

  private forgetOldest(): void {
    const cutoff = [...this.lastNotified.values()].sort((a, b) => a - b)[10_000] ?? 0;
    for (const [key, at] of this.lastNotified) {
      if (at >= cutoff || this.open.has(key)) continue;
      this.lastNotified.delete(key);
      this.options.state?.saveNotified(key, null);
    }
  }
}
