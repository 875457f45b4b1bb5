import { Agent, errors as undiciErrors, request, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import type { UpstreamRequest, UpstreamTimeouts } from './contract.js';

/** An upstream exchange whose headers arrived; its body is still to be read. */
export interface UpstreamExchange {
  response: Dispatcher.ResponseData;
  /** Clears the timers; call once the body has been consumed or abandoned. */
  finish(): void;
  /** Maps an error raised while reading the body to a GatewayError (knows whether the total timeout fired). */
  failure(err: unknown): GatewayError;
}

/**
 * The one HTTP client for upstream calls: undici on keep-alive pools, no fetch, no web streams (they cost
 * measurable CPU per request in a gateway).
 */
export class UpstreamTransport {
  private readonly agent = new Agent({
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
    connect: { timeout: 10_000 },
  });

  /**
   * Sends a request. `firstByteMs` bounds the wait for response headers; `totalMs` bounds the whole
   * exchange, body included.
   */
  async send(upstream: UpstreamRequest, timeouts: UpstreamTimeouts, signal: AbortSignal, provider: string): Promise<UpstreamExchange> {
    const controller = new AbortController();
    const onClientAbort = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', onClientAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('total timeout'));
    }, timeouts.totalMs);
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onClientAbort);
    };
    try {
      const response = await request(upstream.url, {
        method: upstream.method,
        headers: upstream.headers,
        body: upstream.body,
        dispatcher: this.agent,
        signal: controller.signal,
        headersTimeout: timeouts.firstByteMs,
        // Stalls inside a body are bounded by the total timeout.
        bodyTimeout: timeouts.totalMs,
      });
      return { response, finish: done, failure: (err) => transportError(err, timedOut, timeouts, provider) };
    } catch (err) {
      done();
      throw transportError(err, timedOut, timeouts, provider);
    }
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
      message: `${provider}: The upstream stopped sending its response.`,
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
