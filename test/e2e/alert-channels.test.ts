import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { until } from '../helpers/alert-receiver.js';

// The chat, paging and email channels end to end: real requests through a gateway open (and heal) a circuit
// breaker or cross a budget, and receivers started here, answering as Slack, Microsoft Teams, Discord and
// PagerDuty answer, get each service's own format; an SMTP server (smtp-server, with STARTTLS and AUTH) gets
// the email.

const hi = [{ role: 'user' as const, content: 'hi' }];
/** A model name that puts HTML into the alert's summary and subject (model names are printable ASCII). */
/** A model name a client makes up: HTML for the email, a Markdown link for Teams and Discord (phishing in the ops channel). */
const HOSTILE_MODEL = '<script>alert(1)</script>[urgent: log in](https://evil.example)';
/** Markdown shown as plain text: every ASCII punctuation character backslash-escaped. */
const md = (text: string): string => text.replace(/[!-/:-@[-`{-~]/g, '\\$&');
const SLACK_TOKEN = 'T0000/B0000/slacksecrettoken0123456789';
const DISCORD_TOKEN = '1234567890/discord-secret-token-abcdefghij';
const TEAMS_TOKEN = 'teams-secret-token-0123456789abcdef';
const ROUTING_KEY = 'R0UT1NGKEYe2e000000000000000000000';
const SMTP_USER = 'tollgate-alerts';
const SMTP_PASSWORD = 'smtp-e2e-password-0123456789';
/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

interface Hit {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  status: number;
}

interface Receiver {
  url: string;
  hits: Hit[];
  close(): Promise<void>;
}

/** An HTTP receiver on loopback: `answer` writes the reply to the n-th request (from 1) and says its status. */
async function startReceiver(path: string, answer: (res: ServerResponse, hit: Omit<Hit, 'status'>, n: number) => number): Promise<Receiver> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const hit = { at: Date.now(), path: req.url ?? '', headers: req.headers, body, json: JSON.parse(body) };
      const status = answer(res, hit, hits.length + 1);
      hits.push({ ...hit, status });
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    hits,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** Slack's incoming webhooks answer 200 with the text `ok`. */
const slackAnswer = (res: ServerResponse): number => {
  res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  return 200;
};
/** Teams Workflows webhooks answer 202 Accepted with no body. */
const teamsAnswer = (res: ServerResponse): number => {
  res.writeHead(202).end();
  return 202;
};
/** Discord answers an executed webhook with 204; the first request here is rate limited (429, retry_after in seconds). */
const RETRY_AFTER_S = 0.4;
const discordAnswer = (res: ServerResponse, _hit: unknown, n: number): number => {
  if (n === 1) {
    res.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'You are being rate limited.', retry_after: RETRY_AFTER_S, global: false }));
    return 429;
  }
  res.writeHead(204).end();
  return 204;
};
/** PagerDuty's Events API v2 answers 202 with the dedup key. */
const pagerDutyAnswer = (res: ServerResponse, hit: { json: any }): number => {
  res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'success', message: 'Event processed', dedup_key: hit.json.dedup_key }));
  return 202;
};

interface Mail {
  parsed: ParsedMail;
  secure: boolean;
  user: unknown;
  from: string | undefined;
  to: string[];
}

interface SmtpReceiver {
  port: number;
  mails: Mail[];
  /** Every RCPT TO the server was sent, accepted or not. */
  rcpts: string[];
  close(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1 made with the openssl command, in a temporary folder. */
function selfSignedCert(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-smtp-cert-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * An SMTP server with STARTTLS (a self-signed certificate) and AUTH (the one user and password). AUTH is refused
 * before STARTTLS (smtp-server's default), so a mail received proves both. `nobody@` is refused with 550 every
 * time; `later@` with 451 the first time.
 */
async function startSmtp(): Promise<SmtpReceiver> {
  const mails: Mail[] = [];
  const rcpts: string[] = [];
  const { key, cert } = selfSignedCert();
  const server = new SMTPServer({
    key,
    cert,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) return callback(null, { user: SMTP_USER });
      return callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      rcpts.push(address.address);
      if (address.address.startsWith('nobody@')) return callback(Object.assign(new Error('No such user here'), { responseCode: 550 }));
      if (address.address.startsWith('later@') && rcpts.filter((a) => a === address.address).length === 1) {
        return callback(Object.assign(new Error('Greylisted, try again later'), { responseCode: 451 }));
      }
      return callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        simpleParser(Buffer.concat(chunks))
          .then((parsed) => {
            mails.push({ parsed, secure: session.secure, user: session.user, from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined, to: session.envelope.rcptTo.map((r) => r.address) });
            callback();
          })
          .catch(callback);
      });
    },
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    port: (server.server.address() as AddressInfo).port,
    mails,
    rcpts,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

const fastRetry = { initial_delay_ms: 50, max_delay_ms: 5_000 };

function emailChannel(smtp: SmtpReceiver, fields: Record<string, unknown> = {}) {
  return {
    type: 'email' as const,
    host: '127.0.0.1',
    port: smtp.port,
    starttls: 'required' as const,
    username: SMTP_USER,
    password: SMTP_PASSWORD,
    from: 'Tollgate <alerts@example.com>',
    to: ['ops@example.com'],
    tls_reject_unauthorized: false,
    timeout_ms: 5_000,
    retry: fastRetry,
    ...fields,
  };
}

let upstream: ScriptedUpstream;
let smtp: SmtpReceiver;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  smtp = await startSmtp();
});
afterAll(async () => {
  await upstream?.close();
  await smtp?.close();
});

describe('a breaker alert to Slack, Teams, Discord, PagerDuty and email', () => {
  let slack: Receiver;
  let teams: Receiver;
  let discord: Receiver;
  let pagerduty: Receiver;
  let tg: RunningGateway;

  beforeAll(async () => {
    slack = await startReceiver(`/services/${SLACK_TOKEN}`, slackAnswer);
    teams = await startReceiver(`/webhookb2/${TEAMS_TOKEN}`, teamsAnswer);
    discord = await startReceiver(`/api/webhooks/${DISCORD_TOKEN}`, discordAnswer);
    pagerduty = await startReceiver('/v2/enqueue', pagerDutyAnswer);
    const config: ConfigInput = {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 300 } } },
      alerts: {
        channels: {
          // The secrets come from the environment, as the config file would have them.
          slack: { type: 'slack', url: 'env:SLACK_WEBHOOK_URL', retry: fastRetry },
          teams: { type: 'teams', url: teams.url, retry: fastRetry },
          discord: { type: 'discord', url: discord.url, retry: fastRetry },
          pager: { type: 'pagerduty', routing_key: 'env:PD_ROUTING_KEY', url: pagerduty.url, source: 'gw-e2e.example.com', retry: fastRetry },
          mail: emailChannel(smtp, { password: 'env:SMTP_PASSWORD', subject_prefix: '[tollgate-e2e]' }),
        },
        rules: [{ name: 'breaker', kind: 'breaker_opened', severity: 'critical', cooldown_ms: 0 }],
      },
    };
    tg = await startGateway(config, { SLACK_WEBHOOK_URL: slack.url, PD_ROUTING_KEY: ROUTING_KEY, SMTP_PASSWORD });
  });
  afterAll(async () => {
    upstream.reset();
    await tg?.stop();
    await Promise.all([slack, teams, discord, pagerduty].map((r) => r?.close()));
  });

  it('each receiver gets its own format for the firing and the resolved notification', async () => {
    upstream.setMode({ kind: 'error', status: 500 });
    for (let i = 0; i < 2; i++) {
      const error = await tg.client.chat.completions.create({ model: `openai/${HOSTILE_MODEL}`, messages: hi }).catch((err: unknown) => err);
      expect(error).toMatchObject({ status: 500 });
    }
    const [open] = await until('the open alert', () => tg.gateway.alerts.open().length > 0 && tg.gateway.alerts.open());
    const alertId = open!.id;
    const summary = open!.summary;
    expect(summary).toContain(HOSTILE_MODEL);
    const mailsBefore = smtp.mails.length;

    // Firing: every channel once (Discord after its 429).
    await until('the firing notifications', () => slack.hits.length >= 1 && teams.hits.length >= 1 && discord.hits.length >= 2 && pagerduty.hits.length >= 1 && smtp.mails.length > mailsBefore);

    // Healed: after the breaker's cool-down a trial call succeeds, the breaker closes, the alert resolves.
    upstream.setMode({ kind: 'ok' });
    await new Promise((done) => setTimeout(done, 350));
    await tg.client.chat.completions.create({ model: `openai/${HOSTILE_MODEL}`, messages: hi });
    await until('the resolved notifications', () => slack.hits.length >= 2 && teams.hits.length >= 2 && discord.hits.length >= 3 && pagerduty.hits.length >= 2 && smtp.mails.length > mailsBefore + 1);
    // A receiver records its hit before the gateway has read the answer and logged the delivery: wait for the queue.
    await until('the delivery queue to drain', () => tg.gateway.alerts.queued() === 0);

    // Every HTTP channel: JSON, the user agent, none of the webhook's signing headers.
    for (const hit of [slack, teams, discord, pagerduty].flatMap((r) => r.hits)) {
      expect(hit.headers['content-type']).toBe('application/json');
      expect(hit.headers['user-agent']).toMatch(/tollgate/i);
      expect(hit.headers['x-tollgate-signature']).toBeUndefined();
      expect(hit.headers['x-tollgate-timestamp']).toBeUndefined();
    }

    // Slack: text + Block Kit, alert text escaped for mrkdwn, at the URL read from env:SLACK_WEBHOOK_URL.
    const [slackFiring, slackResolved] = slack.hits;
    expect(slackFiring!.path).toBe(`/services/${SLACK_TOKEN}`);
    expect(slackFiring!.json.text).toMatch(/^:rotating_light: FIRING critical: breaker: circuit breaker opened for openai\/&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    expect(slackFiring!.json.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'FIRING critical: breaker', emoji: true } });
    expect(slackFiring!.json.blocks[1]).toMatchObject({ type: 'section', text: { type: 'mrkdwn' } });
    expect(slackFiring!.json.blocks.some((b: any) => b.type === 'section' && b.fields?.some((f: any) => f.text === '*Provider*\nopenai'))).toBe(true);
    expect(slackFiring!.json.blocks.at(-1)).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: `tollgate · alert ${alertId}` }] });
    expect(slackFiring!.body).not.toContain('<script>');
    expect(slackResolved!.json.text).toMatch(/^:white_check_mark: RESOLVED critical: breaker/);

    // Teams: a message with one Adaptive Card attachment.
    const [teamsFiring, teamsResolved] = teams.hits;
    expect(teamsFiring!.json).toMatchObject({ type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', content: { type: 'AdaptiveCard', version: '1.4' } }] });
    const card = teamsFiring!.json.attachments[0].content;
    // Teams renders TextBlocks and facts as Markdown: the client's model name is escaped, plain text and no link.
    expect(card.body[0]).toMatchObject({ type: 'TextBlock', text: 'FIRING critical\\: breaker', color: 'attention' });
    expect(card.body[1]).toMatchObject({ type: 'TextBlock', text: md(summary) });
    expect(card.body[2].facts).toEqual(expect.arrayContaining([{ title: 'Provider', value: 'openai' }, { title: 'Model', value: md(HOSTILE_MODEL) }]));
    expect(teamsFiring!.body).not.toContain('[urgent: log in](');
    expect(teamsResolved!.json.attachments[0].content.body[0]).toMatchObject({ text: 'RESOLVED critical\\: breaker', color: 'good' });

    // Discord: content + an embed coloured by severity, mentions off; the 429 waited out for retry_after.
    const [rateLimited, discordFiring, discordResolved] = discord.hits;
    expect(rateLimited!.status).toBe(429);
    expect(discordFiring!.body).toBe(rateLimited!.body);
    expect(discordFiring!.at - rateLimited!.at).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000 - 20);
    expect(discordFiring!.json).toMatchObject({
      content: '**FIRING** critical\\: breaker',
      allowed_mentions: { parse: [] },
      embeds: [{ title: 'FIRING critical\\: breaker', description: md(summary), color: 0xed4245, timestamp: open!.since, footer: { text: `tollgate · alert ${alertId}` } }],
    });
    expect(discordFiring!.json.embeds[0].fields).toContainEqual({ name: 'Severity', value: 'critical', inline: true });
    // Discord's embed is Markdown too: the model name is escaped, no masked link and no URL to link or unfurl.
    expect(discordFiring!.json.embeds[0].fields).toContainEqual({ name: 'Model', value: md(HOSTILE_MODEL), inline: true });
    expect(discordFiring!.body).not.toContain('[urgent: log in](');
    expect(discordFiring!.body).not.toContain('https://');
    expect(discordResolved!.json.embeds[0]).toMatchObject({ title: 'RESOLVED critical\\: breaker', color: 0x57f287 });
    const discordLog = tg.gateway.alerts.deliveries().filter((line) => line.channel === 'discord').reverse();
    expect(discordLog.map((line) => [line.status, line.attempt, line.outcome, line.httpStatus, line.channelType])).toEqual([
      ['firing', 1, 'retrying', 429, 'discord'],
      ['firing', 2, 'delivered', 204, 'discord'],
      ['resolved', 1, 'delivered', 204, 'discord'],
    ]);
    // The log line is stamped a moment after the next attempt was scheduled: a few ms of slack.
    expect(Date.parse(discordLog[0]!.nextAt!) - Date.parse(discordLog[0]!.at)).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000 - 10);

    // PagerDuty: a trigger keyed by the alert id, then a resolve with the same key and nothing else.
    const [trigger, resolve] = pagerduty.hits;
    expect(trigger!.json).toEqual({
      routing_key: ROUTING_KEY,
      event_action: 'trigger',
      dedup_key: alertId,
      client: 'tollgate',
      payload: {
        summary,
        source: 'gw-e2e.example.com',
        severity: 'critical',
        timestamp: open!.since,
        component: expect.stringMatching(/^openai\/<script>alert\(1\)<\/script>\[urgent: log in\]\(https:\/\/evil\.example\)#/),
        group: 'breaker',
        class: 'breaker.opened',
        custom_details: expect.objectContaining({ rule: 'breaker', event: 'breaker.opened', subject: expect.objectContaining({ provider: 'openai', model: HOSTILE_MODEL }) }),
      },
    });
    expect(resolve!.json).toEqual({ routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: alertId });

    // Email: over STARTTLS, authenticated, a text and an HTML part, the HTML escaped.
    const [mailFiring, mailResolved] = smtp.mails.slice(mailsBefore);
    expect(mailFiring).toMatchObject({ secure: true, user: SMTP_USER, from: 'alerts@example.com', to: ['ops@example.com'] });
    expect(mailFiring!.parsed.subject).toBe(`[tollgate-e2e] FIRING critical: ${summary}`);
    expect(mailFiring!.parsed.from?.value).toEqual([{ name: 'Tollgate', address: 'alerts@example.com' }]);
    expect(mailFiring!.parsed.text).toContain(summary);
    expect(mailFiring!.parsed.text).toContain(alertId);
    const html = mailFiring!.parsed.html;
    expect(html).toEqual(expect.any(String));
    expect(html).toContain('circuit breaker opened for openai/&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
    expect(mailResolved!.parsed.subject).toMatch(/^\[tollgate-e2e\] RESOLVED critical: /);

    // The delivery log: every channel's attempts, with its type.
    const types = new Set(tg.gateway.alerts.deliveries().map((line) => `${line.channel}:${line.channelType}`));
    expect(types).toEqual(new Set(['slack:slack', 'teams:teams', 'discord:discord', 'pager:pagerduty', 'mail:email']));
  });
});

describe('email refusals and test notifications', () => {
  let tg: RunningGateway;
  const { createKey, clientFor } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
      alerts: {
        channels: {
          refused: emailChannel(smtp, { to: ['nobody@example.com'] }),
          greylisted: emailChannel(smtp, { to: ['later@example.com'] }),
          badauth: emailChannel(smtp, { password: 'not-the-password' }),
          ok: emailChannel(smtp),
        },
        rules: [{ name: 'budget-half', kind: 'budget', thresholds: [50], channels: ['refused', 'greylisted'] }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
  });

  it('a 550 is final at the first attempt; a 451 is retried and then delivered', async () => {
    const rcptsBefore = smtp.rcpts.length;
    const { key } = await createKey({ name: 'mailed', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    await until('both channels settled', () => {
      const log = tg.gateway.alerts.deliveries();
      return log.some((l) => l.channel === 'refused' && l.outcome === 'failed') && log.some((l) => l.channel === 'greylisted' && l.outcome === 'delivered');
    });
    const log = tg.gateway.alerts.deliveries().reverse();
    expect(log.filter((l) => l.channel === 'refused').map((l) => [l.attempt, l.outcome, l.smtpStatus, l.channelType])).toEqual([[1, 'failed', 550, 'email']]);
    expect(log.find((l) => l.channel === 'refused')?.error).toMatch(/No such user here/);
    expect(log.filter((l) => l.channel === 'greylisted').map((l) => [l.attempt, l.outcome, l.smtpStatus])).toEqual([
      [1, 'retrying', 451],
      [2, 'delivered', null],
    ]);
    // The server saw nobody@ once (no retry) and later@ twice.
    const rcpts = smtp.rcpts.slice(rcptsBefore);
    expect(rcpts.filter((a) => a === 'nobody@example.com')).toHaveLength(1);
    expect(rcpts.filter((a) => a === 'later@example.com')).toHaveLength(2);
    const mail = smtp.mails.find((m) => m.to.includes('later@example.com'));
    expect(mail?.parsed.subject).toMatch(/^\[tollgate\] FIRING warning: key \S+ spent 50% of its budget/);
    expect(tg.gateway.alerts.queued()).toBe(0);
  });

  it('testChannel makes one logged attempt: delivered, refused (550, wrong password) or no such channel', async () => {
    const mailsBefore = smtp.mails.length;
    const delivered = await tg.gateway.alerts.testChannel('ok');
    expect(delivered).toMatchObject({ channel: 'ok', channelType: 'email', rule: 'test', status: 'firing', attempt: 1, outcome: 'delivered', error: null });
    expect(smtp.mails.length).toBe(mailsBefore + 1);
    const mail = smtp.mails.at(-1)!;
    expect(mail.parsed.subject).toMatch(/^\[tollgate\] FIRING info: This is a test notification from tollgate/);
    expect(mail.parsed.text).toMatch(/test: +true/);

    const refused = await tg.gateway.alerts.testChannel('refused');
    expect(refused).toMatchObject({ channel: 'refused', outcome: 'failed', attempt: 1, smtpStatus: 550 });
    const badAuth = await tg.gateway.alerts.testChannel('badauth');
    expect(badAuth).toMatchObject({ channel: 'badauth', outcome: 'failed', smtpStatus: 535, error: expect.stringMatching(/EAUTH/) });
    const missing = await tg.gateway.alerts.testChannel('nope');
    expect(missing).toMatchObject({ channel: 'nope', channelType: null, outcome: 'failed', attempt: 0, error: 'channel_not_found' });
    expect(smtp.mails.length).toBe(mailsBefore + 1);

    await until('the log lines', () => tg.gateway.alerts.deliveries().filter((l) => l.rule === 'test').length === 4);
    expect(tg.gateway.alerts.deliveries().filter((l) => l.rule === 'test').map((l) => [l.channel, l.outcome])).toEqual([
      ['nope', 'failed'],
      ['badauth', 'failed'],
      ['refused', 'failed'],
      ['ok', 'delivered'],
    ]);
    // Nothing was queued or retried.
    await new Promise((done) => setTimeout(done, 200));
    expect(tg.gateway.alerts.queued()).toBe(0);
    expect(tg.gateway.alerts.deliveries().filter((l) => l.rule === 'test')).toHaveLength(4);
  });
});

describe('an email to several recipients, one of them deferred', () => {
  let tg: RunningGateway;
  const { createKey, clientFor } = gatewayApi(() => tg.url);
  /** Greylisted (451) the first time, like later@ above; ops@ takes every message. */
  const DEFERRED = 'later@mixed.example.com';

  beforeAll(async () => {
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
      alerts: {
        channels: { mixed: emailChannel(smtp, { to: ['ops@example.com', DEFERRED] }) },
        rules: [{ name: 'budget-half', kind: 'budget', thresholds: [50] }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
  });

  it('is retried to the deferred recipient only, so every recipient gets it once', async () => {
    const mailsBefore = smtp.mails.length;
    const { key } = await createKey({ name: 'mixed', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    await until('the deferred recipient got it', () => smtp.mails.slice(mailsBefore).some((m) => m.to.includes(DEFERRED)));
    await until('the queue is empty', () => tg.gateway.alerts.queued() === 0);
    // The SMTP server has the message as soon as its DATA ends; the gateway logs the delivery when the server's 250
    // reaches it, a moment later (on a busy machine the read below came first).
    await until('the retry is logged', () => tg.gateway.alerts.deliveries().filter((l) => l.channel === 'mixed').length >= 2);
    expect(smtp.mails.slice(mailsBefore).map((m) => m.to)).toEqual([['ops@example.com'], [DEFERRED]]);
    const log = tg.gateway.alerts.deliveries().reverse().filter((l) => l.channel === 'mixed');
    expect(log.map((l) => [l.attempt, l.outcome, l.smtpStatus])).toEqual([
      [1, 'retrying', 451],
      [2, 'delivered', null],
    ]);
    expect(log[0]?.error).toMatch(/later@mixed\.example\.com/);
  });
});

const PD_RELAY_TOKEN = 'pd-relay-token-7Qw2';

describe('channel secrets set through the API', () => {
  let tg: RunningGateway;
  let slack: Receiver;
  let pagerduty: Receiver;
  const { api } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    slack = await startReceiver(`/services/${SLACK_TOKEN}`, slackAnswer);
    // A PagerDuty endpoint of the operator's own (a relay) that takes its credential in the query, as webhooks do.
    pagerduty = await startReceiver(`/v2/enqueue?token=${PD_RELAY_TOKEN}`, pagerDutyAnswer);
    tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
  });
  afterAll(async () => {
    await tg?.stop();
    await slack?.close();
    await pagerduty?.close();
  });

  it('are never shown, survive a read-and-write-back, and are what deliveries use', async () => {
    const document = {
      alerts: {
        channels: {
          slack: { type: 'slack', url: slack.url },
          pager: { type: 'pagerduty', routing_key: ROUTING_KEY, url: pagerduty.url },
          mail: emailChannel(smtp),
        },
        rules: [{ name: 'breaker', kind: 'breaker_opened' }],
      },
    };
    const put = await api('PUT', '/api/config', document);
    expect(put.status).toBe(200);
    const secrets = [SLACK_TOKEN, slack.url, ROUTING_KEY, SMTP_PASSWORD, PD_RELAY_TOKEN];
    const shown = [JSON.stringify(put.body)];
    for (const path of ['/api/config', '/api/config?layer=api', '/api/audit', '/api/alerts', '/api/alerts/channels/pager']) {
      const read = await api('GET', path);
      expect(read.status).toBe(200);
      shown.push(JSON.stringify(read.body));
    }
    for (const text of shown) for (const secret of secrets) expect(text).not.toContain(secret);
    const layer = (await api('GET', '/api/config?layer=api')).body;
    expect(layer.alerts.channels.slack.url).toMatch(/^\*{4}/);
    expect(layer.alerts.channels.pager.routing_key).toMatch(/^\*{4}/);
    expect(layer.alerts.channels.mail.password).toMatch(/^\*{4}/);

    // What was read, written back as it is, keeps the real secrets.
    expect((await api('PUT', '/api/config', layer)).status).toBe(200);
    expect(await tg.gateway.alerts.testChannel('slack')).toMatchObject({ outcome: 'delivered', httpStatus: 200 });
    expect(slack.hits.at(-1)?.path).toBe(`/services/${SLACK_TOKEN}`);
    expect(await tg.gateway.alerts.testChannel('pager')).toMatchObject({ outcome: 'delivered', httpStatus: 202 });
    expect(pagerduty.hits.at(-1)?.json).toMatchObject({ routing_key: ROUTING_KEY, event_action: 'trigger', payload: { severity: 'info' } });
    expect(pagerduty.hits.at(-1)?.path).toBe(`/v2/enqueue?token=${PD_RELAY_TOKEN}`);
    expect(await tg.gateway.alerts.testChannel('mail')).toMatchObject({ outcome: 'delivered' });

    // A masked value that stands for nothing stored is refused, naming the field.
    const wrong = structuredClone(layer);
    wrong.alerts.channels.slack.url = '****zzzz';
    const refused = await api('PUT', '/api/config', wrong);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('alerts.channels.slack.url');
  });
});
