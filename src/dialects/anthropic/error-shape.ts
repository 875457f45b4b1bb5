import type { GatewayError } from '../../core/errors.js';

export interface AnthropicErrorRendering {
  status: number;
  body: { type: 'error'; error: { type: string; message: string } };
}

/**
 * Anthropic's error type for a status. The gateway's own types (401 comes as invalid_request_error from the key
 * check, budgets as insufficient_quota) are OpenAI's vocabulary, so the status decides, as Anthropic's docs list it.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** A GatewayError as Anthropic's `{"type":"error","error":{"type","message"}}` and the status to send it with. */
export function anthropicErrorBody(error: GatewayError): AnthropicErrorRendering {
  return { status: error.status, body: { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message } } };
}
