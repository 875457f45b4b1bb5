import type { GatewayError } from '../../core/errors.js';
import { anthropicErrorType } from '../../wire/anthropic/errors.js';

export interface AnthropicErrorRendering {
  status: number;
  body: { type: 'error'; error: { type: string; message: string } };
}

/** A GatewayError as Anthropic's `{"type":"error","error":{"type","message"}}` and the status to send it with. */
export function anthropicErrorBody(error: GatewayError): AnthropicErrorRendering {
  return { status: error.status, body: { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message } } };
}
