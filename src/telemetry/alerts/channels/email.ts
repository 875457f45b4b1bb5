import type { AlertNotification } from '../rules.js';
import { allFacts, oneLine, statusWord, titleOf, truncate } from './common.js';

/**
 * An email: the subject `[tollgate] FIRING warning: <summary>`, a plain-text part and an HTML part with the same
 * facts. Every value put into the HTML is escaped; the subject is one line, at most 200 characters.
 */
export interface EmailMessage {
  subject: string;
  text: string;
  html: string;
}

const SUBJECT_MAX = 200;

/** HTML text and attribute escaping. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const COLOR: Record<AlertNotification['severity'] | 'resolved', string> = { critical: '#c62828', warning: '#b26a00', info: '#1565c0', resolved: '#2e7d32' };

export function emailMessage(notification: AlertNotification, options: { subjectPrefix: string }): EmailMessage {
  const prefix = oneLine(options.subjectPrefix);
  const summary = oneLine(notification.summary);
  const subject = truncate(oneLine(`${prefix ? `${prefix} ` : ''}${statusWord(notification)} ${notification.severity}: ${summary}`), SUBJECT_MAX);
  const facts = allFacts(notification);
  const width = Math.max(...facts.map(([label]) => label.length));
  const text = [
    titleOf(notification),
    '',
    notification.summary,
    '',
    ...facts.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}`),
    '',
    '-- ',
    'Sent by tollgate.',
    '',
  ].join('\n');
  const color = notification.status === 'resolved' ? COLOR.resolved : COLOR[notification.severity];
  const rows = facts
    .map(([label, value]) => `<tr><th align="left" style="padding:2px 12px 2px 0;vertical-align:top">${escapeHtml(label)}</th><td style="padding:2px 0;font-family:monospace">${escapeHtml(value)}</td></tr>`)
    .join('\n');
  const html = [
    '<!DOCTYPE html>',
    '<html><head><meta charset="utf-8"><title>' + escapeHtml(subject) + '</title></head>',
    '<body style="font-family:sans-serif;font-size:14px">',
    `<h2 style="color:${color};margin:0 0 8px">${escapeHtml(titleOf(notification))}</h2>`,
    `<p style="margin:0 0 12px">${escapeHtml(notification.summary)}</p>`,
    `<table style="border-collapse:collapse">\n${rows}\n</table>`,
    '<p style="color:#777;font-size:12px;margin-top:16px">Sent by tollgate.</p>',
    '</body></html>',
    '',
  ].join('\n');
  return { subject, text, html };
}
