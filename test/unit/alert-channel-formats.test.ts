import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mapSecrets, maskDocument } from '../../src/config/present.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema, type ConfigInput } from '../../src/config/schema.js';
import { restoreMaskedDocument } from '../../src/config/unmask.js';
import { testNotification } from '../../src/telemetry/alerts/alert-service.js';
import { escapeWithin, markdownEscape, truncate } from '../../src/telemetry/alerts/channels/common.js';
import { DISCORD_COLORS, discordMessage } from '../../src/telemetry/alerts/channels/discord.js';
import { emailMessage, escapeHtml } from '../../src/telemetry/alerts/channels/email.js';
import { pagerDutyEvent } from '../../src/telemetry/alerts/channels/pagerduty.js';
import { slackEscape, slackMessage } from '../../src/telemetry/alerts/channels/slack.js';
import { smtpFailure } from '../../src/telemetry/alerts/channels/smtp.js';
import { teamsMessage } from '../../src/telemetry/alerts/channels/teams.js';
import { retryHint } from '../../src/telemetry/alerts/delivery.js';
import type { AlertNotification } from '../../src/telemetry/alerts/rules.js';

const firing: AlertNotification = {
  id: '5b0c7f9e-1d2a-4c3b-9e8f-0a1b2c3d4e5f',
  rule: 'breaker',
  event: 'breaker.opened',
  severity: 'critical',
  status: 'firing',
  summary: 'circuit breaker opened for openai/<script>alert(1)</script> (failures); trial calls in 30 s',
  subject: { provider: 'openai', model: '<script>alert(1)</script>', target: 'openai/<script>alert(1)</script>#k1' },
  details: { label: 'openai/<script>alert(1)</script>', cooldownMs: 30_000, nested: { a: 1 } },
  at: '2026-01-02T03:04:05.000Z',
};
const resolved: AlertNotification = { ...firing, status: 'resolved', event: 'breaker.closed', summary: 'circuit breaker closed for openai/gpt-4o', at: '2026-01-02T03:09:05.000Z' };
const budget: AlertNotification = {
  id: 'b-1',
  rule: 'budget-half',
  event: 'budget.threshold',
  severity: 'warning',
  status: 'firing',
  summary: 'key key_abc spent 50% of its budget ($2 of $4)',
  subject: { key: 'key_abc' },
  details: { account: 'key', id: 'key_abc', threshold: 50, budget: 4, spend: 2 },
  at: '2026-01-02T03:04:05.000Z',
};

/** A model name a client makes up, shaped as a Markdown link (and a Slack link, a mention, emphasis, a list item). */
const PHISH = '[urgent: log in](https://evil.example)';
const phishing: AlertNotification = {
  ...firing,
  summary: `circuit breaker opened for openai/${PHISH} (failures); <https://evil.example|log in> **now** <@U1>`,
  subject: { provider: 'openai', model: PHISH, target: `openai/${PHISH}#k1` },
  details: { label: `openai/${PHISH}`, note: '- [x](https://evil.example)\n1. _two_ `code` ~~s~~ # h > q <t:1:R> {{DATE(2017-02-14T06:08:00Z)}}' },
};
/** Every ASCII punctuation character in Markdown text is backslash-escaped: nothing in it can form a link, emphasis, a list. */
function plainMarkdown(text: string): boolean {
  return /^(?:[^!-/:-@[-`{-~]|\\[!-/:-@[-`{-~])*$/.test(text.replace(/…$/, ''));
}
const unescapeMarkdown = (text: string): string => text.replace(/\\([!-/:-@[-`{-~])/g, '$1');

describe('truncate', () => {
  it('keeps text within the limit, marks a cut, and never splits a surrogate pair', () => {
    expect(truncate('abc', 3)).toBe('abc');
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abcdef', 4)).toHaveLength(4);
    const emoji = `ab${'😀'.repeat(5)}`;
    for (let max = 1; max < emoji.length; max++) {
      const cut = truncate(emoji, max);
      expect(cut.length).toBeLessThanOrEqual(max);
      // A lone high surrogate at the end would be half a character.
      expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(cut)).toBe(false);
    }
  });
});

describe('escapeWithin', () => {
  it('cuts before escaping: the result fits the limit, ends in …, and never ends inside an escape or a surrogate pair', () => {
    const escape = (text: string): string => text.replace(/&/g, '&amp;');
    expect(escapeWithin('a&b', 7, escape)).toBe('a&amp;b');
    for (let max = 1; max < 20; max++) {
      const cut = escapeWithin(`${'&'.repeat(10)}😀😀`, max, escape);
      expect(cut.length).toBeLessThanOrEqual(max);
      expect(cut).toMatch(/^(?:&amp;)*…$/);
    }
    expect(escapeWithin('ab😀c', 4, (text) => text)).toBe('ab…');
  });
});

describe('Slack', () => {
  it('sends text and Block Kit blocks: header, summary, facts as fields, a context line', () => {
    const message = slackMessage(budget);
    expect(message.text).toBe(':warning: FIRING warning: budget-half: key key_abc spent 50% of its budget ($2 of $4)');
    expect(message.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'FIRING warning: budget-half', emoji: true } });
    expect(message.blocks[1]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: ':warning: key key_abc spent 50% of its budget ($2 of $4)', verbatim: true } });
    const fields = (message.blocks[2] as { type: string; fields: Array<{ type: string; text: string }> });
    expect(fields.type).toBe('section');
    expect(fields.fields).toContainEqual({ type: 'mrkdwn', text: '*Key*\nkey_abc', verbatim: true });
    expect(fields.fields).toContainEqual({ type: 'mrkdwn', text: '*threshold*\n50', verbatim: true });
    expect(fields.fields.length).toBeLessThanOrEqual(10);
    expect(message.blocks.at(-1)).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: 'tollgate · alert b-1' }] });
    expect(slackMessage({ ...budget, status: 'resolved' }).text).toMatch(/^:white_check_mark: RESOLVED warning/);
  });

  it('escapes &, < and > so alert text cannot link or mention (<!channel>), and keeps within Slack limits', () => {
    expect(slackEscape('<!channel> & <@U1>')).toBe('&lt;!channel&gt; &amp; &lt;@U1&gt;');
    const message = slackMessage({ ...firing, summary: `<!channel> ${'x'.repeat(5_000)}` });
    const text = JSON.stringify(message);
    expect(text).not.toContain('<!channel>');
    expect(text).not.toContain('<script>');
    expect(message.text.length).toBeLessThanOrEqual(3_000);
    const section = message.blocks[1] as { text: { text: string } };
    expect(section.text.text.length).toBeLessThanOrEqual(3_000);
    const header = message.blocks[0] as { text: { text: string } };
    expect(slackMessage({ ...firing, rule: 'r'.repeat(400) }).blocks[0]).toMatchObject({ text: { text: expect.stringMatching(/…$/) } });
    expect(header.text.text.length).toBeLessThanOrEqual(150);
    const many = slackMessage({ ...budget, details: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`d${i}`, i])) });
    for (const block of many.blocks.filter((b) => 'fields' in b) as Array<{ fields: unknown[] }>) expect(block.fields.length).toBeLessThanOrEqual(10);
    expect(many.blocks.length).toBeLessThanOrEqual(50);
  });

  it('escapes a client\'s Slack link (<url|text>) and mention: no < or > is left in any mrkdwn text', () => {
    const message = slackMessage(phishing);
    const texts = [message.text, ...message.blocks.flatMap((b: any) => [b.text?.type === 'mrkdwn' ? b.text.text : null, ...(b.fields ?? []).map((f: any) => f.text), ...(b.elements ?? []).map((e: any) => e.text)])].filter((t): t is string => typeof t === 'string');
    for (const text of texts) expect(text).not.toMatch(/[<>]/);
    expect(message.text).toContain('&lt;https://evil.example|log in&gt;');
  });

  it('cuts a long value before escaping it: no half entity at the end, and within the limit', () => {
    for (const pad of [0, 1, 2, 3, 4]) {
      const message = slackMessage({ ...firing, summary: `${'x'.repeat(pad)}${'&<>'.repeat(3_000)}`, details: { long: `${'y'.repeat(pad)}${'<&'.repeat(2_000)}` } });
      const texts = [message.text, (message.blocks[1] as { text: { text: string } }).text.text, ...message.blocks.flatMap((b: any) => (b.fields ?? []).map((f: any) => f.text as string))];
      expect(message.text.length).toBeLessThanOrEqual(3_000);
      expect(message.text).toMatch(/…$/);
      for (const text of texts) {
        // Every & starts a whole entity.
        expect(text.replace(/&(?:amp|lt|gt);/g, '')).not.toContain('&');
      }
      for (const block of message.blocks.filter((b) => 'fields' in b) as Array<{ fields: Array<{ text: string }> }>) for (const field of block.fields) expect(field.text.length).toBeLessThanOrEqual(2_000);
      const long = message.blocks.flatMap((b: any) => (b.fields ?? []) as Array<{ text: string }>).find((f) => f.text.startsWith('*long*'));
      expect(long?.text).toMatch(/…$/);
    }
  });
});

describe('Microsoft Teams', () => {
  it('sends a message with one Adaptive Card 1.4 attachment: coloured title, summary, facts', () => {
    const message = teamsMessage(firing);
    expect(message.type).toBe('message');
    expect(message.attachments).toHaveLength(1);
    const [attachment] = message.attachments;
    expect(attachment?.contentType).toBe('application/vnd.microsoft.card.adaptive');
    const card = attachment?.content as { type: string; version: string; body: Array<Record<string, any>> };
    expect(card).toMatchObject({ type: 'AdaptiveCard', version: '1.4', $schema: 'http://adaptivecards.io/schemas/adaptive-card.json' });
    // Markdown: every text escaped (the summary and the facts carry a client's model name).
    expect(card.body[0]).toMatchObject({ type: 'TextBlock', text: markdownEscape('FIRING critical: breaker'), weight: 'bolder', color: 'attention', wrap: true });
    expect(card.body[1]).toMatchObject({ type: 'TextBlock', text: markdownEscape(firing.summary), wrap: true });
    expect(card.body[2]?.type).toBe('FactSet');
    expect(card.body[2]?.facts).toEqual(expect.arrayContaining([{ title: 'Severity', value: 'critical' }, { title: 'Provider', value: 'openai' }, { title: 'cooldownMs', value: '30000' }, { title: 'nested', value: '\\{\\"a\\"\\:1\\}' }]));
    expect((teamsMessage(resolved).attachments[0]?.content as { body: Array<Record<string, unknown>> }).body[0]).toMatchObject({ text: 'RESOLVED critical\\: breaker', color: 'good' });
    expect((teamsMessage(budget).attachments[0]?.content as { body: Array<Record<string, unknown>> }).body[0]).toMatchObject({ color: 'warning' });
  });

  it('escapes client text (a model named as a Markdown link) in every TextBlock and fact, so it renders as plain text', () => {
    const card = teamsMessage(phishing).attachments[0]?.content as { body: Array<Record<string, any>> };
    const texts: string[] = [card.body[0]!.text, card.body[1]!.text, ...card.body[2]!.facts.flatMap((f: { title: string; value: string }) => [f.title, f.value])];
    for (const text of texts) expect(plainMarkdown(text)).toBe(true);
    expect(unescapeMarkdown(card.body[1]!.text)).toBe(phishing.summary);
    expect(card.body[2]!.facts).toContainEqual({ title: 'Model', value: '\\[urgent\\: log in\\]\\(https\\:\\/\\/evil\\.example\\)' });
    expect(card.body[2]!.facts.map((f: { value: string }) => unescapeMarkdown(f.value))).toContain(phishing.details!.note);
    // Escaping never pushes a text over its bound.
    const long = teamsMessage({ ...phishing, summary: '['.repeat(5_000), details: { d: '*'.repeat(2_000) } }).attachments[0]?.content as { body: Array<Record<string, any>> };
    expect(long.body[1]!.text.length).toBeLessThanOrEqual(2_000);
    expect(plainMarkdown(long.body[1]!.text)).toBe(true);
    for (const fact of long.body[2]!.facts) expect(fact.value.length).toBeLessThanOrEqual(500);
  });
});

describe('Discord', () => {
  it('sends content and one embed coloured by severity, with no mentions allowed', () => {
    const message = discordMessage(firing);
    expect(message.allowed_mentions).toEqual({ parse: [] });
    expect(message.content).toBe('**FIRING** critical\\: breaker');
    const [embed] = message.embeds;
    expect(embed).toMatchObject({ title: markdownEscape('FIRING critical: breaker'), description: markdownEscape(firing.summary), color: DISCORD_COLORS.critical, timestamp: firing.at, footer: { text: `tollgate · alert ${firing.id}` } });
    expect(embed?.fields).toEqual(expect.arrayContaining([{ name: 'Severity', value: 'critical', inline: true }, { name: 'Target', value: markdownEscape(firing.subject.target!), inline: true }]));
    expect(discordMessage(budget).embeds[0]?.color).toBe(DISCORD_COLORS.warning);
    expect(discordMessage({ ...budget, severity: 'info' }).embeds[0]?.color).toBe(DISCORD_COLORS.info);
    expect(discordMessage(resolved).embeds[0]?.color).toBe(DISCORD_COLORS.resolved);
  });

  it('keeps within Discord limits: 25 fields, 1024 per value, 6000 over the embed', () => {
    const huge = discordMessage({ ...budget, summary: 's'.repeat(10_000), details: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`d${i}`, 'v'.repeat(2_000)])) });
    const [embed] = huge.embeds;
    expect(embed!.fields.length).toBeLessThanOrEqual(25);
    for (const field of embed!.fields) expect(field.value.length).toBeLessThanOrEqual(1_024);
    const total = embed!.title.length + embed!.description.length + embed!.footer.text.length + embed!.fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
    expect(total).toBeLessThanOrEqual(6_000);
    expect(huge.content.length).toBeLessThanOrEqual(2_000);
    // An empty value is refused by Discord: shown as "-".
    expect(discordMessage({ ...budget, details: { empty: '' } }).embeds[0]?.fields).toContainEqual({ name: 'empty', value: '-', inline: true });
  });

  it('escapes client text (a model named as a Markdown link) in the content, title, description and fields, and leaves no URL to link or embed', () => {
    const message = discordMessage({ ...phishing, rule: 'see https://evil.example' });
    const [embed] = message.embeds;
    const texts = [message.content.replace(/^\*\*FIRING\*\* /, ''), embed!.title, embed!.description, ...embed!.fields.flatMap((f) => [f.name, f.value])];
    for (const text of texts) {
      expect(plainMarkdown(text)).toBe(true);
      expect(text).not.toContain('https://');
    }
    expect(unescapeMarkdown(embed!.description)).toBe(phishing.summary);
    expect(embed!.fields).toContainEqual({ name: 'Model', value: '\\[urgent\\: log in\\]\\(https\\:\\/\\/evil\\.example\\)', inline: true });
    // The footer is not Markdown: kept as it is.
    expect(embed!.footer.text).toBe(`tollgate · alert ${phishing.id}`);
    const long = discordMessage({ ...phishing, summary: '_'.repeat(5_000), details: { d: '*'.repeat(2_000) } });
    expect(long.embeds[0]!.description.length).toBeLessThanOrEqual(2_000);
    expect(plainMarkdown(long.embeds[0]!.description)).toBe(true);
    for (const field of long.embeds[0]!.fields) expect(field.value.length).toBeLessThanOrEqual(1_024);
  });
});

describe('PagerDuty', () => {
  const channel = { routingKey: 'R0UT1NGKEY0123456789012345678901', source: 'gw-1.example.com' };

  it('triggers with the alert id as dedup_key and a payload in PagerDuty fields', () => {
    expect(pagerDutyEvent(budget, channel)).toEqual({
      routing_key: channel.routingKey,
      event_action: 'trigger',
      dedup_key: 'b-1',
      client: 'tollgate',
      payload: {
        summary: budget.summary,
        source: 'gw-1.example.com',
        severity: 'warning',
        timestamp: budget.at,
        component: 'key key_abc',
        group: 'budget-half',
        class: 'budget.threshold',
        custom_details: { rule: 'budget-half', event: 'budget.threshold', subject: { key: 'key_abc' }, account: 'key', id: 'key_abc', threshold: 50, budget: 4, spend: 2 },
      },
    });
    expect(pagerDutyEvent(firing, channel)).toMatchObject({ payload: { severity: 'critical', component: firing.subject.target } });
    expect(pagerDutyEvent({ ...budget, severity: 'info' }, channel)).toMatchObject({ payload: { severity: 'info' } });
  });

  it('resolves with the same dedup_key and nothing else', () => {
    expect(pagerDutyEvent(resolved, channel)).toEqual({ routing_key: channel.routingKey, event_action: 'resolve', dedup_key: firing.id });
  });

  it('keeps the summary within 1024 characters on one line', () => {
    const event = pagerDutyEvent({ ...budget, summary: `line one\nline two ${'x'.repeat(3_000)}` }, channel);
    if (event.event_action !== 'trigger') throw new Error('expected a trigger');
    expect(event.payload.summary.length).toBeLessThanOrEqual(1_024);
    expect(event.payload.summary).toMatch(/^line one line two x+…$/);
  });
});

describe('email', () => {
  it('subject [prefix] FIRING severity: summary, and text and HTML parts with the facts', () => {
    const message = emailMessage(budget, { subjectPrefix: '[tollgate]' });
    expect(message.subject).toBe('[tollgate] FIRING warning: key key_abc spent 50% of its budget ($2 of $4)');
    expect(message.text).toContain('FIRING warning: budget-half');
    expect(message.text).toContain(budget.summary);
    expect(message.text).toMatch(/Key: +key_abc/);
    expect(message.text).toMatch(/Alert id: +b-1/);
    expect(message.html).toContain('<h2');
    expect(message.html).toContain(escapeHtml(budget.summary));
    expect(emailMessage(resolved, { subjectPrefix: '' }).subject).toBe('RESOLVED critical: circuit breaker closed for openai/gpt-4o');
  });

  it('escapes every value in the HTML part, and keeps the subject to one bounded line', () => {
    const message = emailMessage({ ...firing, rule: 'r"<b>' }, { subjectPrefix: '[tg]\r\nBcc: x@example.com' });
    expect(message.html).not.toContain('<script>');
    expect(message.html).not.toContain('<b>');
    expect(message.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(message.html).toContain('r&quot;&lt;b&gt;');
    expect(message.text).toContain('<script>alert(1)</script>');
    expect(message.subject).not.toMatch(/[\r\n]/);
    expect(emailMessage({ ...budget, summary: 'y'.repeat(1_000) }, { subjectPrefix: '[tollgate]' }).subject.length).toBeLessThanOrEqual(200);
    expect(escapeHtml(`<a href="x">&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;');
  });
});

describe('the test notification', () => {
  it('is plainly a test: rule test, severity info, firing, details.test', () => {
    expect(testNotification('ops', Date.parse('2026-01-01T00:00:00Z'))).toEqual({
      id: expect.any(String),
      rule: 'test',
      event: 'test',
      severity: 'info',
      status: 'firing',
      summary: expect.stringMatching(/test notification from tollgate/),
      subject: {},
      details: { test: true },
      at: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('retry hints and SMTP errors', () => {
  const answer = (status: number, headers: Record<string, string> = {}) => ({ status, headers: new Headers(headers) });

  it('reads Retry-After (seconds or a date) and Discord\'s retry_after, the longer of the two', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryHint(answer(429, { 'retry-after': '3' }), '', now)).toBe(3_000);
    expect(retryHint(answer(503, { 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), '', now)).toBe(5_000);
    expect(retryHint(answer(429), '{"message":"You are being rate limited.","retry_after":0.35,"global":false}', now)).toBe(350);
    expect(retryHint(answer(429, { 'retry-after': '1' }), '{"retry_after":2.5}', now)).toBe(2_500);
    expect(retryHint(answer(500), '{"retry_after":9}', now)).toBeNull();
    expect(retryHint(answer(429, { 'retry-after': 'soon' }), 'not json', now)).toBeNull();
  });

  it('an SMTP 5xx is final, a 4xx and a connection error are not', () => {
    expect(smtpFailure(Object.assign(new Error('Recipient command failed: 550 no such user'), { code: 'EENVELOPE', responseCode: 550 }))).toMatchObject({ smtpStatus: 550, permanent: true, error: 'EENVELOPE: Recipient command failed: 550 no such user' });
    expect(smtpFailure(Object.assign(new Error('451 try later'), { code: 'EENVELOPE', responseCode: 451 }))).toMatchObject({ smtpStatus: 451, permanent: false });
    expect(smtpFailure(Object.assign(new Error('503 bad sequence'), { responseCode: 503 }))).toMatchObject({ permanent: false });
    expect(smtpFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ESOCKET' }))).toMatchObject({ smtpStatus: null, permanent: false });
  });
});

function runtime(document: ConfigInput, env: Record<string, string> = {}) {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(document) }, env, 1);
}

const SLACK_URL = 'https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX';
const CHANNELS = {
  slack: { type: 'slack' as const, url: SLACK_URL },
  teams: { type: 'teams' as const, url: 'https://example.webhook.office.com/webhookb2/aaaa/IncomingWebhook/bbbb/cccc' },
  discord: { type: 'discord' as const, url: 'https://discord.com/api/webhooks/123/tok-en-value-0123456789' },
  pager: { type: 'pagerduty' as const, routing_key: 'R0UT1NGKEY0123456789012345678901' },
  mail: { type: 'email' as const, host: 'smtp.example.com', username: 'alerts', password: 'smtp-pass-0123456789', from: 'Tollgate <alerts@example.com>', to: ['ops@example.com'] },
};

describe('channel config', () => {
  it('resolves every channel type with its defaults', () => {
    const { alerts } = runtime({ alerts: { channels: CHANNELS } });
    expect(alerts.channels.get('slack')).toMatchObject({ type: 'slack', url: SLACK_URL, timeoutMs: 10_000, maxAttempts: 8 });
    expect(alerts.channels.get('pager')).toMatchObject({ type: 'pagerduty', url: 'https://events.pagerduty.com/v2/enqueue', routingKey: CHANNELS.pager.routing_key, source: expect.any(String) });
    expect(alerts.channels.get('mail')).toEqual({
      name: 'mail', type: 'email', host: 'smtp.example.com', port: 587, secure: false, starttls: 'required', username: 'alerts', password: 'smtp-pass-0123456789',
      from: 'Tollgate <alerts@example.com>', to: ['ops@example.com'], subjectPrefix: '[tollgate]', tlsRejectUnauthorized: true,
      timeoutMs: 10_000, maxAttempts: 8, initialDelayMs: 1_000, maxDelayMs: 300_000,
    });
    expect(runtime({ alerts: { channels: { mail: { ...CHANNELS.mail, secure: true } } } }).alerts.channels.get('mail')).toMatchObject({ port: 465, secure: true });
  });

  it('reads the secret fields from env: and file: references in the file, and checks a chat URL once read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-channel-secrets-'));
    try {
      writeFileSync(join(dir, 'pd'), 'FROMFILEROUTINGKEY\n');
      const { alerts } = runtime(
        { alerts: { channels: { slack: { type: 'slack', url: 'env:SLACK_URL' }, pager: { type: 'pagerduty', routing_key: `file:${join(dir, 'pd')}` }, mail: { ...CHANNELS.mail, password: 'env:SMTP_PASSWORD' } } } },
        { SLACK_URL, SMTP_PASSWORD: 'pw-from-env' },
      );
      expect(alerts.channels.get('slack')).toMatchObject({ url: SLACK_URL });
      expect(alerts.channels.get('pager')).toMatchObject({ routingKey: 'FROMFILEROUTINGKEY' });
      expect(alerts.channels.get('mail')).toMatchObject({ password: 'pw-from-env' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => runtime({ alerts: { channels: { slack: { type: 'slack', url: 'env:NOPE' } } } })).toThrow(/alerts\.channels\.slack\.url: environment variable NOPE is not set/);
    expect(() => runtime({ alerts: { channels: { slack: { type: 'slack', url: 'env:SLACK_URL' } } } }, { SLACK_URL: 'ftp://x/secret-token' })).toThrow(/alerts\.channels\.slack\.url: is not an http\(s\) URL$/);
    // References are the file's: through the API they are refused.
    expect(() => resolveRuntimeConfig({ api: configFileSchema.parse({ alerts: { channels: { slack: { type: 'slack', url: 'env:SLACK_URL' } } } }), file: {} }, { SLACK_URL }, 1)).toThrow(/not through the API/);
  });

  it('refuses bad email settings: addresses, a username without password, starttls with secure', () => {
    expect(configFileSchema.safeParse({ alerts: { channels: { mail: { ...CHANNELS.mail, to: ['not an address'] } } } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { channels: { mail: { ...CHANNELS.mail, to: [] } } } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { channels: { mail: { ...CHANNELS.mail, starttls: 'maybe' } } } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { channels: { mail: { ...CHANNELS.mail, subject_prefix: 'a\nb' } } } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { channels: { pager: { ...CHANNELS.pager, url: 'ftp://x' } } } }).success).toBe(false);
    expect(configFileSchema.safeParse({ alerts: { channels: { slack: { type: 'slack', url: SLACK_URL, secret: 'x' } } } }).success).toBe(false);
    const { password: _password, ...noPassword } = CHANNELS.mail;
    expect(() => runtime({ alerts: { channels: { mail: noPassword } } })).toThrow(/alerts\.channels\.mail: give both username and password/);
    expect(() => runtime({ alerts: { channels: { mail: { ...CHANNELS.mail, secure: true, starttls: 'required' } } } })).toThrow(/alerts\.channels\.mail\.starttls/);
  });

  it('masks every channel secret for the API, seals them for storage, and restores a masked value written back', () => {
    const document = configFileSchema.parse({ alerts: { channels: CHANNELS } });
    const masked = maskDocument(document);
    const text = JSON.stringify(masked);
    for (const secret of [SLACK_URL, CHANNELS.teams.url, CHANNELS.discord.url, CHANNELS.pager.routing_key, CHANNELS.mail.password]) expect(text).not.toContain(secret);
    expect(masked.alerts?.channels?.mail).toMatchObject({ host: 'smtp.example.com', username: 'alerts', password: '****6789' });
    const sealed = mapSecrets(document, (value) => `sealed:${value}`);
    expect(sealed.alerts?.channels?.slack).toEqual({ type: 'slack', url: `sealed:${SLACK_URL}` });
    expect(sealed.alerts?.channels?.pager).toMatchObject({ routing_key: `sealed:${CHANNELS.pager.routing_key}` });
    expect(sealed.alerts?.channels?.mail).toMatchObject({ password: `sealed:${CHANNELS.mail.password}`, from: CHANNELS.mail.from });
    // What the API showed, written back, stands for what is stored; a masked value that stands for nothing is refused.
    expect(restoreMaskedDocument(configFileSchema.parse(masked), document)).toEqual(document);
    expect(() => restoreMaskedDocument(configFileSchema.parse(masked), {})).toThrow(/alerts\.channels\.\w+\.(url|routing_key|password) is a masked secret/);
  });
});
