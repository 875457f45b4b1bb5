import type { AlertNotification } from '../rules.js';
import { allFacts, escapeWithin, oneLine, statusWord, truncate } from './common.js';

/**
 * Slack incoming webhooks: `text` (the notification and fallback line) and Block Kit `blocks` (a header, the
 * summary, the facts as fields, a context line). Slack's limits: a header's plain text 150 characters, a
 * section's text 3000, a section's fields 10 of 2000 each; the top-level `text` is kept short too.
 */
export interface SlackMessage {
  text: string;
  blocks: Array<Record<string, unknown>>;
}

const HEADER_MAX = 150;
const SECTION_MAX = 3_000;
const FIELD_MAX = 2_000;
const FIELDS_PER_SECTION = 10;
/** Sections of fields: the alert's facts rarely need more than two. */
const MAX_FIELD_SECTIONS = 3;

/**
 * Slack's mrkdwn escaping: `&`, `<` and `>` (so alert text cannot form a link or a `<!channel>` mention). The mrkdwn
 * text objects that carry alert text (the summary, the facts) are also sent `verbatim: true`: without it Slack
 * auto-links URLs, link-ifies channel names and parses some mentions in the plain text, and a model name a client
 * made up (`openai/https://evil.example/login`) showed as a clickable link in the ops channel.
 */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const CONTEXT = 'tollgate · alert ';

const EMOJI: Record<AlertNotification['severity'], string> = { critical: ':rotating_light:', warning: ':warning:', info: ':information_source:' };

export function slackMessage(notification: AlertNotification): SlackMessage {
  const firing = notification.status === 'firing';
  const emoji = firing ? EMOJI[notification.severity] : ':white_check_mark:';
  const title = `${statusWord(notification)} ${notification.severity}: ${notification.rule}`;
  const summary = oneLine(notification.summary);
  const facts = allFacts(notification).filter(([label]) => label !== 'Alert id');
  const fieldSections: Array<Record<string, unknown>> = [];
  for (let i = 0; i < facts.length && fieldSections.length < MAX_FIELD_SECTIONS; i += FIELDS_PER_SECTION) {
    fieldSections.push({
      type: 'section',
      fields: facts.slice(i, i + FIELDS_PER_SECTION).map(([label, value]) => {
        const name = `*${slackEscape(truncate(label, 100))}*\n`;
        return { type: 'mrkdwn', text: `${name}${escapeWithin(value, FIELD_MAX - name.length, slackEscape)}`, verbatim: true };
      }),
    });
  }
  return {
    // Cut, then escaped: a cut never leaves half an entity (`&l…`).
    text: `${emoji} ${escapeWithin(`${title}: ${summary}`, SECTION_MAX - emoji.length - 1, slackEscape)}`,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: truncate(oneLine(title), HEADER_MAX), emoji: true } },
      { type: 'section', text: { type: 'mrkdwn', text: `${emoji} ${escapeWithin(summary, SECTION_MAX - emoji.length - 1, slackEscape)}`, verbatim: true } },
      ...fieldSections,
      { type: 'context', elements: [{ type: 'mrkdwn', text: `${CONTEXT}${escapeWithin(notification.id, SECTION_MAX - CONTEXT.length, slackEscape)}` }] },
    ],
  };
}
