import { Agent, EnvHttpProxyAgent, type Dispatcher } from 'undici';
import type { NetworkSettings } from '../core/config.js';

/** Connection options of every outbound pool: keep-alive (upstream calls are the hot path) and a connect bound. */
const KEEP_ALIVE = { keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 } as const;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The undici dispatcher for these settings. Without a proxy it is a plain keep-alive Agent, exactly what upstream
 * calls used before proxies existed: nothing is added per request. With one, an EnvHttpProxyAgent that tunnels
 * (HTTP CONNECT) to each destination not listed in `noProxy`. Every proxy setting is passed explicitly, so the
 * agent never reads process.env itself: the gateway's own resolved settings (file over environment) decide.
 * `ca`, when given, is the whole trusted list (defaults plus extras) for the destinations and for the proxy.
 */
export function createOutboundDispatcher(settings: NetworkSettings, ca: readonly string[] | undefined): Dispatcher {
  const tlsOptions = { timeout: CONNECT_TIMEOUT_MS, ...(ca ? { ca: [...ca] } : {}) };
  if (settings.httpProxy === null && settings.httpsProxy === null) return new Agent({ ...KEEP_ALIVE, connect: tlsOptions });
  return new EnvHttpProxyAgent({
    ...KEEP_ALIVE,
    // Direct connections (no proxy for the scheme, or a no_proxy destination).
    connect: tlsOptions,
    // TLS with the destination inside the tunnel, and with an https:// proxy itself.
    requestTls: tlsOptions,
    proxyTls: tlsOptions,
    httpProxy: settings.httpProxy ?? '',
    httpsProxy: settings.httpsProxy ?? '',
    noProxy: settings.noProxy,
  });
}
