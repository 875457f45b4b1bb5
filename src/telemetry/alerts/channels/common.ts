import type { AlertNotification } from '../rules.js';

/**
 * What every channel format shares: the title line, the subject and the details as labelled lines, and truncation
 * that stays inside a service's documented limit without splitting a character.
 */

/** `text` cut to at most `max` characters (UTF-16 units, as the services count), ending in `…` when cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  // Never leave half of a surrogate pair behind.
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/**
 * `text` escaped with `escape` and cut so the result is at most `max` characters: the text is cut first (at a
 * character, ending in `…` as `truncate` does) and only then escaped, so a cut never lands inside an escape (half
 * an `&amp;`, a lone backslash). `escape` must work character by character (a longer text never escapes shorter).
 */
export function escapeWithin(text: string, max: number, escape: (text: string) => string): string {
  const whole = escape(text);
  if (whole.length <= max) return whole;
  if (max < 1) return '';
  // The longest prefix whose escaped form leaves room for the `…`.
  let fits = 0;
  let over = text.length;
  while (over - fits > 1) {
    const mid = (fits + over) >>> 1;
    if (escape(text.slice(0, mid)).length <= max - 1) fits = mid;
    else over = mid;
  }
  // Never leave half of a surrogate pair behind.
  const last = text.charCodeAt(fits - 1);
  if (fits > 0 && last >= 0xd800 && last <= 0xdbff) fits--;
  return `${escape(text.slice(0, fits))}…`;
}

/**
 * Markdown as plain text: every ASCII punctuation character backslash-escaped (CommonMark lets any of them be, and
 * Discord's and Teams' renderers honour it), so a value a client made up (a model name) cannot form a link
 * (`[text](url)`, `<url>`, a bare `https://` URL), emphasis, a list, a quote, a heading, a mention or a timestamp.
 */
export function markdownEscape(text: string): string {
  return text.replace(/[!-/:-@[-`{-~]/g, '\\$&');
}

/** One line: line breaks and other control characters become spaces (subjects, titles, headers). */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

/** `FIRING` or `RESOLVED`. */
export function statusWord(notification: Pick<AlertNotification, 'status'>): 'FIRING' | 'RESOLVED' {
  return notification.status === 'firing' ? 'FIRING' : 'RESOLVED';
}

/** `FIRING warning: budget-half`. */
export function titleOf(notification: AlertNotification): string {
  return `${statusWord(notification)} ${notification.severity}: ${notification.rule}`;
}

const SUBJECT_LABELS: ReadonlyArray<[keyof AlertNotification['subject'], string]> = [
  ['key', 'Key'],
  ['team', 'Team'],
  ['provider', 'Provider'],
  ['model', 'Model'],
  ['target', 'Target'],
  ['route', 'Route'],
];

/** What the alert is about, as label and value: `Key`, `Team`, `Provider`, `Model`, `Target`, `Route`, those present. */
export function subjectFacts(notification: AlertNotification): Array<[string, string]> {
  const facts: Array<[string, string]> = [];
  for (const [field, label] of SUBJECT_LABELS) {
    const value = notification.subject[field];
    if (value !== undefined && value !== '') facts.push([label, value]);
  }
  return facts;
}

/** A detail's value as text: strings as they are, anything else as JSON. */
export function detailText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The details as name and value, in their order. */
export function detailFacts(notification: AlertNotification): Array<[string, string]> {
  return Object.entries(notification.details ?? {}).map(([name, value]) => [name, detailText(value)]);
}

/** The alert's facts for a table: severity, status, rule, event, the subject, then the details. */
export function allFacts(notification: AlertNotification): Array<[string, string]> {
  return [
    ['Severity', notification.severity],
    ['Status', notification.status],
    ['Rule', notification.rule],
    ['Event', notification.event],
    ...subjectFacts(notification),
    ...detailFacts(notification),
    [notification.status === 'firing' ? 'Since' : 'Resolved at', notification.at],
    ['Alert id', notification.id],
  ];
}

/** The one-line label of what an alert is about (`openai/gpt-4o#k1`, `route chat`, `key k_1`), or null for none. */
export function subjectLabel(notification: AlertNotification): string | null {
  const { key, team, provider, model, target, route } = notification.subject;
  if (target) return target;
  if (provider && model) return `${provider}/${model}`;
  if (provider) return provider;
  if (route) return `route ${route}`;
  if (key) return `key ${key}`;
  if (team) return `team ${team}`;
  return null;
}
