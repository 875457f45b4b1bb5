import type { IncomingHttpHeaders } from 'node:http';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import type { UpstreamRequest, UpstreamTimeouts } from './contract.js';

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

const splitUrls = new Map<string, { origin: string; path: string }>();

/** Upstream URLs repeat (one per provider and endpoint), so each is parsed once. */
function splitUrl(href: string): { origin: string; path: string } {
  let split = splitUrls.get(href);
  if (!split) {
    const url = new URL(href);
    split = { origin: url.origin, path: url.pathname + url.search };
    if (splitUrls.size > 10_000) splitUrls.clear();
    splitUrls.set(href, split);
  }
  return split;
}

/**
 * The one HTTP client for upstream calls: undici's dispatcher API on keep-alive pools. Callbacks rather than
 * fetch, web streams or Readable bodies: a gateway pays for those on every request, and the dispatch
 * controller gives abort and backpressure without an AbortSignal.
 */
export class UpstreamTransport {
  private readonly agent = new Agent({
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
    connect: { timeout: 10_000 },
  });

  /**
   * Starts a request. `firstByteMs` bounds the wait for response headers; `totalMs` bounds the whole
   * exchange, body included.
   */
  dispatch(upstream: UpstreamRequest, timeouts: UpstreamTimeouts, provider: string, handler: UpstreamResponseHandler): UpstreamCall {
    let controller: Dispatcher.DispatchController | null = null;
    let settled = false;
    let timedOut = false;
    let paused = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      return true;
    };
    const fail = (err: unknown): void => {
      if (finish()) handler.onError(transportError(err, timedOut, timeouts, provider));
    };
    const timer = setTimeout(() => {
      timedOut = true;
      controller?.abort(new Error('total timeout'));
      fail(new Error('total timeout'));
    }, timeouts.totalMs);
    const url = splitUrl(upstream.url);
    try {
      this.agent.dispatch(
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
        if (finish()) handler.onError(err instanceof GatewayError ? err : transportError(err, timedOut, timeouts, provider));
      }
    }
    return {
      abort() {
        if (!finish()) return;
        controller?.abort(cancelled);
        handler.onError(
          new GatewayError({ status: 499, type: 'client_closed_request', code: 'client_cancelled', message: 'The client closed the request.' }),
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

  close(): Promise<void> {
    return this.agent.close();
  }
}

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE']);

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

export function transportError(err: unknown, timedOut: boolean, timeouts: UpstreamTimeouts, provider: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (timedOut) {
    return new GatewayError({
      status: 504,
      type: 'timeout_error',
      code: 'upstream_timeout',
      message: `${provider}: The upstream did not finish within ${timeouts.totalMs} ms.`,
      retryable: true,
    });
  }
  if (err instanceof undiciErrors.HeadersTimeoutError) {
    return new GatewayError({
      status: 504,
      type: 'timeout_error',
      code: 'upstream_timeout',
      message: `${provider}: The upstream sent no response within ${timeouts.firstByteMs} ms.`,
      retryable: true,
    });
  }
  if (err instanceof undiciErrors.BodyTimeoutError) {
    return new GatewayError({
      status: 504,
      type: 'timeout_error',
      code: 'upstream_timeout',
      message: `${provider}: The upstream stalled: nothing arrived for ${timeouts.idleMs} ms.`,
      retryable: true,
    });
  }
  if (err instanceof undiciErrors.ConnectTimeoutError) {
    return new GatewayError({
      status: 502,
      type: 'upstream_error',
      code: 'upstream_unreachable',
      message: `${provider}: Could not connect to the upstream (connect timeout).`,
      retryable: true,
    });
  }
  const code = errorCode(err);
  const detail = code ?? (err instanceof Error ? err.message : 'connection failed');
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: code && UNREACHABLE_CODES.has(code) ? 'upstream_unreachable' : 'upstream_connection_error',
    message: `${provider}: Could not reach the upstream or the connection broke (${detail}).`,
    retryable: true,
  });
}
