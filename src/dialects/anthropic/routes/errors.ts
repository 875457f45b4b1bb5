import { addAnthropicNamesOfOwnLimits } from '../../../core/upstream-limit-headers.js';
import { anthropicErrorBody } from '../error-shape.js';
import type { GatewayError } from '../../../core/errors.js';
import type { RenderedError } from '../../../http/render-error.js';

/**
 * A GatewayError in Anthropic's shape, with the headers Anthropic clients read: `request-id` (the SDKs expose
 * it as `requestID`) and the error's own headers (`retry-after` on 429, which the SDKs honour when retrying).
 */
export function renderAnthropicError(error: GatewayError, requestId: string): RenderedError {
  const { status, body } = anthropicErrorBody(error);
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'request-id': requestId, ...error.headers };
  // A 429 of a key's or team's limit: its state under Anthropic's names too, which Anthropic's clients read.
  addAnthropicNamesOfOwnLimits(headers, Date.now());
  return {
    status,
    headers,
    body: JSON.stringify({ ...body, request_id: requestId }),
  };
}
