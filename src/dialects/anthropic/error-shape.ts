import type { GatewayError } from '../../core/errors.js';
import { anthropicErrorType, isAnthropicErrorType } from '../../wire/anthropic/errors.js';

export interface AnthropicErrorRendering {
  status: number;
  body: { type: 'error'; error: { type: string; message: string } };
}

/**
 * A GatewayError as Anthropic's `{"type":"error","error":{"type","message"}}` and the status to send it with. An
 * Anthropic upstream's own error keeps its type (an `overloaded_error` inside a stream, which the gateway answers as
 * a 502, is still shown as overloaded); the gateway's own errors get the type Anthropic gives their status.
 */
export function anthropicErrorBody(error: GatewayError): AnthropicErrorRendering {
  const type = isAnthropicErrorType(error.code) ? error.code : anthropicErrorType(error.status);
  return { status: error.status, body: { type: 'error', error: { type, message: error.message } } };
}
