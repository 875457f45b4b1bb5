import { createHmac } from 'node:crypto';
import type { Database, RootDatabase } from 'lmdb';
import type { AlertChannelRuntime } from '../../core/config.js';
import type { Log } from '../../log.js';
import type { AlertNotification } from './rules.js';

/** A notification waiting for delivery to one channel, as persisted (the body is kept as the exact bytes signed). */
export interface QueuedDelivery {
  seq: number;
  channel: string;
  alertId: string;
  rule: string;
  status: AlertNotification['status'];
  body: string;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due (epoch ms). */
  nextAt: number;
  createdAt: string;
}

/** One line of the delivery log: an attempt, or a notification refused before any attempt (`queue_full`, `channel_removed`). */
export interface DeliveryRecord {
  at: string;
  alertId: string;
  rule: string;
  status: AlertNotification['status'];
  channel: string;
  attempt: number;
  /** `delivered`; `retrying` (another attempt is scheduled); `failed` (no further attempt: given up, refused, or dropped). */
  outcome: 'delivered' | 'retrying' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
  /** When the next attempt is due, for `retrying`. */
  nextAt: string | null;
}

/** Signs a delivery: hex HMAC-SHA256 of `timestamp + "." + body` with the channel's secret. */
export function signature(secret: string, timestamp: string, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** Deliveries attempted at once, all channels together. */
const CONCURRENCY = 4;
/** Delivery-log lines kept (the oldest are deleted past it). */
const MAX_LOG = 10_000;
/** Of a receiver's answer, this much is read (and a line of it kept in the log on failure). */
const MAX_ANSWER_BYTES = 4_096;

export interface DeliveryQueueOptions {
  root: RootDatabase;
  log: Log;
  channel: (name: string) => AlertChannelRuntime | undefined;
  maxQueue: () => number;
  userAgent: string;
  now?: () => number;
}

/**
 * The persisted, bounded delivery queue and its worker. A notification accepted here is written to LMDB before
 * anything is sent, and leaves the queue only as delivered or failed, each attempt in the delivery log; after a
 * restart the queue is read back and every waiting notification is tried at once.
 */
export class DeliveryQueue {
  private readonly queue: Database<QueuedDelivery, number>;
  private readonly deliveries: Database<DeliveryRecord, [number, number]>;
  private readonly pending = new Map<number, QueuedDelivery>();
  private readonly inflight = new Map<number, AbortController>();
  private readonly writes = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private nextSeq: number;
  private logWrites = 0;
  private logSeq = 0;
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly options: DeliveryQueueOptions) {
    this.now = options.now ?? Date.now;
    this.queue = options.root.openDB<QueuedDelivery, number>({ name: 'alert-queue' });
    this.deliveries = options.root.openDB<DeliveryRecord, [number, number]>({ name: 'alert-deliveries' });
    let last = 0;
    const now = this.now();
    for (const { key, value } of this.queue.getRange()) {
      // Waiting notifications from before a restart are due now: the receiver may well be back.
      this.pending.set(key, { ...value, nextAt: Math.min(value.nextAt, now) });
      last = Math.max(last, key);
    }
    this.nextSeq = last + 1;
    if (this.pending.size > 0) options.log.info({ waiting: this.pending.size }, 'alerts: delivering notifications that were waiting before the restart');
    this.schedule();
  }

  /** Notifications waiting for a (next) attempt. */
  size(): number {
    return this.pending.size;
  }

  /** The delivery log, newest first. */
  log(limit = 100): DeliveryRecord[] {
    const out: DeliveryRecord[] = [];
    for (const { value } of this.deliveries.getRange({ reverse: true, limit })) out.push(value);
    return out;
  }

  /** Accepts a notification for a channel: persisted, then delivered off the request path. */
  enqueue(channel: string, notification: AlertNotification): void {
    if (this.closed) return;
    const base = { alertId: notification.id, rule: notification.rule, status: notification.status, channel };
    if (this.pending.size >= this.options.maxQueue()) {
      this.record({ ...base, attempt: 0, outcome: 'failed', httpStatus: null, error: 'queue_full', durationMs: 0, nextAt: null });
      this.options.log.warn({ channel, rule: notification.rule }, 'alerts: the delivery queue is full; notification recorded as failed');
      return;
    }
    const entry: QueuedDelivery = { seq: this.nextSeq++, ...base, body: JSON.stringify(notification), attempts: 0, nextAt: this.now(), createdAt: new Date(this.now()).toISOString() };
    this.pending.set(entry.seq, entry);
    this.write(this.queue.put(entry.seq, entry));
    this.schedule();
  }

  /** Stops the worker; attempts in flight are cut off and stay queued for the next start. Resolves once written. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const controller of this.inflight.values()) controller.abort();
    while (this.inflight.size > 0 || this.writes.size > 0) await Promise.allSettled([...this.writes, new Promise((done) => setTimeout(done, 5))]);
  }

  private write(promise: Promise<unknown>): void {
    const tracked = promise.catch((err: unknown) => this.options.log.error({ err }, 'alerts: could not write to the store'));
    this.writes.add(tracked);
    void tracked.finally(() => this.writes.delete(tracked));
  }

  private record(line: Omit<DeliveryRecord, 'at'>): void {
    const at = this.now();
    this.write(this.deliveries.put([at, this.logSeq++], { at: new Date(at).toISOString(), ...line }));
    if (++this.logWrites % 100 === 0) this.trimLog();
  }

  private trimLog(): void {
    const excess = this.deliveries.getCount() - MAX_LOG;
    if (excess <= 0) return;
    for (const key of this.deliveries.getKeys({ limit: excess })) this.write(this.deliveries.remove(key));
  }

  /** Arms the timer for the earliest due notification not in flight (or runs the due ones now). */
  private schedule(): void {
    if (this.closed) return;
    let earliest = Infinity;
    for (const entry of this.pending.values()) if (!this.inflight.has(entry.seq) && entry.nextAt < earliest) earliest = entry.nextAt;
    if (earliest === Infinity || this.inflight.size >= CONCURRENCY) return;
    if (this.timer && this.timerAt <= earliest) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = earliest;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      this.pump();
    }, Math.max(0, earliest - this.now()));
    this.timer.unref();
  }

  private pump(): void {
    if (this.closed) return;
    const now = this.now();
    const due = [...this.pending.values()].filter((entry) => !this.inflight.has(entry.seq) && entry.nextAt <= now).sort((a, b) => a.nextAt - b.nextAt || a.seq - b.seq);
    for (const entry of due) {
      if (this.inflight.size >= CONCURRENCY) break;
      const controller = new AbortController();
      this.inflight.set(entry.seq, controller);
      void this.attempt(entry, controller).finally(() => {
        this.inflight.delete(entry.seq);
        this.schedule();
      });
    }
    this.schedule();
  }

  private async attempt(entry: QueuedDelivery, controller: AbortController): Promise<void> {
    const channel = this.options.channel(entry.channel);
    const base = { alertId: entry.alertId, rule: entry.rule, status: entry.status, channel: entry.channel };
    if (!channel) {
      this.finish(entry);
      this.record({ ...base, attempt: entry.attempts, outcome: 'failed', httpStatus: null, error: 'channel_removed', durationMs: 0, nextAt: null });
      return;
    }
    const attempt = entry.attempts + 1;
    const started = this.now();
    const timestamp = String(Math.floor(started / 1000));
    const headers: Record<string, string> = {
      ...channel.headers,
      'content-type': 'application/json',
      'user-agent': this.options.userAgent,
      'x-tollgate-timestamp': timestamp,
      'x-tollgate-attempt': String(attempt),
    };
    if (channel.secret !== null) headers['x-tollgate-signature'] = `v1=${signature(channel.secret, timestamp, entry.body)}`;
    let httpStatus: number | null = null;
    let error: string | null = null;
    const timeout = setTimeout(() => controller.abort(new Error(`no answer within ${channel.timeoutMs} ms`)), channel.timeoutMs);
    try {
      const response = await fetch(channel.url, { method: 'POST', headers, body: entry.body, signal: controller.signal, redirect: 'manual' });
      httpStatus = response.status;
      const answer = await readSome(response);
      if (httpStatus < 200 || httpStatus >= 300) error = answer.split('\n')[0]?.slice(0, 200) || `HTTP ${httpStatus}`;
    } catch (err) {
      error = describe(err);
    } finally {
      clearTimeout(timeout);
    }
    const durationMs = this.now() - started;
    if (this.closed) {
      // Cut off by shutdown: not counted, the notification stays queued for the next start.
      return;
    }
    if (error === null) {
      this.finish(entry);
      this.record({ ...base, attempt, outcome: 'delivered', httpStatus, error: null, durationMs, nextAt: null });
      return;
    }
    // A receiver that refuses the notification itself (4xx but 408 and 429) will refuse it again.
    const permanent = httpStatus !== null && httpStatus >= 400 && httpStatus < 500 && httpStatus !== 408 && httpStatus !== 429;
    if (permanent || attempt >= channel.maxAttempts) {
      this.finish(entry);
      this.record({ ...base, attempt, outcome: 'failed', httpStatus, error, durationMs, nextAt: null });
      this.options.log.warn({ channel: entry.channel, rule: entry.rule, alert: entry.alertId, attempt, httpStatus, error }, 'alerts: notification could not be delivered');
      return;
    }
    const delay = backoff(channel, attempt);
    const next: QueuedDelivery = { ...entry, attempts: attempt, nextAt: this.now() + delay };
    this.pending.set(entry.seq, next);
    this.write(this.queue.put(entry.seq, next));
    this.record({ ...base, attempt, outcome: 'retrying', httpStatus, error, durationMs, nextAt: new Date(next.nextAt).toISOString() });
  }

  private finish(entry: QueuedDelivery): void {
    this.pending.delete(entry.seq);
    this.write(this.queue.remove(entry.seq));
  }
}

/** Exponential backoff: the initial delay doubled per failed attempt, capped, with up to a fifth of jitter. */
export function backoff(channel: Pick<AlertChannelRuntime, 'initialDelayMs' | 'maxDelayMs'>, attempt: number): number {
  const base = Math.min(channel.maxDelayMs, channel.initialDelayMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(base * (0.8 + Math.random() * 0.2));
}

async function readSome(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, MAX_ANSWER_BYTES);
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    const code = cause && typeof cause === 'object' && 'code' in cause ? String((cause as { code: unknown }).code) : null;
    const message = cause instanceof Error ? cause.message : err.message;
    return code ? `${code}: ${message}` : message;
  }
  return String(err);
}
