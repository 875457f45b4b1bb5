import type { Dispatcher } from 'undici';
import type { NetworkSettings } from '../core/config.js';
import { createOutboundDispatcher } from './outbound-dispatcher.js';
import { trustedCertificates } from './trusted-ca.js';

/** What every outbound client reads at the moment it calls: the dispatcher, and the CA list for non-HTTP TLS (SMTP). */
export interface Outbound {
  readonly dispatcher: Dispatcher;
  /** The trusted certificates when `ca_file` adds some (defaults included); undefined for Node's defaults. */
  readonly ca: readonly string[] | undefined;
}

/** No proxy and Node's default CAs: what tollgate does when nothing is configured. */
export const DIRECT: NetworkSettings = { httpProxy: null, httpsProxy: null, noProxy: '', caFile: null, extraCa: null };

function same(a: NetworkSettings, b: NetworkSettings): boolean {
  return a.httpProxy === b.httpProxy && a.httpsProxy === b.httpsProxy && a.noProxy === b.noProxy && a.extraCa === b.extraCa;
}

/**
 * The gateway's one way out: upstream providers, the OTLP collector, alert webhooks and MCP servers all dispatch
 * through `dispatcher`, read per call. A config change to the network settings builds a new dispatcher and swaps
 * it in, so the next call uses it; calls already running finish on the old one, which then closes.
 */
export class OutboundNetwork implements Outbound {
  private current: Dispatcher;
  private settings: NetworkSettings;
  private trusted: readonly string[] | undefined;
  private readonly retiring = new Set<Promise<void>>();

  constructor(settings: NetworkSettings = DIRECT) {
    this.settings = settings;
    this.trusted = settings.extraCa === null ? undefined : trustedCertificates(settings.extraCa);
    this.current = createOutboundDispatcher(settings, this.trusted);
  }

  get dispatcher(): Dispatcher {
    return this.current;
  }

  get ca(): readonly string[] | undefined {
    return this.trusted;
  }

  /** Uses these settings from the next call on; says whether anything changed. */
  apply(settings: NetworkSettings): boolean {
    if (same(settings, this.settings)) return false;
    const previous = this.current;
    this.settings = settings;
    this.trusted = settings.extraCa === null ? undefined : trustedCertificates(settings.extraCa);
    this.current = createOutboundDispatcher(settings, this.trusted);
    // close() lets requests under way (a long stream) finish, then ends the old pools' connections.
    const retired: Promise<void> = previous.close().catch(() => undefined).finally(() => this.retiring.delete(retired));
    this.retiring.add(retired);
    return true;
  }

  /** Closes the current dispatcher and waits for retired ones: after their calls ended, no connection is left. */
  async close(): Promise<void> {
    await Promise.all([this.current.close().catch(() => undefined), ...this.retiring]);
  }
}
