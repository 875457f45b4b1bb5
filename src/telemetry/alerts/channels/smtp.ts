import type { NodemailerError, SMTPTransportOptions, Transporter } from 'nodemailer';
import type { EmailChannelRuntime } from '../../../core/config.js';
import type { EmailMessage } from './email.js';

/** How one email attempt ended. */
export interface SmtpResult {
  /** The SMTP reply code of a refusal (550, 451, ...), when the server gave one. */
  smtpStatus: number | null;
  error: string | null;
  /** The server refused the message for good (a 5xx reply): another attempt would be refused too. */
  permanent: boolean;
  /** Recipients refused for good (a 5xx reply to RCPT TO) while others took the message. */
  rejected: string[];
  /**
   * Recipients refused for now (a 4xx reply to RCPT TO: greylisting, a full mailbox, too many recipients) while
   * others took the message: the ones to send it again to. Empty unless the message went out.
   */
  deferred: string[];
}

interface Cached {
  /** The channel's settings the transport was made for: a change makes a new transport. */
  key: string;
  /** The CA list it trusts (compared by identity: the network settings make a new list when they change). */
  ca: readonly string[] | undefined;
  transport: Transporter;
}

/**
 * Sends email for the email channels: one nodemailer SMTP transport per channel, made from the channel's resolved
 * settings, reused while they stay the same, closed when they change or the queue closes. `timeout_ms` bounds
 * each step (connecting, the greeting, every reply).
 */
export class SmtpSender {
  private readonly transports = new Map<string, Cached>();

  /**
   * `trustedCa` gives the CA list of settings.network.ca_file (defaults included), or undefined for Node's
   * defaults. SMTP is not proxied: HTTP proxies tunnel web ports, and mail relays sit inside the network.
   */
  constructor(private readonly trustedCa: () => readonly string[] | undefined) {}

  /** Sends `message` to `to` (default: every address of the channel's `to`). */
  async send(channel: EmailChannelRuntime, message: EmailMessage, signal: AbortSignal, to: readonly string[] = channel.to): Promise<SmtpResult> {
    const transport = await this.transportFor(channel);
    const sending = transport.sendMail({ from: channel.from, to: [...to], subject: message.subject, text: message.text, html: message.html });
    // nodemailer cannot cut a send short: an abort (shutdown) stops waiting for it, the socket timeout ends it.
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    try {
      const info = await Promise.race([sending, aborted]);
      return partialResult(info);
    } catch (err) {
      void sending.catch(() => undefined);
      return smtpFailure(err);
    }
  }

  /** Closes the transports of the channels `keep` says no to (all of them without `keep`). */
  close(keep: (name: string) => boolean = () => false): void {
    for (const [name, cached] of this.transports) {
      if (keep(name)) continue;
      cached.transport.close();
      this.transports.delete(name);
    }
  }

  private async transportFor(channel: EmailChannelRuntime): Promise<Transporter> {
    // Loaded with the first email, not at start: nodemailer is some 40 modules most gateways never use. Awaited
    // first, so what follows runs in one turn and two sends at once cannot both make a transport for a channel.
    const { createTransport } = await import('nodemailer');
    const options: SMTPTransportOptions = {
      host: channel.host,
      port: channel.port,
      secure: channel.secure,
      requireTLS: !channel.secure && channel.starttls === 'required',
      ignoreTLS: !channel.secure && channel.starttls === 'off',
      ...(channel.username !== null && channel.password !== null ? { auth: { user: channel.username, pass: channel.password } } : {}),
      tls: { rejectUnauthorized: channel.tlsRejectUnauthorized },
      connectionTimeout: channel.timeoutMs,
      greetingTimeout: channel.timeoutMs,
      socketTimeout: channel.timeoutMs,
      dnsTimeout: channel.timeoutMs,
      name: 'tollgate',
    };
    const key = JSON.stringify(options);
    const ca = this.trustedCa();
    const cached = this.transports.get(channel.name);
    if (cached?.key === key && cached.ca === ca) return cached.transport;
    cached?.transport.close();
    const transport = createTransport(ca ? { ...options, tls: { ...options.tls, ca: [...ca] } } : options);
    this.transports.set(channel.name, { key, ca, transport });
    return transport;
  }
}

/**
 * A message the server took, for some recipients at least. One refused with a 4xx reply is not refused for good
 * (RFC 5321: try again later), so it is reported as a failed attempt naming it, with its reply code: the queue
 * sends the message again to it alone, and the recipients who have it do not get it twice.
 */
export function partialResult(info: { rejected?: unknown[]; rejectedErrors?: unknown[] }): SmtpResult {
  const deferred: Array<{ recipient: string; responseCode: number; line: string }> = [];
  for (const err of info.rejectedErrors ?? []) {
    const e = (err ?? {}) as NodemailerError & { recipient?: unknown };
    if (typeof e.recipient === 'string' && typeof e.responseCode === 'number' && e.responseCode >= 400 && e.responseCode < 500) {
      deferred.push({ recipient: e.recipient, responseCode: e.responseCode, line: String(e.response ?? e.message).split('\n')[0] ?? '' });
    }
  }
  const rejected = (info.rejected ?? []).map(String).filter((address) => !deferred.some((d) => d.recipient === address));
  const first = deferred[0];
  if (!first) return { smtpStatus: null, error: null, permanent: false, rejected, deferred: [] };
  const error = `deferred for ${deferred.map((d) => d.recipient).join(', ')}: ${first.line}`.slice(0, 200);
  return { smtpStatus: first.responseCode, error, permanent: false, rejected, deferred: deferred.map((d) => d.recipient) };
}

/** An error from nodemailer as a result: 5xx replies (but 503) are final; 4xx replies and connection errors are not. */
export function smtpFailure(err: unknown): SmtpResult {
  const e = (err ?? {}) as NodemailerError;
  const smtpStatus = typeof e.responseCode === 'number' ? e.responseCode : null;
  const permanent = typeof e.permanent === 'boolean' ? e.permanent : smtpStatus !== null && smtpStatus >= 500 && smtpStatus < 600 && smtpStatus !== 503;
  const message = err instanceof Error ? err.message : String(err);
  const code = typeof e.code === 'string' ? e.code : null;
  const line = (message.split('\n')[0] ?? '').slice(0, 200) || 'SMTP error';
  return { smtpStatus, error: code && !line.startsWith(code) ? `${code}: ${line}` : line, permanent, rejected: [], deferred: [] };
}
