import type { AlertNotification } from '../rules.js';
import { allFacts, escapeWithin, markdownEscape, oneLine, titleOf } from './common.js';

/**
 * Microsoft Teams: a message with one Adaptive Card (schema 1.4) attachment, the form both Workflows webhooks
 * (Power Automate's "post to a channel when a webhook request is received") and the older connector webhooks
 * accept. A title in the severity's colour, the summary, and the facts as a FactSet. Teams refuses a message
 * over about 28 KB, so every text is bounded. TextBlocks and facts are rendered as Markdown, and much of what they
 * show is made up by a client (a model name): every text is escaped, so it shows as plain text, never a link.
 */
export interface TeamsMessage {
  type: 'message';
  attachments: Array<{ contentType: 'application/vnd.microsoft.card.adaptive'; contentUrl: null; content: Record<string, unknown> }>;
}

const TEXT_MAX = 2_000;
const FACT_VALUE_MAX = 500;
const MAX_FACTS = 30;

/** Adaptive Card text colours: `attention` red, `warning` amber, `accent` blue, `good` green. */
const COLOR: Record<AlertNotification['severity'], string> = { critical: 'attention', warning: 'warning', info: 'accent' };

export function teamsMessage(notification: AlertNotification): TeamsMessage {
  const firing = notification.status === 'firing';
  const facts = allFacts(notification)
    .slice(0, MAX_FACTS)
    .map(([title, value]) => ({ title: escapeWithin(title, 100, markdownEscape), value: escapeWithin(value, FACT_VALUE_MAX, markdownEscape) }));
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          msteams: { width: 'Full' },
          body: [
            { type: 'TextBlock', text: escapeWithin(oneLine(titleOf(notification)), 200, markdownEscape), weight: 'bolder', size: 'medium', color: firing ? COLOR[notification.severity] : 'good', wrap: true },
            { type: 'TextBlock', text: escapeWithin(oneLine(notification.summary), TEXT_MAX, markdownEscape), wrap: true },
            { type: 'FactSet', facts },
            { type: 'TextBlock', text: 'Sent by tollgate', isSubtle: true, size: 'small', wrap: true },
          ],
        },
      },
    ],
  };
}
