import type { AlertNotification } from '../rules.js';
import { detailFacts, escapeWithin, markdownEscape, oneLine, statusWord, subjectFacts, titleOf, truncate } from './common.js';

/**
 * Discord webhooks: a short `content` line and one embed coloured by severity (green once resolved), with
 * `allowed_mentions: { parse: [] }` so no text in an alert can ping a user, a role or @everyone. Discord's
 * limits: content 2000, an embed's title 256, description 4096, 25 fields of name 256 and value 1024, footer
 * 2048, and 6000 characters over the whole embed. The content, the embed's title and description and its fields are
 * Markdown, and much of what they show is made up by a client (a model name): every text there is escaped, so it
 * shows as plain text, never a masked link, and no URL in it is linked or unfurled into a preview embed. (The footer
 * is not Markdown: kept as it is.)
 */
export interface DiscordMessage {
  content: string;
  embeds: Array<{
    title: string;
    description: string;
    color: number;
    fields: Array<{ name: string; value: string; inline: boolean }>;
    footer: { text: string };
    timestamp: string;
  }>;
  allowed_mentions: { parse: never[] };
}

/** Red, amber, blurple; green for resolved. */
export const DISCORD_COLORS = { critical: 0xed4245, warning: 0xf0b232, info: 0x5865f2, resolved: 0x57f287 } as const;

const EMBED_TOTAL_MAX = 6_000;
const MAX_FIELDS = 25;

export function discordMessage(notification: AlertNotification): DiscordMessage {
  const title = escapeWithin(oneLine(titleOf(notification)), 256, markdownEscape);
  const description = escapeWithin(notification.summary, 2_000, markdownEscape);
  const status = `**${statusWord(notification)}** `;
  const footer = truncate(`tollgate · alert ${notification.id}`, 256);
  let budget = EMBED_TOTAL_MAX - title.length - description.length - footer.length;
  const fields: Array<{ name: string; value: string; inline: boolean }> = [];
  const candidates: Array<[string, string, boolean]> = [
    ['Severity', notification.severity, true],
    ['Status', notification.status, true],
    ['Event', notification.event, true],
    ...subjectFacts(notification).map(([name, value]): [string, string, boolean] => [name, value, true]),
    ...detailFacts(notification).map(([name, value]): [string, string, boolean] => [name, value, true]),
  ];
  for (const [rawName, rawValue, inline] of candidates) {
    if (fields.length >= MAX_FIELDS) break;
    const name = escapeWithin(oneLine(rawName) || '-', 256, markdownEscape);
    // An empty value is refused by Discord.
    const value = rawValue === '' ? '-' : escapeWithin(rawValue, 1_024, markdownEscape);
    if (name.length + value.length > budget) break;
    budget -= name.length + value.length;
    fields.push({ name, value, inline });
  }
  return {
    content: `${status}${escapeWithin(`${notification.severity}: ${oneLine(notification.rule)}`, 2_000 - status.length, markdownEscape)}`,
    embeds: [
      {
        title,
        description,
        color: notification.status === 'resolved' ? DISCORD_COLORS.resolved : DISCORD_COLORS[notification.severity],
        fields,
        footer: { text: footer },
        timestamp: notification.at,
      },
    ],
    allowed_mentions: { parse: [] },
  };
}
