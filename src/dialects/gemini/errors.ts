import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';
import { googleStatusName } from '../../wire/gemini/errors.js';

/** A 400 the Gemini API would also answer, in its wording style (`* GenerateContentRequest.<field>: ...`). */
export function invalidArgument(message: string, param: string | null = null): GatewayError {
  // Rendered in Google's shape, whose `status` (INVALID_ARGUMENT) comes from the HTTP status.
  return gatewayError('invalid_value', message, { param });
}

export interface GoogleErrorBody {
  error: { code: number; message: string; status: string; details?: unknown[] };
}

/** A GatewayError in Google's shape `{"error":{"code","message","status"}}`; the HTTP status stays the gateway's. */
export function googleErrorBody(error: GatewayError): GoogleErrorBody {
  const body: GoogleErrorBody = { error: { code: error.status, message: error.message, status: googleStatusName(error.status) } };
  // A Gemini upstream's own details (which field was wrong, why) reach the client as Google writes them.
  if (error.details) body.error.details = [...error.details];
  return body;
}
