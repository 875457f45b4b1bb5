import { GatewayError } from '../../core/errors.js';
import { isRetryableStatus, passedErrorHeaders, streamErrorClientStatus, upstreamErrorFromBody } from '../upstream-error.js';
import { anthropicError, gatewayTypeOf } from '../../wire/anthropic/errors.js';

type Headers = Record<string, string | string[] | undefined>;

/**
 * An error answer from Anthropic. Bodies that are not Anthropic's shape (a proxy's HTML 413, a load balancer's
 * 502) are read by the generic reader. 529 overloaded is retryable like any 5xx.
 */
export function errorFromResponse(provider: string, status: number, headers: Headers, bodyText: string): GatewayError {
  const error = anthropicError(bodyText);
  if (!error) return upstreamErrorFromBody(provider, status, headers, bodyText);
  return new GatewayError({
    status,
    type: gatewayTypeOf(error.type),
    code: error.type,
    message: error.message,
    retryable: isRetryableStatus(status),
    headers: passedErrorHeaders(headers),
    upstreamStatus: status,
  });
}

/**
 * An `error` event inside an open stream (overloaded mid-answer): the answer is broken, another try may work. One the
 * request itself caused (invalid_request_error, request_too_large) is that 4xx, and another try would get the same.
 */
export function streamError(provider: string, data: string): GatewayError {
  const error = anthropicError(data);
  const clientStatus = streamErrorClientStatus(error?.type);
  if (error && clientStatus !== null) {
    return new GatewayError({ status: clientStatus, type: gatewayTypeOf(error.type), code: error.type, message: error.message, retryable: false });
  }
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: error?.type ?? 'upstream_stream_error',
    message: error?.message ?? `${provider} reported an error inside the stream.`,
    retryable: true,
  });
}

export { invalidUpstreamBody as invalidUpstream } from '../upstream-error.js';
