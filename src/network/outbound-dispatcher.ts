import { isIPv6 } from 'node:net';
import { Agent, EnvHttpProxyAgent, Pool, type buildConnector, type Dispatcher } from 'undici';
import type { NetworkSettings } from '../core/config.js';
import { quoteInput } from '../core/quote-input.js';

/** Connection options of every outbound pool: keep-alive (upstream calls are the hot path) and a connect bound. */
const KEEP_ALIVE = { keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 } as const;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A no_proxy list as undici's EnvHttpProxyAgent matches it. It compares an entry with the destination's host as the
 * URL writes it, brackets and all (`[::1]`), and reads `host:port` by the last colon: a bare IPv6 address, the way
 * NO_PROXY writes one (`localhost,127.0.0.1,::1`), would be taken for host `:` and port 1, and never match. So each
 * bare IPv6 address is given in the URL's own form, `[::1]` (a long form such as `0:0:0:0:0:0:0:1` shortened as
 * the URL shortens it); every other entry, `[::1]:8000` included, is left as written. undici also takes `*` for
 * every destination only when it is the whole list: `*` among other entries (`localhost,*`) is given as `*` alone.
 */
export function undiciNoProxy(noProxy: string): string {
  const entries = noProxy.split(/[,\s]+/).filter(Boolean);
  if (entries.includes('*')) return '*';
  return entries.map((entry) => (isIPv6(entry) ? new URL(`http://[${entry}]`).host : entry)).join(',');
}

/** Set on an error raised while connecting to the proxy itself, not to the destination behind it. */
const PROXY_HOP = Symbol('tollgate.proxy-hop');

/** Whether `err` (or its cause) was raised connecting to the proxy: it is down, its name does not resolve, or its TLS failed. */
export function isProxyHopError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if ((err as Record<symbol, unknown>)[PROXY_HOP] === true) return true;
  const cause = (err as { cause?: unknown }).cause;
  return typeof cause === 'object' && cause !== null && (cause as Record<symbol, unknown>)[PROXY_HOP] === true;
}

/**
 * What the proxy had to do with an outbound call that got no answer, in words for an error message; null when it had
 * nothing to do with it. It refused the tunnel (undici's `Proxy response (407) !== 200 when HTTP Tunneling`), or it
 * could not be reached (the connection error's code).
 */
export function proxyFailure(err: unknown): string | null {
  const message = err instanceof Error ? err.message : '';
  if (message.startsWith('Proxy response')) return `the proxy refused the tunnel (${quoteInput(message, 200)})`;
  if (!isProxyHopError(err)) return null;
  const code = (err as { code?: unknown }).code ?? (err as { cause?: { code?: unknown } }).cause?.code;
  return `the proxy could not be reached (${typeof code === 'string' ? code : 'connection failed'})`;
}

/**
 * The pool of connections to the proxy (undici's default, a Pool), whose connection errors are marked: a call that
 * fails because the proxy cannot be reached then says so, instead of blaming the provider's base_url.
 */
function proxyClient(origin: URL, options: object): Dispatcher {
  const { connect } = options as { connect?: buildConnector.connector };
  if (typeof connect !== 'function') return new Pool(origin, options);
  const marked: buildConnector.connector = (opts, callback) =>
    connect(opts, (err, socket) => {
      if (err !== null && typeof err === 'object' && !isProxyHopError(err)) Object.defineProperty(err, PROXY_HOP, { value: true });
      if (err !== null) callback(err, null);
      else callback(null, socket);
    });
  return new Pool(origin, { ...options, connect: marked });
}

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
    noProxy: undiciNoProxy(settings.noProxy),
    clientFactory: proxyClient,
  });
}
