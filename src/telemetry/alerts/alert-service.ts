import { randomUUID } from 'node:crypto';
import type { RootDatabase } from 'lmdb';
import type { EventBus } from '../../bus/bus.js';
import { thresholdsCrossed } from '../../core/budget-thresholds.js';
import type { AlertsRuntime } from '../../core/config.js';
import type { Log } from '../../log.js';
import type { Outbound } from '../../network/outbound-network.js';
import { LmdbAlertState } from './alert-state.js';
import { DeliveryQueue, type DeliveryRecord } from './delivery.js';
import { AlertEngine, type AlertNotification, type BudgetUsage, type OpenAlert } from './rules.js';

export type { AlertNotification, OpenAlert } from './rules.js';
export type { DeliveryRecord } from './delivery.js';

/** How often window rules (error rate, latency) and open budget alerts are evaluated. */
const EVALUATE_EVERY_MS = 1_000;

export interface AlertServiceOptions {
  bus: EventBus;
  root: RootDatabase;
  log: Log;
  /** The current config's alerts section (read on every use, so a config change applies at once). */
  alerts: () => AlertsRuntime;
  budgetUsage: BudgetUsage;
  /** Whether the running config names this route (route rules always watch those). */
  isRoute?: (name: string) => boolean;
  /** Whether `<provider>/<model>` is a model the running config names or the catalogue knows (per-model rules always watch those). */
  isKnownModel?: (subject: string) => boolean;
  userAgent: string;
  /** The gateway's way out: webhooks go through its dispatcher (proxy, CAs), email TLS trusts its CAs. */
  outbound: Outbound;
  /** The wall clock alerts are timed by (their times, cooldowns); `Date.now` by default. Windows keep their own. */
  now?: () => number;
  /** Evaluation period (tests shorten it). */
  evaluateEveryMs?: number;
}

/** What the gateway exposes of its alerts: the open ones, the delivery log, the queue. */
export interface AlertsView {
  open(): OpenAlert[];
  /** The delivery log, newest first. */
  deliveries(limit?: number): DeliveryRecord[];
  /** Notifications waiting for a (next) delivery attempt. */
  queued(): number;
  /**
   * Sends a test notification to one channel now (rule `test`, severity `info`, `details.test: true`): one
   * attempt, not queued, not retried, kept in the delivery log; answers its log line (`delivered` or `failed`,
   * `channel_not_found` when no channel has the name).
   */
  testChannel(name: string): Promise<DeliveryRecord>;
  /**
   * A key's or team's budget, or a key's budget period, was changed (by an operator): the thresholds its current spend is now
   * past and was not under the budget it had (`previous`, null when it had none) with the spend it had
   * (`previousSpend`, by default the current one) are announced as `budget.threshold`, as a charge crossing them would
   * be, so lowering a budget below what was spent alerts too, and so does a period change that moves the spend past a
   * line (to `total`: the key's lifetime spend).
   */
  budgetChanged(account: 'key' | 'team', id: string, previous: number | null, previousSpend?: number): void;
}

/** The notification `testChannel` sends: plainly a test, about nothing in particular. */
export function testNotification(channel: string, now = Date.now()): AlertNotification {
  return {
    id: randomUUID(),
    rule: 'test',
    event: 'test',
    severity: 'info',
    status: 'firing',
    summary: `This is a test notification from tollgate to the alert channel "${channel}"; no action is needed.`,
    subject: {},
    details: { test: true },
    at: new Date(now).toISOString(),
  };
}

/**
 * Alerts as a bus subscriber: events feed the rule engine (a few pushes per event), the engine's firings and
 * resolutions go to the persisted delivery queue, and the queue's worker delivers them. No stage knows about
 * any of it, and nothing here is awaited by a request.
 */
export class AlertService implements AlertsView {
  private readonly engine: AlertEngine;
  private readonly queue: DeliveryQueue;
  private readonly state: LmdbAlertState;
  private readonly stops: Array<() => void>;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: AlertServiceOptions) {
    const { bus, log } = options;
    this.queue = new DeliveryQueue({
      root: options.root,
      log,
      channel: (name) => options.alerts().channels.get(name),
      maxQueue: () => options.alerts().maxQueue,
      userAgent: options.userAgent,
      outbound: options.outbound,
    });
    this.state = new LmdbAlertState(options.root, log);
    this.engine = new AlertEngine({
      rules: () => options.alerts().rules,
      state: this.state,
      budgetUsage: options.budgetUsage,
      ...(options.isRoute ? { isRoute: options.isRoute } : {}),
      ...(options.isKnownModel ? { isKnownModel: options.isKnownModel } : {}),
      ...(options.now ? { now: options.now } : {}),
      publish: ({ alert, status, notification, rule, channels, late }) => {
        // A firing sent late (held back by its cooldown) was announced on the bus when it fired.
        if (!late) {
          if (status === 'firing') bus.emit('alert.fired', { id: alert.id, rule: alert.rule, kind: alert.kind, severity: rule.severity, subject: alert.subject, summary: alert.summary, notified: notification !== null });
          else bus.emit('alert.resolved', { id: alert.id, rule: alert.rule, kind: alert.kind, subject: alert.subject, summary: alert.summary, notified: notification !== null });
        }
        if (!notification) return;
        log.info({ alert: alert.id, rule: alert.rule, status, subject: alert.subject }, `alert ${status}: ${alert.summary}`);
        // A resolution goes where its firing went, whatever the rule's channels are now.
        for (const channel of channels) this.queue.enqueue(channel, notification);
      },
    });
    // Subscribed only to what some rule kind reads; the listeners are cheap whether or not a rule is configured.
    this.stops = [
      bus.on('budget.threshold', (event) => this.engine.budgetThreshold(event)),
      bus.on('breaker.opened', (event) => this.engine.breakerOpened(event)),
      bus.on('breaker.closed', (event) => this.engine.breakerClosed(event)),
      bus.on('provider.attempted', (event) => {
        if (this.has('error_rate')) this.engine.providerAttempted(event);
      }),
      bus.on('request.completed', (event) => {
        if (this.has('latency_p95') || this.has('ttft_p95') || this.has('server_errors')) this.engine.requestCompleted(event);
      }),
      bus.on('request.failed', (event) => {
        if (this.has('server_errors') || this.has('fallbacks_exhausted')) this.engine.requestFailed(event);
      }),
    ];
    this.timer = setInterval(() => {
      try {
        this.engine.tick();
      } catch (err) {
        log.error({ err }, 'alerts: evaluating the rules failed');
      }
    }, options.evaluateEveryMs ?? EVALUATE_EVERY_MS);
    this.timer.unref();
  }

  /** The rule kinds configured, worked out once per config version (this runs on every request's terminal event). */
  private kinds: { rules: readonly unknown[]; kinds: Set<string> } = { rules: [], kinds: new Set() };

  private has(kind: string): boolean {
    const rules = this.options.alerts().rules;
    if (this.kinds.rules !== rules) this.kinds = { rules, kinds: new Set(rules.map((rule) => rule.kind)) };
    return this.kinds.kinds.has(kind);
  }

  open(): OpenAlert[] {
    return this.engine.openAlerts();
  }

  deliveries(limit?: number): DeliveryRecord[] {
    return this.queue.log(limit);
  }

  queued(): number {
    return this.queue.size();
  }

  testChannel(name: string): Promise<DeliveryRecord> {
    return this.queue.test(name, testNotification(name));
  }

  budgetChanged(account: 'key' | 'team', id: string, previous: number | null, previousSpend?: number): void {
    const usage = this.options.budgetUsage(account, id);
    if (!usage || !(usage.budget > 0)) return;
    for (const threshold of thresholdsCrossed({ spend: previousSpend ?? usage.spend, budget: previous }, usage)) {
      this.options.bus.emit('budget.threshold', { account, id, threshold, budget: usage.budget, spend: usage.spend });
    }
  }

  /** Stops listening and evaluating; what is still queued stays in the store for the next start. */
  async close(): Promise<void> {
    for (const stop of this.stops) stop();
    clearInterval(this.timer);
    await this.queue.close();
    await this.state.flush();
  }
}
