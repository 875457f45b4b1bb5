import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';
import { googleStatusName, isGoogleStatusName } from '../../wire/gemini/errors.js';

/** A 400 the Gemini API would also answer, in its wording style (`* GenerateContentRequest.<field>: ...`). */
export function invalidArgument(message: string, param: string | null = null): GatewayError {
  // Rendered in Google's shape, whose `status` (INVALID_ARGUMENT) comes from the HTTP status.
  return gatewayError('invalid_value', message, { param });
}

export interface GoogleErrorBody {
  error: { code: number; message: string; status: string; details?: unknown[] };
}

/**
 * The `status` a Google client is shown: a Google upstream's own (kept as the error's code), so FAILED_PRECONDITION
 * and the other names an HTTP status does not tell apart reach the client as Google wrote them, as long as the
 * HTTP status is still the upstream's; else the name of the HTTP status.
 */
function statusNameOf(error: GatewayError): string {
  if (isGoogleStatusName(error.code) && error.upstreamStatus === error.status) return error.code;
  // Anthropic's 529 (overloaded_error, from a Claude target) is no HTTP status Google names: an overloaded model is
  // UNAVAILABLE to Google, which a client retries, where the 5xx fallback (INTERNAL) reads as a failure of its own.
  if (error.status === 529) return 'UNAVAILABLE';
  return googleStatusName(error.status);
}

/** Google's detail type naming the fields of a request that were wrong (google.rpc.BadRequest). */
const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';

/**
 * The details of an error that has none of its own: a 400 naming the field it refuses (tollgate's own refusal, or a
 * non-Gemini upstream's) gets a `google.rpc.BadRequest` with that field's violation, as Google's own 400s carry one,
 * so a client (or @google/genai's ApiError, whose message holds the whole error JSON) reads which field it was.
 */
function fieldViolationDetails(error: GatewayError): unknown[] | null {
  if (error.status !== 400 || error.param === null || error.param === '') return null;
  return [{ '@type': BAD_REQUEST_TYPE, fieldViolations: [{ field: error.param, description: error.message }] }];
}

/** A GatewayError in Google's shape `{"error":{"code","message","status","details"}}`; the HTTP status stays the gateway's. */
export function googleErrorBody(error: GatewayError): GoogleErrorBody {
  const body: GoogleErrorBody = { error: { code: error.status, message: error.message, status: statusNameOf(error) } };
  // A Gemini upstream's own details (which field was wrong, why) reach the client as Google writes them.
  const details = error.details ? [...error.details] : fieldViolationDetails(error);
  if (details) body.error.details = details;
  return body;
}
