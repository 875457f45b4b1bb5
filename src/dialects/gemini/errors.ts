import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';

/** A 400 the Gemini API would also answer, in its wording style (`* GenerateContentRequest.<field>: ...`). */
export function invalidArgument(message: string, param: string | null = null): GatewayError {
  // Rendered in Google's shape, whose `status` (INVALID_ARGUMENT) comes from the HTTP status.
  return gatewayError('invalid_value', message, { param });
}

/** google.rpc.Code names for the HTTP statuses the gateway answers with (https://cloud.google.com/apis/design/errors). */
const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'RESOURCE_EXHAUSTED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Google's status name for an HTTP status; unlisted ones fall back to INVALID_ARGUMENT (4xx) or INTERNAL (5xx). */
export function googleStatusName(status: number): string {
  return STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}

export interface GoogleErrorBody {
  error: { code: number; message: string; status: string };
}

/** A GatewayError in Google's shape `{"error":{"code","message","status"}}`; the HTTP status stays the gateway's. */
export function googleErrorBody(error: GatewayError): GoogleErrorBody {
  return { error: { code: error.status, message: error.message, status: googleStatusName(error.status) } };
}
