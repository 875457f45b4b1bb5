import type { IncomingHttpHeaders } from 'node:http';
import { errors as undiciErrors, type Dispatcher } from 'undici';
import type { Outbound } from '../network/outbound-network.js';
import { isProxyHopError } from '../network/outbound-dispatcher.js';
import { GatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';
import type { UpstreamRequest, UpstreamTimeouts } from '../core/provider.js';
import { gatewayError, type ErrorCode } from '../core/errors.js';

/** Receives one upstream answer. After `onEnd` or `onError`, nothing more is called. */
export interface UpstreamResponseHandler {
  onStart(status: number, headers: IncomingHttpHeaders): void;
  onData(chunk: Buffer): void;
  onEnd(): void;
  onError(error: GatewayError): void;
}

/** A running upstream call: the client side's levers on it. */
export interface UpstreamCall {
  /** Stops the call and closes its connection; the handler's `onError` gets a `client_cancelled` error. */
  abort(): void;
  /** Stops reading the body (backpressure) until `resume`. */
  pause(): void;
  resume(): void;
}

const cancelled = new Error('the client closed the request');

/** Longest URL path an error message shows (a model name is part of some paths). */
const SHOWN_PATH_CHARS = 200;

function shownUrl(url: URL): string {
  const path = url.pathname.length > SHOWN_PATH_CHARS ? `${url.pathname.slice(0, SHOWN_PATH_CHARS)}…` : url.pathname;
  return url.origin + path;
}

interface SplitUrl {
  origin: string;
  path: string;
  /** The URL as an error message may show it: no query (Gemini's `?key=`, signatures) and no user info. */
  shown: string;
}

const splitUrls = new Map<string, SplitUrl>();

/** Upstream URLs repeat (one per provider and endpoint), so each is parsed once. */
function splitUrl(href: string): SplitUrl {
  let split = splitUrls.get(href);
  if (!split) {
    const url = new URL(href);
    split = { origin: url.origin, path: url.pathname + url.search, shown: shownUrl(url) };
    if (splitUrls.size > 10_000) splitUrls.clear();
    splitUrls.set(href, split);
  }
  return split;
}

/**
 * The one HTTP client for upstream calls: undici's dispatcher API on keep-alive pools. Callbacks rather than
 * fetch, web streams or Readable bodies: a gateway pays for those on every request, and the dispatch
 * controller gives abort and backpressure without an AbortSignal. The pools are the gateway's outbound
 * dispatcher (proxy and CAs as configured), read per call so a network change applies to the next one.
 */
export class UpstreamTransport {
  constructor(private readonly outbound: Outbound) {}

  /** The dispatcher the next call goes out through (adapters fetch their OAuth tokens over it too). */
  get dispatcher(): Dispatcher {
    return this.outbound.dispatcher;
  }

  /**
   * Starts a request. `firstByteMs` bounds the wait for response headers; `totalMs` bounds the whole
   * exchange, body included.
   */
  dispatch(upstream: UpstreamRequest, timeouts: UpstreamTimeouts, provider: string, handler: UpstreamResponseHandler): UpstreamCall {
    let controller: Dispatcher.DispatchController | null = null;
    let settled = false;
    let timedOut = false;
    let paused = false;
    /** Whether the upstream's answer had begun (its final status line arrived) when the call failed. */
    let answering = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      return true;
    };
    const fail = (err: unknown): void => {
      if (finish()) handler.onError(transportError(err, timedOut, timeouts, provider, url.shown, answering));
    };
    const timer = setTimeout(() => {
      timedOut = true;
      controller?.abort(new Error('total timeout'));
      fail(new Error('total timeout'));
    }, timeouts.totalMs);
    const url = splitUrl(upstream.url);
    try {
      this.outbound.dispatcher.dispatch(
      {
        origin: url.origin,
        path: url.path,
        method: upstream.method,
        headers: upstream.headers,
        body: upstream.body ?? null,
        headersTimeout: timeouts.firstByteMs,
        // Silence inside a body longer than this is a stall (undici's body timeout restarts with every chunk).
        bodyTimeout: Math.min(timeouts.idleMs, timeouts.totalMs),
      },
      {
        onRequestStart(ctl) {
          controller = ctl;
          if (settled) ctl.abort(cancelled);
          else if (paused) ctl.pause();
        },
        onResponseStart(_ctl, status, headers) {
          // 1xx informational answers are not the response.
          if (status < 200 || settled) return;
          answering = true;
          guard(() => handler.onStart(status, headers));
        },
        onResponseData(_ctl, chunk) {
          if (!settled) guard(() => handler.onData(chunk));
        },
        onResponseEnd() {
          if (finish()) guard(() => handler.onEnd());
        },
        onResponseError(_ctl, err) {
          fail(err);
        },
      },
      );
    } catch (err) {
      // e.g. a closed agent during shutdown: report it like any transport failure, asynchronously.
      queueMicrotask(() => fail(err));
    }
    // A handler that throws ends the call with that error instead of leaving it half done.
    function guard(work: () => void): void {
      try {
        work();
      } catch (err) {
        controller?.abort(err instanceof Error ? err : new Error(String(err)));
        if (finish()) handler.onError(err instanceof GatewayError ? err : transportError(err, timedOut, timeouts, provider, url.shown, answering));
      }
    }
    return {
      abort() {
        if (!finish()) return;
        controller?.abort(cancelled);
        handler.onError(
          gatewayError('client_cancelled', 'The client closed the request.'),
        );
      },
      pause() {
        paused = true;
        controller?.pause();
      },
      resume() {
        paused = false;
        controller?.resume();
      },
    };
  }

}

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE']);

/** What a connection error code means, in words a newcomer can act on. */
const CODE_HINTS: Record<string, string> = {
  ECONNREFUSED: 'connection refused: nothing is listening there',
  ENOTFOUND: 'host not found in DNS',
  EAI_AGAIN: 'DNS lookup failed, try again later',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed while sending',
  UND_ERR_SOCKET: 'the upstream closed the connection',
};

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

/** OpenSSL and Node TLS failures: certificates, protocol versions, an https URL pointed at a plain-HTTP port. */
function isTlsCode(code: string): boolean {
  return code === 'EPROTO' || code.includes('CERT') || code.includes('SSL') || code.includes('TLS') || code.startsWith('UNABLE_TO_');
}

/** Certificate verification failures that mean no trusted CA signed the chain (rather than a wrong name or a date). */
const UNTRUSTED_ISSUER = /SELF_SIGNED|UNABLE_TO_(VERIFY|GET_ISSUER)|CERT_UNTRUSTED/;

/**
 * The error for a call that never reached the proxy (see isProxyHopError): it is down, its name does not resolve, or its
 * TLS (an https:// proxy) failed. The upstream was never asked, so its base_url is not the thing to check.
 */
function proxyHopError(err: unknown, provider: string, failed: (code: ErrorCode, say: (at: string, operator: boolean) => string) => GatewayError): GatewayError {
  const code = err instanceof undiciErrors.ConnectTimeoutError ? 'connect timeout' : errorCode(err);
  const own = err instanceof Error && err.message !== '' && err.message !== code ? quoteInput(err.message, 200) : null;
  const detail = (operator: boolean): string => {
    const why = code === undefined ? 'connection failed' : CODE_HINTS[code] ? `${code}: ${CODE_HINTS[code]}` : code;
    return operator && own !== null ? `${why}; ${own}` : why;
  };
  if (code !== undefined && isTlsCode(code)) {
    const caHint = UNTRUSTED_ISSUER.test(code) ? '; a private CA is trusted with settings.network.ca_file or NODE_EXTRA_CA_CERTS' : '';
    return failed(
      'upstream_connection_error',
      (at, operator) => `${provider}: TLS failed with the proxy for the upstream${at} (${detail(operator)}); check settings.network.proxy (or HTTPS_PROXY, HTTP_PROXY) and the proxy's certificate${caHint}.`,
    );
  }
  return failed(
    'upstream_unreachable',
    (at, operator) => `${provider}: Could not reach the proxy for the upstream${at} (${detail(operator)}); check settings.network.proxy (or HTTPS_PROXY, HTTP_PROXY, NO_PROXY).`,
  );
}

/**
 * The error for a failed upstream call. What the client reads says which provider failed and what went wrong, never
 * where the provider lives: its URL may be an operator's private endpoint or a proxy. The operator's log and the
 * request log read the same words with the URL tried (without its query or user info, see shownUrl) and the
 * underlying error's own message, as the error's `operatorMessage`.
 */
export function transportError(
  err: unknown,
  timedOut: boolean,
  timeouts: UpstreamTimeouts,
  provider: string,
  url: string | null = null,
  answering = false,
): GatewayError {
  if (err instanceof GatewayError) return err;
  if (timedOut) {
    return gatewayError('upstream_timeout', `${provider}: The upstream did not finish within ${timeouts.totalMs} ms.`);
  }
  if (err instanceof undiciErrors.HeadersTimeoutError) {
    return gatewayError('upstream_timeout', `${provider}: The upstream sent no response within ${timeouts.firstByteMs} ms.`);
  }
  if (err instanceof undiciErrors.BodyTimeoutError) {
    return gatewayError('upstream_timeout', `${provider}: The upstream stalled: nothing arrived for ${timeouts.idleMs} ms.`);
  }
  /** The error of `code` whose message `say` words twice: for the client, and with `at` the URL for the operator. */
  const failed = (code: ErrorCode, say: (at: string, operator: boolean) => string): GatewayError => {
    const message = say('', false);
    const operatorMessage = say(url === null ? '' : ` at ${url}`, true);
    return gatewayError(code, message, operatorMessage === message ? {} : { operatorMessage });
  };
  if (isProxyHopError(err)) return proxyHopError(err, provider, failed);
  if (err instanceof undiciErrors.ConnectTimeoutError) {
    return failed('upstream_unreachable', (at) => `${provider}: Could not connect to the upstream${at} (connect timeout); check providers.${provider}.base_url and the network.`);
  }
  // undici's tunnel through a proxy failed: the proxy answered CONNECT with something other than 200.
  if (err instanceof Error && err.message.startsWith('Proxy response')) {
    const reason = quoteInput(err.message, 200);
    return failed(
      'upstream_unreachable',
      (at) => `${provider}: The proxy refused the tunnel to the upstream${at} (${reason}); check settings.network (or HTTPS_PROXY, HTTP_PROXY, NO_PROXY).`,
    );
  }
  const code = errorCode(err);
  const unreachable = code !== undefined && UNREACHABLE_CODES.has(code) && code !== 'ECONNRESET' && code !== 'EPIPE';
  const errorCodeOf: ErrorCode = code && UNREACHABLE_CODES.has(code) ? 'upstream_unreachable' : 'upstream_connection_error';
  // The underlying error's own words (a TLS error's may name the host its certificate was for) are the operator's.
  const own = err instanceof Error && err.message !== '' && err.message !== code ? quoteInput(err.message, 200) : null;
  if (code !== undefined && isTlsCode(code)) {
    // A certificate no trusted CA signed is, inside a private network, usually the company's own CA.
    const caHint = UNTRUSTED_ISSUER.test(code) ? '; a private CA is trusted with settings.network.ca_file or NODE_EXTRA_CA_CERTS' : '';
    return failed(
      errorCodeOf,
      (at, operator) =>
        `${provider}: TLS failed with the upstream${at} (${code}${operator && own !== null ? `: ${own}` : ''}); check the URL's scheme and port and the server's certificate${caHint}.`,
    );
  }
  if (unreachable) {
    return failed(errorCodeOf, (at) => `${provider}: Could not reach the upstream${at} (${code}: ${CODE_HINTS[code] ?? 'connection failed'}); check providers.${provider}.base_url.`);
  }
  const hinted = code ? (CODE_HINTS[code] ? `${code}: ${CODE_HINTS[code]}` : code) : null;
  const detail = (operator: boolean): string => hinted ?? (operator && own !== null ? own : 'connection failed');
  // Once the answer had begun, the connection was reached: it broke during the answer (a stream cut mid-way).
  if (answering) {
    return failed(errorCodeOf, (at, operator) => `${provider}: The connection to the upstream${at} broke in the middle of its answer (${detail(operator)}).`);
  }
  return failed(errorCodeOf, (at, operator) => `${provider}: Could not reach the upstream${at} or the connection broke (${detail(operator)}).`);
}
