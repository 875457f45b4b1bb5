import { anthropicErrorBody } from '../error-shape.js';
import type { GatewayError } from '../../../core/errors.js';
import type { RenderedError } from '../../../http/render-error.js';

/**
 * A GatewayError in Anthropic's shape, with the headers Anthropic clients read: `request-id` (the SDKs expose
 * it as `requestID`) and the error's own headers (`retry-after` on 429, which the SDKs honour when retrying).
 */
export function renderAnthropicError(error: GatewayError, requestId: string): RenderedError {
  const { status, body } = anthropicErrorBody(error);
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'request-id': requestId, ...error.headers },
    body: JSON.stringify({ ...body, request_id: requestId }),
  };
}
