import { isRecord } from '../../core/is-record.js';

/**
 * Google's error statuses (google.rpc.Code names) and the gateway's error types, both ways: what a Gemini
 * upstream's error status means to the gateway, and which status name a gateway error of some HTTP status is
 * shown with on the /genai route.
 */

/** google.rpc.Code names → OpenAI-ish error types. */
const TYPES: Record<string, string> = {
  INVALID_ARGUMENT: 'invalid_request_error',
  FAILED_PRECONDITION: 'invalid_request_error',
  OUT_OF_RANGE: 'invalid_request_error',
  UNAUTHENTICATED: 'authentication_error',
  PERMISSION_DENIED: 'permission_error',
  NOT_FOUND: 'not_found_error',
  RESOURCE_EXHAUSTED: 'rate_limit_error',
  INTERNAL: 'upstream_error',
  UNAVAILABLE: 'upstream_error',
  DEADLINE_EXCEEDED: 'upstream_error',
};

function typeForStatus(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'upstream_error' : 'invalid_request_error';
}

/** A Google error status (`{"error":{code,message,status,details}}`), also when sent as a one-element array. */
export interface GoogleError {
  message: string | null;
  status: string | null;
  details: Record<string, unknown>[];
}

export function readGoogleError(body: unknown): GoogleError | null {
  const root = Array.isArray(body) ? body[0] : body;
  if (!isRecord(root) || !isRecord(root.error)) return null;
  const err = root.error;
  return {
    message: typeof err.message === 'string' && err.message !== '' ? err.message : null,
    status: typeof err.status === 'string' ? err.status : null,
    details: Array.isArray(err.details) ? err.details.filter(isRecord) : [],
  };
}

/** The gateway's error type for a Google error status, or for the HTTP status when the body names none. */
export function gatewayTypeOf(googleStatus: string | null, httpStatus: number): string {
  return (googleStatus ? TYPES[googleStatus] : undefined) ?? typeForStatus(httpStatus);
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

/** Every google.rpc.Code name (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto). */
const GOOGLE_STATUS_NAMES = new Set([
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
]);

/** Whether a string is a google.rpc.Code name (what a Google upstream's error `status` holds). */
export function isGoogleStatusName(name: unknown): name is string {
  return typeof name === 'string' && GOOGLE_STATUS_NAMES.has(name);
}

/** Google's status name for an HTTP status; unlisted ones fall back to INVALID_ARGUMENT (4xx) or INTERNAL (5xx). */
export function googleStatusName(status: number): string {
  return STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}
