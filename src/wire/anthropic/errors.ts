import { isRecord } from '../../core/is-record.js';

/**
 * Anthropic's error types and the gateway's, both ways: what an Anthropic upstream's error type means to the
 * gateway (its type becomes OpenAI's vocabulary; the Anthropic type itself stays as the code), and which
 * Anthropic type a gateway error of some status is shown as on the /anthropic route.
 */

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

export interface AnthropicError {
  type: string;
  message: string;
}

/** The `error` object of Anthropic's `{"type":"error","error":{"type","message"}}`, when the text is one. */
export function anthropicError(text: string): AnthropicError | null {
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

/** Whether a gateway error's code is an Anthropic error type (an Anthropic upstream's error keeps its type as the code). */
export function isAnthropicErrorType(code: string | null | undefined): code is string {
  return typeof code === 'string' && Object.hasOwn(TYPES, code);
}

/** The gateway's error type for an Anthropic upstream's error type (unknown ones pass through). */
export function gatewayTypeOf(anthropicType: string): string {
  return TYPES[anthropicType] ?? anthropicType;
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
