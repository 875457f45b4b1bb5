import { GatewayError } from '../errors.js';

type Headers = Record<string, string | string[] | undefined>;

/** Statuses after which another attempt may succeed: timeouts, conflicts, rate limits and server faults. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The upstream answered something tollgate cannot read; another attempt may fare better. */
export function invalidUpstreamBody(provider: string, what: string): GatewayError {
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: 'invalid_upstream_response',
    message: `${provider}: upstream sent ${what}`,
    retryable: true,
  });
}

const PASSED_HEADERS = ['retry-after', 'retry-after-ms'];

/** Headers of an upstream error the client needs in order to behave well (back off). */
export function passedErrorHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = headerValue(headers, name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function asString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** The OpenAI-style error type for an upstream status, when the upstream's body names none. */
export function defaultTypeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'upstream_error';
  return 'invalid_request_error';
}

/**
 * Reads the error bodies providers actually send: OpenAI's `{"error":{message,type,param,code}}`, the bare
 * `{"error":"..."}` of some vendors, `{"message": ...}`, FastAPI's `{"detail": ...}`, or plain text. The
 * upstream status and message are kept; the provider name is prefixed so the client knows who said it.
 */
export function upstreamErrorFromBody(provider: string, status: number, headers: Headers, bodyText: string): GatewayError {
  let message: string | null = null;
  let type: string | null = null;
  let code: string | null = null;
  let param: string | null = null;
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (parsed && typeof parsed === 'object') {
      const record = parsed as Record<string, unknown>;
      const inner = record.error;
      if (inner && typeof inner === 'object') {
        const err = inner as Record<string, unknown>;
        message = asString(err.message);
        type = asString(err.type);
        code = asString(err.code) ?? (typeof err.code === 'number' ? String(err.code) : null);
        param = asString(err.param);
      } else {
        message = asString(inner) ?? asString(record.message) ?? asString(record.detail);
        if (!message && record.detail !== undefined) message = JSON.stringify(record.detail);
      }
    }
  } catch {
    message = bodyText.trim().slice(0, 500) || null;
  }
  return new GatewayError({
    status,
    type: type ?? defaultTypeFor(status),
    code,
    param,
    message: `${provider}: ${message ?? `upstream answered HTTP ${status}`}`,
    retryable: isRetryableStatus(status),
    headers: passedErrorHeaders(headers),
    upstreamStatus: status,
  });
}
