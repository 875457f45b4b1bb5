import type { GatewayError } from '../../core/errors.js';
import { anthropicErrorType, isAnthropicErrorType } from '../../wire/anthropic/errors.js';

export interface AnthropicErrorRendering {
  status: number;
  body: { type: 'error'; error: { type: string; message: string } };
}

/**
 * The gateway's own error types (OpenAI's vocabulary) of Anthropic's form that are no Anthropic type: an error of
 * another upstream may carry one as both type and code (OpenAI's `server_error`), and is shown by its status instead.
 */
const GATEWAY_ONLY_TYPES = new Set(['upstream_error', 'server_error']);

/**
 * An Anthropic upstream's error type the gateway does not know (one Anthropic added later): it is kept as the error's
 * type as well as its code (see gatewayTypeOf), and reads as Anthropic's types do (`<word>_error`). The gateway's own
 * errors never have a type equal to their code of that form.
 */
function unknownAnthropicType(error: GatewayError): string | null {
  const { code } = error;
  if (code === null || error.type !== code || GATEWAY_ONLY_TYPES.has(code)) return null;
  return /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*_error$/.test(code) ? code : null;
}

/**
 * A GatewayError as Anthropic's `{"type":"error","error":{"type","message"}}` and the status to send it with. An
 * Anthropic upstream's own error keeps its type (an `overloaded_error` inside a stream, which the gateway answers as
 * a 502, is still shown as overloaded; a type the gateway does not know yet, as written); the gateway's own errors
 * get the type Anthropic gives their status.
 */
export function anthropicErrorBody(error: GatewayError): AnthropicErrorRendering {
  const type = isAnthropicErrorType(error.code) ? error.code : (unknownAnthropicType(error) ?? anthropicErrorType(error.status));
  return { status: error.status, body: { type: 'error', error: { type, message: error.message } } };
}
