import type { AlertNotification } from '../rules.js';
import { allFacts, oneLine, titleOf, truncate } from './common.js';

/**
 * Microsoft Teams: a message with one Adaptive Card (schema 1.4) attachment, the form both Workflows webhooks
 * (Power Automate's "post to a channel when a webhook request is received") and the older connector webhooks
 * accept. A title in the severity's colour, the summary, and the facts as a FactSet. Teams refuses a message
 * over about 28 KB, so every text is bounded.
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
    .map(([title, value]) => ({ title: truncate(title, 100), value: truncate(value, FACT_VALUE_MAX) }));
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
            { type: 'TextBlock', text: truncate(oneLine(titleOf(notification)), 200), weight: 'bolder', size: 'medium', color: firing ? COLOR[notification.severity] : 'good', wrap: true },
            { type: 'TextBlock', text: truncate(oneLine(notification.summary), TEXT_MAX), wrap: true },
            { type: 'FactSet', facts },
            { type: 'TextBlock', text: 'Sent by tollgate', isSubtle: true, size: 'small', wrap: true },
          ],
        },
      },
    ],
  };
}
