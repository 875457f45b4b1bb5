import { ApiError } from './client.js';
import type { FieldSpec } from './fields.js';

export { fieldText, fieldValue, getPath, setPath, type FieldKind, type FieldSpec } from './fields.js';

/**
 * What the alerts page reads and writes (README "Alerts"): the shapes of `/api/alerts`, and, in one place, the
 * fields each channel type and rule kind has, so the forms and tables follow them (a field renamed or added is one
 * line here).
 */

export type AlertsSource = 'api' | 'file' | 'none' | string;
export type Severity = 'info' | 'warning' | 'critical';

/** A channel as the API shows it: secrets masked (`****abcd`), or a reference as the file wrote it (`env:NAME`). */
export interface AlertChannelView {
  name: string;
  type: string;
  [field: string]: unknown;
}

export interface AlertRuleView {
  name: string;
  kind: string;
  severity?: Severity;
  cooldown_ms?: number;
  channels?: string[];
  [field: string]: unknown;
}

export interface AlertSubject {
  key?: string;
  team?: string;
  provider?: string;
  model?: string;
  target?: string;
  route?: string;
}

export interface OpenAlertView {
  id: string;
  rule: string;
  kind: string;
  subject: AlertSubject;
  summary: string;
  since: string;
  /** False when the firing fell inside the rule's cooldown and was not sent. */
  notified: boolean;
}

/** One line of the delivery log (and the answer of a channel's test). */
export interface DeliveryLine {
  at: string;
  alertId: string;
  rule: string;
  status: 'firing' | 'resolved' | string;
  channel: string;
  attempt: number;
  outcome: 'delivered' | 'retrying' | 'failed' | string;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
  nextAt: string | null;
}

export interface AlertsView {
  source: AlertsSource;
  channels: AlertChannelView[];
  rules: AlertRuleView[];
  max_queue: number;
  open: OpenAlertView[];
  queued: number;
}

export const channelPath = (name: string): string => `/alerts/channels/${encodeURIComponent(name)}`;
export const rulePath = (name: string): string => `/alerts/rules/${encodeURIComponent(name)}`;

// ---- the fields of each channel type and rule kind -------------------------------------------------------------

const RETRY: FieldSpec[] = [
  { name: 'timeout_ms', label: 'Timeout (ms)', kind: 'number', hint: 'per attempt; default 10000' },
  { name: 'retry.max_attempts', label: 'Attempts', kind: 'number', hint: 'the first included; default 8' },
  { name: 'retry.initial_delay_ms', label: 'First retry after (ms)', kind: 'number', hint: 'doubles each time; default 1000' },
  { name: 'retry.max_delay_ms', label: 'Longest wait (ms)', kind: 'number', hint: 'default 300000' },
];

const chat = (service: string): FieldSpec[] => [{ name: 'url', label: `${service} webhook URL`, kind: 'secret', required: true, hint: 'a credential: shown masked from then on' }, ...RETRY];

/** The channel types and their fields, in form order. `destination`: the fields the table shows as where it goes. */
export const CHANNEL_TYPES: Record<string, { label: string; fields: FieldSpec[]; destination: string[] }> = {
  webhook: {
    label: 'Webhook (signed JSON)',
    destination: ['url'],
    fields: [
      { name: 'url', label: 'URL', kind: 'url', required: true, hint: 'the alert is POSTed here as JSON' },
      { name: 'secret', label: 'Signing secret', kind: 'secret', hint: 'signs x-tollgate-signature; optional' },
      { name: 'headers', label: 'Extra headers', kind: 'headers', hint: 'one `Name: value` a line' },
      ...RETRY,
    ],
  },
  slack: { label: 'Slack', destination: ['url'], fields: chat('Slack') },
  teams: { label: 'Microsoft Teams', destination: ['url'], fields: chat('Teams') },
  discord: { label: 'Discord', destination: ['url'], fields: chat('Discord') },
  pagerduty: {
    label: 'PagerDuty',
    destination: ['url'],
    fields: [
      { name: 'routing_key', label: 'Routing key', kind: 'secret', required: true, hint: 'Events API v2 integration key' },
      { name: 'url', label: 'Events URL', kind: 'url', hint: 'default: the US service region' },
      { name: 'source', label: 'Source', kind: 'text', hint: "default: the gateway's host name" },
      ...RETRY,
    ],
  },
  email: {
    label: 'Email (SMTP)',
    destination: ['to', 'host'],
    fields: [
      { name: 'host', label: 'SMTP host', kind: 'text', required: true },
      { name: 'port', label: 'Port', kind: 'number', hint: 'default 465 with implicit TLS, else 587' },
      { name: 'secure', label: 'Implicit TLS', kind: 'bool', hint: 'as on port 465' },
      { name: 'starttls', label: 'STARTTLS', kind: 'select', options: ['required', 'opportunistic', 'off'] },
      { name: 'username', label: 'Username', kind: 'text' },
      { name: 'password', label: 'Password', kind: 'secret' },
      { name: 'from', label: 'From', kind: 'text', required: true, hint: 'alerts@example.com' },
      { name: 'to', label: 'To', kind: 'list', required: true, hint: 'comma-separated addresses' },
      { name: 'subject_prefix', label: 'Subject prefix', kind: 'text', hint: 'default [tollgate]' },
      ...RETRY,
    ],
  },
};

const WINDOW: FieldSpec = { name: 'window_ms', label: 'Window (ms)', kind: 'number', hint: 'default 300000 (5 min)' };
const MIN_REQUESTS: FieldSpec = { name: 'min_requests', label: 'Minimum requests', kind: 'number', hint: 'in the window before it counts; default 10' };
const PROVIDERS: FieldSpec = { name: 'providers', label: 'Providers', kind: 'list', hint: 'comma-separated; empty: all' };
const ROUTES: FieldSpec = { name: 'routes', label: 'Routes', kind: 'list', hint: 'comma-separated; empty: all' };
const p95 = (what: string): FieldSpec[] => [
  { name: 'threshold_ms', label: `${what} p95 over (ms)`, kind: 'number', required: true },
  { name: 'for_ms', label: 'For (ms)', kind: 'number', hint: 'how long it must stay over; default 60000' },
  WINDOW,
  { ...MIN_REQUESTS, hint: 'answers in the window before it counts; default 10' },
  PROVIDERS,
];

/** The rule kinds and their own fields (every rule also has severity, cooldown and channels). */
export const RULE_KINDS: Record<string, { label: string; fields: FieldSpec[] }> = {
  budget: {
    label: 'Budget crossed',
    fields: [
      { name: 'thresholds', label: 'Thresholds (% of the budget)', kind: 'checks', options: [50, 80, 100], hint: 'none ticked: all three' },
      { name: 'account', label: 'Budgets of', kind: 'select', options: ['key', 'team'], hint: 'default: keys and teams' },
    ],
  },
  breaker_opened: { label: 'Circuit breaker opened', fields: [PROVIDERS] },
  error_rate: {
    label: 'Upstream error rate',
    fields: [
      { name: 'threshold_pct', label: 'Error rate over (%)', kind: 'number', required: true },
      WINDOW,
      MIN_REQUESTS,
      PROVIDERS,
      { name: 'per', label: 'One alert per', kind: 'select', options: ['provider', 'model'], hint: 'default: provider' },
    ],
  },
  latency_p95: { label: 'Latency p95', fields: p95('Latency') },
  ttft_p95: { label: 'Time to first token p95', fields: p95('TTFT') },
  fallbacks_exhausted: {
    label: 'Fallbacks exhausted',
    fields: [{ name: 'min_count', label: 'At least (requests)', kind: 'number', hint: 'default 1' }, WINDOW, ROUTES],
  },
  server_errors: {
    label: '5xx rate of a route',
    fields: [{ name: 'threshold_pct', label: '5xx rate over (%)', kind: 'number', required: true }, WINDOW, MIN_REQUESTS, ROUTES],
  },
};

export const SEVERITIES: readonly Severity[] = ['info', 'warning', 'critical'];

/** `env:NAME` / `file:/path`: the file reads a secret from elsewhere, and the API cannot edit such a section item by item. */
export function isReference(value: unknown): boolean {
  return typeof value === 'string' && /^(env|file):/.test(value);
}

/** Whether any string anywhere in `value` is such a reference (as the API judges the whole section). */
export function hasReference(value: unknown): boolean {
  if (isReference(value)) return true;
  if (Array.isArray(value)) return value.some(hasReference);
  if (value && typeof value === 'object') return Object.values(value).some(hasReference);
  return false;
}

/**
 * The API names a field by its full config path (`alerts.channels.ops.url`, `alerts.rules.3.threshold_pct`); a form
 * about one channel or rule names it relative to the item (`url`, `threshold_pct`).
 */
export function itemError(error: ApiError, prefix: RegExp): ApiError {
  const param = error.param;
  if (!param) return error;
  const match = prefix.exec(param);
  return match ? new ApiError(error.status, error.message, param.slice(match[0].length), error.code) : error;
}

// ---- words -------------------------------------------------------------------------------------------------------

/** 60000 -> "60 s", 300000 -> "5 min", 7200000 -> "2 h". */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120 || s % 60 !== 0) return `${Math.round(s * 10) / 10} s`;
  const min = s / 60;
  if (min < 120 || min % 60 !== 0) return `${min} min`;
  return `${min / 60} h`;
}

const num = (rule: AlertRuleView, field: string): number | undefined => (typeof rule[field] === 'number' ? (rule[field] as number) : undefined);
const only = (rule: AlertRuleView, field: string, what: string): string => {
  const list = rule[field];
  return Array.isArray(list) && list.length ? ` · ${what} ${list.join(', ')}` : '';
};

/** A rule's condition in words, with the API's defaults filled in: "latency p95 > 900 ms for 60 s". */
export function condition(rule: AlertRuleView): string {
  const window = duration(num(rule, 'window_ms') ?? 300_000);
  const min = num(rule, 'min_requests') ?? 10;
  switch (rule.kind) {
    case 'budget': {
      const thresholds = Array.isArray(rule.thresholds) && rule.thresholds.length ? rule.thresholds : [50, 80, 100];
      const account = rule.account === 'key' ? 'a key' : rule.account === 'team' ? 'a team' : 'a key or team';
      return `${account} spends ${thresholds.map((t) => `${String(t)}%`).join(' / ')} of its budget`;
    }
    case 'breaker_opened':
      return `a circuit breaker opens${only(rule, 'providers', 'providers')}`;
    case 'error_rate':
      return `errors > ${num(rule, 'threshold_pct') ?? '?'}% per ${rule.per === 'model' ? 'model' : 'provider'} over ${window} (≥ ${min} attempts)${only(rule, 'providers', 'providers')}`;
    case 'latency_p95':
    case 'ttft_p95':
      return `${rule.kind === 'ttft_p95' ? 'TTFT' : 'latency'} p95 > ${num(rule, 'threshold_ms') ?? '?'} ms for ${duration(num(rule, 'for_ms') ?? 60_000)} (window ${window}, ≥ ${min} answers)${only(rule, 'providers', 'providers')}`;
    case 'fallbacks_exhausted': {
      const count = num(rule, 'min_count') ?? 1;
      return `≥ ${count} request${count === 1 ? '' : 's'} failed after every fallback in ${window}${only(rule, 'routes', 'routes')}`;
    }
    case 'server_errors':
      return `5xx > ${num(rule, 'threshold_pct') ?? '?'}% of a route's requests over ${window} (≥ ${min} requests)${only(rule, 'routes', 'routes')}`;
    default:
      return rule.kind;
  }
}

/** `{key: 'k1', provider: 'openai'}` -> "key k1 · provider openai". */
export function subjectText(subject: AlertSubject): string {
  const parts = (['key', 'team', 'provider', 'model', 'route', 'target'] as const).filter((field) => subject[field]).map((field) => `${field} ${subject[field]}`);
  return parts.length ? parts.join(' · ') : 'the gateway';
}
