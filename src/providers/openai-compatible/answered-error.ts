import { GatewayError } from '../../core/errors.js';
import type { Target } from '../../core/provider.js';
import { streamErrorClientStatus, upstreamErrorFromBody } from '../upstream-error.js';

/**
 * The failure an answer that began with 200 reports in its body (`{"error": {...}}`: an event of a stream, or the
 * whole body of OpenRouter's non-streamed answer). One the request itself caused (invalid_request_error) is that 4xx,
 * not retried; any other a retryable 502, its code `fallbackCode` when the provider names none. The message, type,
 * param and extra fields are the provider's.
 */
export function answeredError(target: Target, text: string, fallbackCode: string): GatewayError {
  const failure = upstreamErrorFromBody(target.provider.name, 500, {}, text, { keepFields: true });
  const clientStatus = streamErrorClientStatus(failure.type);
  return new GatewayError({
    status: clientStatus ?? 502,
    type: failure.type,
    code: failure.code ?? fallbackCode,
    // The field the provider names as the cause (a context too long: `messages`) reaches the client too.
    param: failure.param,
    message: failure.message,
    retryable: clientStatus === null,
    upstreamFields: failure.upstreamFields,
  });
}
