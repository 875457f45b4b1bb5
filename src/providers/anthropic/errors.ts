import { GatewayError } from '../../core/errors.js';
import { isRetryableStatus, passedErrorHeaders, upstreamErrorFromBody } from '../upstream-error.js';
import { isRecord } from '../../is-record.js';

type Headers = Record<string, string | string[] | undefined>;

/** Anthropic's error types as the gateway's; the Anthropic type itself stays as the error code. */
const TYPES: Record<string, string> = {
  invalid_request_error: 'invalid_request_error',
  request_too_large: 'invalid_request_error',
  authentication_error: 'authentication_error',
  permission_error: 'permission_error',
  not_found_error: 'not_found_error',
  rate_limit_error: 'rate_limit_error',
  billing_error: 'insufficient_quota',
  timeout_error: 'timeout_error',
  api_error: 'upstream_error',
  overloaded_error: 'upstream_error',
};

interface AnthropicError {
  type: string;
  message: string;
}

/** The `error` object of Anthropic's `{"type":"error","error":{"type","message"}}`, when the text is one. */
function anthropicError(text: string): AnthropicError | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(parsed) || !isRecord(parsed.error)) return null;
  const { type, message } = parsed.error;
  if (typeof type !== 'string' || typeof message !== 'string') return null;
  return { type, message };
}

/**
 * An error answer from Anthropic. Bodies that are not Anthropic's shape (a proxy's HTML 413, a load balancer's
 * 502) are read by the generic reader. 529 overloaded is retryable like any 5xx.
 */
export function errorFromResponse(provider: string, status: number, headers: Headers, bodyText: string): GatewayError {
  const error = anthropicError(bodyText);
  if (!error) return upstreamErrorFromBody(provider, status, headers, bodyText);
  return new GatewayError({
    status,
    type: TYPES[error.type] ?? error.type,
    code: error.type,
    message: error.message,
    retryable: isRetryableStatus(status),
    headers: passedErrorHeaders(headers),
    upstreamStatus: status,
  });
}

/** An `error` event inside an open stream (overloaded mid-answer): the answer is broken, another try may work. */
export function streamError(provider: string, data: string): GatewayError {
  const error = anthropicError(data);
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: error?.type ?? 'upstream_stream_error',
    message: error?.message ?? `${provider} reported an error inside the stream.`,
    retryable: true,
  });
}

export { invalidUpstreamBody as invalidUpstream } from '../upstream-error.js';
