import type { Database, RootDatabase } from 'lmdb';
import { fetch, type Response } from 'undici';
import type { AlertChannelRuntime } from '../../core/config.js';
import type { Log } from '../../log.js';
import type { Outbound } from '../../network/outbound-network.js';
import { discordMessage } from './channels/discord.js';
import { emailMessage } from './channels/email.js';
import { pagerDutyEvent } from './channels/pagerduty.js';
import { slackMessage } from './channels/slack.js';
import { SmtpSender } from './channels/smtp.js';
import { teamsMessage } from './channels/teams.js';
import { webhookHeaders } from './channels/webhook.js';
import type { AlertNotification } from './rules.js';
import { openRecords } from '../../store/records.js';

export { signature } from './channels/webhook.js';

/**
 * A notification waiting for delivery to one channel, as persisted: the body is the notification's JSON, which a
 * webhook is sent as it is (the exact bytes signed) and every other channel type formats at each attempt.
 */
export interface QueuedDelivery {
  seq: number;
  channel: string;
  alertId: string;
  rule: string;
  status: AlertNotification['status'];
  body: string;
  /** Attempts made so far. */
  attempts: number;
  /**
   * An email's recipients still to be sent it, once an attempt left some deferred (a 4xx reply to their RCPT TO)
   * while the others took it; absent for every address of the channel's `to`.
   */
  recipients?: string[];
  /** When the next attempt is due (epoch ms). */
  nextAt: number;
  /**
   * Until when the receiver asked to be left alone (its Retry-After, within max_delay_ms; epoch ms): a restart keeps
   * this wait, while a backoff of the gateway's own is cut short by one. Absent when it asked nothing.
   */
  heldUntil?: number;
  createdAt: string;
}

/** One line of the delivery log: an attempt, or a notification refused before any attempt (`queue_full`, `channel_removed`). */
export interface DeliveryRecord {
  at: string;
  alertId: string;
  rule: string;
  status: AlertNotification['status'];
  channel: string;
  /** The channel's type (`webhook`, `slack`, `teams`, `discord`, `pagerduty`, `email`); null when it is gone. */
  channelType: AlertChannelRuntime['type'] | null;
  attempt: number;
  /** `delivered`; `retrying` (another attempt is scheduled); `failed` (no further attempt: given up, refused, or dropped). */
  outcome: 'delivered' | 'retrying' | 'failed';
  httpStatus: number | null;
  /** The SMTP reply code of an email the server refused (550, 451, ...). */
  smtpStatus: number | null;
  error: string | null;
  durationMs: number;
  /** When the next attempt is due, for `retrying`. */
  nextAt: string | null;
}

/** How long `close()` lets attempts in flight finish before it cuts them off. */
const CLOSE_GRACE_MS = 2_000;
/** Deliveries attempted at once, all channels together. */
const CONCURRENCY = 8;
/**
 * Deliveries attempted at once to one channel: a receiver that hangs until its timeout holds at most this many of the
 * slots, so the other channels' notifications (the pager's among them) keep going out.
 */
const PER_CHANNEL = 2;
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
  /** Webhooks are posted through its dispatcher (proxy and CAs as configured); SMTP over TLS trusts its CAs. */
  outbound: Outbound;
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
  /** Attempts in flight per channel (see PER_CHANNEL). */
  private readonly busy = new Map<string, number>();
  /**
   * The queued notifications of one alert to one channel, oldest first: only the first may be attempted. A resolve
   * sent before its trigger (the trigger still being retried) is dropped by PagerDuty, which then opens an incident
   * for the trigger that nothing resolves; chat channels would show RESOLVED above FIRING.
   */
  private readonly lines = new Map<string, number[]>();
  /** Test attempts in flight (`test()`), cut off by `close()` like queued ones. */
  private readonly testing = new Set<AbortController>();
  private readonly smtp: SmtpSender;
  private readonly writes = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private nextSeq: number;
  private logWrites = 0;
  private logSeq = 0;
  /** No attempt starts (`close()` was called). */
  private closed = false;
  /** Attempts still in flight after `close()`'s grace were aborted: their outcome is not recorded. */
  private cutOff = false;
  private readonly now: () => number;

  constructor(private readonly options: DeliveryQueueOptions) {
    this.now = options.now ?? Date.now;
    this.smtp = new SmtpSender(() => options.outbound.ca);
    this.queue = openRecords<QueuedDelivery, number>(options.root, { name: 'alert-queue' });
    this.deliveries = openRecords<DeliveryRecord, [number, number]>(options.root, { name: 'alert-deliveries' });
    let last = 0;
    const now = this.now();
    for (const { key, value } of this.queue.getRange()) {
      // Waiting notifications from before a restart are due now (the receiver may well be back), but for a receiver's
      // own Retry-After, which still holds: it said when to come back.
      this.pending.set(key, { ...value, nextAt: Math.min(value.nextAt, Math.max(now, value.heldUntil ?? 0)) });
      this.line(value).push(key);
      last = Math.max(last, key);
    }
    this.nextSeq = last + 1;
    if (this.pending.size > 0) options.log.info({ waiting: this.pending.size }, 'alerts: delivering notifications that were waiting before the restart');
    if (this.pending.size > 0) this.wake(now);
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
      this.record({ ...base, channelType: this.options.channel(channel)?.type ?? null, attempt: 0, outcome: 'failed', httpStatus: null, smtpStatus: null, error: 'queue_full', durationMs: 0, nextAt: null });
      this.options.log.warn({ channel, rule: notification.rule }, 'alerts: the delivery queue is full; notification recorded as failed');
      return;
    }
    const entry: QueuedDelivery = { seq: this.nextSeq++, ...base, body: JSON.stringify(notification), attempts: 0, nextAt: this.now(), createdAt: new Date(this.now()).toISOString() };
    this.pending.set(entry.seq, entry);
    this.line(entry).push(entry.seq);
    this.write(this.queue.put(entry.seq, entry));
    // Due now: a pump soon, one for a whole burst of alerts (see `wake`), not a scan of the queue per notification.
    this.wake(entry.nextAt);
  }

  /** The queued seqs of `entry`'s alert to its channel (see `lines`), made when missing. */
  private line(entry: Pick<QueuedDelivery, 'channel' | 'alertId'>): number[] {
    const key = lineKey(entry);
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = []));
    return line;
  }

  /**
   * One attempt to deliver `notification` to a channel now: not queued, not retried, recorded in the delivery log,
   * and answered with its line (`delivered`, or `failed` with the reason; `channel_not_found` for no such channel).
   */
  async test(channelName: string, notification: AlertNotification): Promise<DeliveryRecord> {
    const channel = this.options.channel(channelName);
    const base = { alertId: notification.id, rule: notification.rule, status: notification.status, channel: channelName, channelType: channel?.type ?? null, attempt: 1 };
    if (!channel || this.closed) {
      const error = channel ? 'queue_closed' : 'channel_not_found';
      const line = { ...base, attempt: 0, outcome: 'failed' as const, httpStatus: null, smtpStatus: null, error, durationMs: 0, nextAt: null };
      return this.closed ? { at: new Date(this.now()).toISOString(), ...line } : this.record(line);
    }
    const controller = new AbortController();
    this.testing.add(controller);
    const started = this.now();
    try {
      const result = await this.send(channel, JSON.stringify(notification), 1, controller);
      const line = { ...base, httpStatus: result.httpStatus, smtpStatus: result.smtpStatus, durationMs: this.now() - started, nextAt: null };
      const outcome = { outcome: result.error === null ? ('delivered' as const) : ('failed' as const), error: result.error };
      // Closed meanwhile: the store may be closing too, so the line is answered but not written.
      if (this.closed) return { at: new Date(this.now()).toISOString(), ...line, ...outcome };
      const record = this.record({ ...line, ...outcome });
      // Written before it is answered: whoever asked for the test can read it in the delivery log at once.
      await Promise.allSettled([...this.writes]);
      return record;
    } finally {
      this.testing.delete(controller);
    }
  }

  /**
   * Stops the worker: no attempt starts from now on. Attempts in flight get `graceMs` to be answered, then are cut off
   * and stay queued for the next start. Resolves once written.
   */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const controller of this.testing) controller.abort();
    // A receiver that has the notification and is answering would get it again after the restart (a second page for
    // one alert) if its attempt were cut off now.
    const deadline = Date.now() + graceMs;
    while (this.inflight.size > 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 5));
    this.cutOff = true;
    for (const controller of this.inflight.values()) controller.abort();
    while (this.inflight.size > 0 || this.testing.size > 0 || this.writes.size > 0) {
      await Promise.allSettled([...this.writes, new Promise((done) => setTimeout(done, 5))]);
    }
    this.smtp.close();
  }

  private write(promise: Promise<unknown>): void {
    const tracked = promise.catch((err: unknown) => this.options.log.error({ err }, 'alerts: could not write to the store'));
    this.writes.add(tracked);
    void tracked.finally(() => this.writes.delete(tracked));
  }

  private record(line: Omit<DeliveryRecord, 'at'>): DeliveryRecord {
    const at = this.now();
    const record: DeliveryRecord = { at: new Date(at).toISOString(), ...line };
    this.write(this.deliveries.put([at, this.logSeq++], record));
    if (++this.logWrites % 100 === 0) this.trimLog();
    return record;
  }

  private trimLog(): void {
    const excess = this.deliveries.getCount() - MAX_LOG;
    if (excess <= 0) return;
    for (const key of this.deliveries.getKeys({ limit: excess })) this.write(this.deliveries.remove(key));
  }

  /**
   * Whether a notification may start now: its channel has a slot free (see PER_CHANNEL), it is not in flight, and it
   * is the oldest of its alert's queued to its channel (see `lines`). The cheapest check first: `pump` asks it of
   * every due notification, and in a backlog most wait for a busy channel.
   */
  private startable(entry: QueuedDelivery): boolean {
    return (this.busy.get(entry.channel) ?? 0) < PER_CHANNEL && !this.inflight.has(entry.seq) && this.lines.get(lineKey(entry))?.[0] === entry.seq;
  }

  /**
   * Makes sure a pump runs at `at` (at once when it is past). Calls before an armed timer's time cost nothing, so a
   * burst of notifications, or of attempts ending, is one pump. Every enqueue and every attempt's end scanned and
   * sorted the whole queue instead: 10,000 alerts at once (the default max_queue) held the event loop, on the
   * request path, for seconds, and a backlog took a delivery's worth of CPU per notification to drain.
   */
  private wake(at: number): void {
    if (this.closed || this.inflight.size >= CONCURRENCY) return;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      this.pump();
    }, Math.max(0, at - this.now()));
    this.timer.unref();
  }

  /**
   * One pass over the queue, oldest first: starts the due notifications that may start, while slots are free, and
   * arms the timer for the earliest one that waits for its retry time. Those waiting for a busy channel or for the
   * notification ahead of them are woken when an attempt ends (all slots busy: likewise).
   */
  private pump(): void {
    if (this.closed) return;
    const now = this.now();
    let next = Infinity;
    for (const entry of this.pending.values()) {
      if (this.inflight.size >= CONCURRENCY) return;
      if (entry.nextAt > now) {
        if (entry.nextAt < next && this.startable(entry)) next = entry.nextAt;
      } else if (this.startable(entry)) this.start(entry);
    }
    if (next !== Infinity) this.wake(next);
  }

  private start(entry: QueuedDelivery): void {
    const controller = new AbortController();
    this.inflight.set(entry.seq, controller);
    const channel = entry.channel;
    this.busy.set(channel, (this.busy.get(channel) ?? 0) + 1);
    void this.attempt(entry, controller).finally(() => {
      this.inflight.delete(entry.seq);
      const left = (this.busy.get(channel) ?? 1) - 1;
      if (left > 0) this.busy.set(channel, left);
      else this.busy.delete(channel);
      // A slot is free, and the notification behind this one may be next: a pump soon.
      this.wake(this.now());
    });
  }

  private async attempt(entry: QueuedDelivery, controller: AbortController): Promise<void> {
    const channel = this.options.channel(entry.channel);
    const base = { alertId: entry.alertId, rule: entry.rule, status: entry.status, channel: entry.channel, channelType: channel?.type ?? null };
    if (!channel) {
      this.finish(entry);
      this.record({ ...base, attempt: entry.attempts, outcome: 'failed', httpStatus: null, smtpStatus: null, error: 'channel_removed', durationMs: 0, nextAt: null });
      return;
    }
    const attempt = entry.attempts + 1;
    const started = this.now();
    const { httpStatus, smtpStatus, error, permanent, retryAfterMs, recipients } = await this.send(channel, entry.body, attempt, controller, entry.recipients);
    const durationMs = this.now() - started;
    if (this.cutOff) {
      // Cut off by shutdown: not counted, the notification stays queued for the next start.
      return;
    }
    const result = { httpStatus, smtpStatus, error, durationMs };
    if (error === null) {
      this.finish(entry);
      this.record({ ...base, attempt, outcome: 'delivered', ...result, nextAt: null });
      return;
    }
    if (permanent || attempt >= channel.maxAttempts) {
      this.finish(entry);
      this.record({ ...base, attempt, outcome: 'failed', ...result, nextAt: null });
      this.options.log.warn({ channel: entry.channel, type: channel.type, rule: entry.rule, alert: entry.alertId, attempt, httpStatus, smtpStatus, error }, 'alerts: notification could not be delivered');
      return;
    }
    // A receiver that says when to come back (Retry-After, Discord's retry_after) is waited for, within max_delay_ms.
    const delay = Math.min(channel.maxDelayMs, Math.max(backoff(channel, attempt), retryAfterMs ?? 0));
    const { heldUntil: _held, ...rest } = entry;
    const held = retryAfterMs !== null && retryAfterMs > 0 ? { heldUntil: this.now() + Math.min(channel.maxDelayMs, retryAfterMs) } : {};
    const next: QueuedDelivery = { ...rest, attempts: attempt, nextAt: this.now() + delay, ...held, ...(recipients ? { recipients } : {}) };
    this.pending.set(entry.seq, next);
    this.write(this.queue.put(entry.seq, next));
    this.record({ ...base, attempt, outcome: 'retrying', ...result, nextAt: new Date(next.nextAt).toISOString() });
  }

  /** One attempt over the channel's own transport: an HTTP POST of its format, or an email. Never throws. */
  private async send(channel: AlertChannelRuntime, body: string, attempt: number, controller: AbortController, recipients?: string[]): Promise<SendResult> {
    try {
      return await this.sendOver(channel, body, attempt, controller, recipients);
    } catch (err) {
      // The notification could not be put in the channel's format: no later attempt would do better.
      return { httpStatus: null, smtpStatus: null, error: `could not format the notification: ${describe(err)}`, permanent: true, retryAfterMs: null };
    }
  }

  private async sendOver(channel: AlertChannelRuntime, body: string, attempt: number, controller: AbortController, recipients?: string[]): Promise<SendResult> {
    if (channel.type === 'email') {
      // Transports of channels that are gone or no longer email are closed.
      this.smtp.close((name) => this.options.channel(name)?.type === 'email');
      const notification = JSON.parse(body) as AlertNotification;
      const result = await this.smtp.send(channel, emailMessage(notification, { subjectPrefix: channel.subjectPrefix }), controller.signal, recipients);
      if (result.rejected.length > 0) this.options.log.warn({ channel: channel.name, rejected: result.rejected }, 'alerts: the SMTP server refused some recipients of an alert email');
      // 5xx is final; 4xx and connection errors are retried, and recipients deferred while others took the message
      // are the only ones the next attempt goes to.
      return { httpStatus: null, smtpStatus: result.smtpStatus, error: result.error, permanent: result.permanent, retryAfterMs: null, recipients: result.deferred.length > 0 ? result.deferred : undefined };
    }
    const request = httpRequest(channel, body, attempt, this.now());
    // fetch refuses a URL holding a user and password (and its error quotes the URL): they go as Basic auth.
    const target = withoutCredentials(request.url);
    if (target.authorization !== null && !Object.keys(request.headers).some((name) => name.toLowerCase() === 'authorization')) request.headers.authorization = target.authorization;
    const headers = withOwnHeaders(request.headers, { 'content-type': 'application/json', 'user-agent': this.options.userAgent, ...request.tollgateHeaders });
    const secrets = channelSecrets(channel, request.url, target);
    let httpStatus: number | null = null;
    let error: string | null = null;
    let retryAfterMs: number | null = null;
    const timeout = setTimeout(() => controller.abort(new Error(`no answer within ${channel.timeoutMs} ms`)), channel.timeoutMs);
    try {
      // undici's fetch with the gateway's dispatcher, not the global one: the proxy and CAs of settings.network apply.
      const response = await fetch(target.url, { method: 'POST', headers, body: request.body, signal: controller.signal, redirect: 'manual', dispatcher: this.options.outbound.dispatcher });
      httpStatus = response.status;
      const answer = await readSome(response);
      if (httpStatus < 200 || httpStatus >= 300) {
        // A receiver's refusal may quote what it was sent (a 404 naming the path and query, a 401 naming the token).
        error = withoutSecrets(answer.split('\n')[0] ?? '', secrets).slice(0, 200) || `HTTP ${httpStatus}`;
        retryAfterMs = retryHint(response, answer, this.now());
      }
    } catch (err) {
      // The URL is a credential (a chat webhook's token, a webhook's password or query token): never in the log.
      error = withoutSecrets(describe(err), secrets);
    } finally {
      clearTimeout(timeout);
    }
    // A receiver that refuses the notification itself (4xx but 408 and 429) will refuse it again; one that sends it
    // elsewhere (3xx) is not followed (a notification goes only to the address configured) and would redirect again.
    if (httpStatus !== null && httpStatus >= 300 && httpStatus < 400) error = `HTTP ${httpStatus}: the receiver redirects; redirects are not followed (configure the final URL)`;
    const permanent = httpStatus !== null && httpStatus >= 300 && httpStatus < 500 && httpStatus !== 408 && httpStatus !== 429;
    return { httpStatus, smtpStatus: null, error, permanent, retryAfterMs };
  }

  private finish(entry: QueuedDelivery): void {
    this.pending.delete(entry.seq);
    const key = lineKey(entry);
    const line = this.lines.get(key)?.filter((seq) => seq !== entry.seq) ?? [];
    if (line.length > 0) this.lines.set(key, line);
    else this.lines.delete(key);
    this.write(this.queue.remove(entry.seq));
  }
}

/** The key of an alert's notifications to one channel in `DeliveryQueue.lines`. */
function lineKey(entry: Pick<QueuedDelivery, 'channel' | 'alertId'>): string {
  return `${entry.channel}\n${entry.alertId}`;
}

interface SendResult {
  httpStatus: number | null;
  smtpStatus: number | null;
  error: string | null;
  /** No later attempt would do better (a 4xx but 408 and 429, an SMTP 5xx). */
  permanent: boolean;
  /** How long the receiver asked to be left alone, when it said. */
  retryAfterMs: number | null;
  /** An email's recipients the next attempt goes to, when this one left some deferred (see QueuedDelivery). */
  recipients?: string[] | undefined;
}

/** An HTTP channel's request: where, the body in its service's format, and its headers. */
function httpRequest(channel: Exclude<AlertChannelRuntime, { type: 'email' }>, body: string, attempt: number, now: number): { url: string; body: string; headers: Record<string, string>; tollgateHeaders: Record<string, string> } {
  switch (channel.type) {
    case 'webhook':
      // The queued bytes exactly: they are what the signature covers.
      return { url: channel.url, body, headers: { ...channel.headers }, tollgateHeaders: webhookHeaders(channel, body, attempt, now) };
    case 'slack':
      return { url: channel.url, body: JSON.stringify(slackMessage(JSON.parse(body) as AlertNotification)), headers: {}, tollgateHeaders: {} };
    case 'teams':
      return { url: channel.url, body: JSON.stringify(teamsMessage(JSON.parse(body) as AlertNotification)), headers: {}, tollgateHeaders: {} };
    case 'discord':
      return { url: channel.url, body: JSON.stringify(discordMessage(JSON.parse(body) as AlertNotification)), headers: {}, tollgateHeaders: {} };
    case 'pagerduty':
      return { url: channel.url, body: JSON.stringify(pagerDutyEvent(JSON.parse(body) as AlertNotification, channel)), headers: {}, tollgateHeaders: {} };
  }
}

/**
 * A URL without its user and password, and those as a Basic authorization (as curl sends them): fetch refuses a URL
 * that holds credentials, so a webhook configured as `https://user:password@host/...` was never delivered, and the
 * refusal, which quotes the URL, put the password in the delivery log and the gateway's log at every attempt.
 */
export function withoutCredentials(url: string): { url: string; authorization: string | null; secrets: string[] } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, authorization: null, secrets: [] };
  }
  if (parsed.username === '' && parsed.password === '') return { url, authorization: null, secrets: [] };
  const user = decodeOrKeep(parsed.username);
  const password = decodeOrKeep(parsed.password);
  const secrets = [parsed.username, parsed.password, user, password].filter((value) => value.length >= 4);
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.href, authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, secrets };
}

function decodeOrKeep(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Credentials shorter than this are not looked for in a receiver's answer (a short one would match ordinary words). */
const SHORTEST_SECRET = 4;
/** A chat URL's path segments this long are its tokens (Slack's, Discord's), looked for one by one. */
const TOKEN_SEGMENT = 16;

/**
 * What of an HTTP channel is a credential, in the forms a receiver's answer or a connection error may quote it: the
 * URL (whole, and for a chat service, whose URL is the credential, its path and its long path segments), its user
 * and password and their Basic authorization, its query values, a webhook's header values (with and without their
 * scheme) and signing secret, and PagerDuty's routing key (sent in the body).
 */
function channelSecrets(channel: Exclude<AlertChannelRuntime, { type: 'email' }>, url: string, target: { url: string; authorization: string | null; secrets: string[] }): string[] {
  const secrets = [url, target.url, ...target.secrets];
  if (target.authorization !== null) secrets.push(target.authorization, target.authorization.slice('Basic '.length));
  let parsed: URL | null = null;
  try {
    parsed = new URL(target.url);
  } catch {
    // Not a URL: the whole of it is looked for.
  }
  if (parsed) {
    for (const pair of parsed.search.slice(1).split('&')) {
      const value = pair.slice(pair.indexOf('=') + 1);
      if (pair.includes('=')) secrets.push(value, decodeOrKeep(value));
    }
    if (channel.type === 'slack' || channel.type === 'teams' || channel.type === 'discord') {
      secrets.push(`${parsed.pathname}${parsed.search}`, parsed.pathname, ...parsed.pathname.split('/').filter((segment) => segment.length >= TOKEN_SEGMENT));
    }
  }
  if (channel.type === 'webhook') {
    if (channel.secret !== null) secrets.push(channel.secret);
    for (const value of Object.values(channel.headers)) secrets.push(value, value.slice(value.indexOf(' ') + 1).trim());
  }
  if (channel.type === 'pagerduty') secrets.push(channel.routingKey);
  return secrets.filter((value) => value.length >= SHORTEST_SECRET);
}

/** `text` with every one of `secrets` (a channel's URL, its credentials) replaced, longest first. */
function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...new Set(secrets)].filter((value) => value !== '').sort((a, b) => b.length - a.length)) out = out.split(secret).join('****');
  return out;
}

/**
 * A channel's own headers with tollgate's (all lower case) over them. Header names are case-insensitive but object
 * keys are not: a channel's `Content-Type` or `X-Tollgate-Timestamp` beside tollgate's own spelling went out as two
 * headers, which the receiver joins (`application/json; charset=utf-8, application/json`, `0, 1767225600`), so its
 * JSON parser or its signature check refused the delivery. A channel header tollgate sets itself is dropped.
 */
function withOwnHeaders(channel: Record<string, string>, own: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(channel)) if (!Object.hasOwn(own, name.toLowerCase())) headers[name] = value;
  return Object.assign(headers, own);
}

/**
 * When a refusing receiver asks to be tried again: a `Retry-After` header (seconds or an HTTP date; Slack sends it
 * with its 429) or, on a 429, Discord's `retry_after` (seconds) in the JSON body; the longer of the two.
 */
export function retryHint(response: { status: number; headers: { get(name: string): string | null } }, answer: string, now: number): number | null {
  let hint: number | null = null;
  const header = response.headers.get('retry-after')?.trim();
  if (header) {
    const seconds = Number(header);
    if (/^\d+(\.\d+)?$/.test(header) && Number.isFinite(seconds)) hint = seconds * 1000;
    else {
      const date = Date.parse(header);
      if (!Number.isNaN(date)) hint = Math.max(0, date - now);
    }
  }
  if (response.status === 429 && answer.trimStart().startsWith('{')) {
    try {
      const retryAfter = (JSON.parse(answer) as { retry_after?: unknown }).retry_after;
      if (typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0) hint = Math.max(hint ?? 0, retryAfter * 1000);
    } catch {
      // Not JSON after all: the header (if any) stands.
    }
  }
  return hint === null ? null : Math.ceil(hint);
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
