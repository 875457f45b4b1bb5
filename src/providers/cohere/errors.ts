import { GatewayError } from '../../core/errors.js';
import { upstreamErrorFromBody } from '../upstream-error.js';

type Headers = Record<string, string | string[] | undefined>;

/** Cohere statuses whose meaning the status alone does not tell an OpenAI client. */
const TYPES: Record<number, string> = {
  402: 'insufficient_quota',
  498: 'authentication_error',
};

/**
 * Cohere errors are `{"message": "..."}` (v2 adds an `id`); the shared reader keeps the status and message.
 * Cohere sends no error type, so it is derived from the status.
 */
export function cohereError(provider: string, status: number, headers: Headers, bodyText: string): GatewayError {
  const base = upstreamErrorFromBody(provider, status, headers, bodyText);
  const type = TYPES[status];
  if (!type) return base;
  return new GatewayError({
    // Cohere's 498 (invalid token) is not a status OpenAI clients know: they recognise an auth failure by 401.
    status: status === 498 ? 401 : base.status,
    type,
    code: base.code,
    param: base.param,
    message: base.message,
    retryable: base.retryable,
    headers: base.headers,
    upstreamStatus: base.upstreamStatus,
  });
}

/** An error object sent as an event inside an open stream. */
export function cohereStreamError(provider: string, data: string): GatewayError {
  const failure = upstreamErrorFromBody(provider, 500, {}, data);
  return new GatewayError({ status: 502, type: failure.type, code: failure.code ?? 'upstream_stream_error', message: failure.message, retryable: true });
}
