import { GatewayError } from '../../core/errors.js';
import { isRetryableStatus, passedErrorHeaders, upstreamErrorFromBody, noMessage } from '../upstream-error.js';
import { gatewayTypeOf, readGoogleError, type GoogleError } from '../../wire/gemini/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput } from '../../core/quote-input.js';

type Headers = Record<string, string | string[] | undefined>;

function detail(error: GoogleError, type: string): Record<string, unknown> | undefined {
  return error.details.find((d) => typeof d['@type'] === 'string' && d['@type'].endsWith(`/google.rpc.${type}`));
}

/**
 * The first field a BadRequest detail names (`generation_config.temperature`), as Google wrote it: the `param` a
 * client of the OpenAI format reads (a Gemini client reads the details themselves). A violation of the body itself
 * (an unknown top-level name) comes with no field, or an empty one, so the next one that names a field is taken.
 */
function violatedField(error: GoogleError): string | null {
  const violations = detail(error, 'BadRequest')?.fieldViolations;
  if (!Array.isArray(violations)) return null;
  for (const violation of violations as unknown[]) {
    const field = isRecord(violation) ? violation.field : undefined;
    if (typeof field === 'string' && field !== '') return quoteInput(field, 200);
  }
  return null;
}

/** Gemini states how long to back off in a RetryInfo detail (`"retryDelay": "37s"`), not in a header. */
function retryDelaySeconds(error: GoogleError): number | null {
  const delay = detail(error, 'RetryInfo')?.retryDelay;
  const match = typeof delay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(delay) : null;
  return match ? Math.max(1, Math.ceil(Number(match[1]))) : null;
}

/**
 * Maps a Gemini error answer to a GatewayError. A wrong API key is HTTP 400 INVALID_ARGUMENT with reason
 * API_KEY_INVALID upstream; clients expect 401 for that, and retrying it elsewhere would not help.
 */
export function geminiError(provider: string, status: number, headers: Headers, bodyText: string): GatewayError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    return upstreamErrorFromBody(provider, status, headers, bodyText);
  }
  const error = readGoogleError(parsed);
  if (!error) return upstreamErrorFromBody(provider, status, headers, bodyText);
  const passed = passedErrorHeaders(headers);
  const delay = retryDelaySeconds(error);
  if (delay !== null && passed['retry-after'] === undefined) passed['retry-after'] = String(delay);
  const message = error.message ?? noMessage(provider, status);
  if (detail(error, 'ErrorInfo')?.reason === 'API_KEY_INVALID') {
    return new GatewayError({ status: 401, type: 'authentication_error', code: 'invalid_api_key', message, retryable: false, headers: passed, upstreamStatus: status });
  }
  return new GatewayError({
    status,
    type: gatewayTypeOf(error.status, status),
    code: error.status,
    param: violatedField(error),
    message,
    retryable: isRetryableStatus(status),
    headers: passed,
    upstreamStatus: status,
    details: keptDetails(error),
  });
}

/** Most bytes of details passed on (as JSON): they explain a refusal; a larger list is left out whole. */
const MAX_DETAILS_BYTES = 8_192;

/** The error's details for a Gemini client, when there are some and they are of a reasonable size. */
function keptDetails(error: GoogleError): unknown[] | null {
  if (error.details.length === 0) return null;
  return JSON.stringify(error.details).length <= MAX_DETAILS_BYTES ? error.details : null;
}

/**
 * An error event inside an open stream (`{"error":{"code","message","status","details"}}`, Google's error object). It
 * keeps what Google wrote: its code as the error's status and upstream status, its status name as the code, its
 * details and its RetryInfo wait (as retry-after), so a Gemini client gets the event as it came (see googleErrorBody)
 * and a RESOURCE_EXHAUSTED pauses the target as a 429 answer does. Another try may help as it would after that
 * status: a 5xx or a 429 is retryable, an INVALID_ARGUMENT is not. An event without a valid code is a retryable 502
 * (a quota's RESOURCE_EXHAUSTED a 429).
 */
export function geminiStreamError(provider: string, body: unknown): GatewayError {
  const error = readGoogleError(body);
  const code = errorCode(body);
  if (error === null || code === null) return streamErrorWithoutCode(provider, error);
  const headers: Record<string, string> = {};
  const delay = retryDelaySeconds(error);
  if (delay !== null) headers['retry-after'] = String(delay);
  return new GatewayError({
    status: code,
    type: gatewayTypeOf(error.status, code),
    code: error.status,
    param: violatedField(error),
    message: error.message ?? `${provider} reported an error inside the stream.`,
    retryable: isRetryableStatus(code),
    headers,
    upstreamStatus: code,
    details: keptDetails(error),
  });
}

/** The HTTP status a Google error object states as its `code`, when it is an error status (400-599). */
function errorCode(body: unknown): number | null {
  const root = Array.isArray(body) ? (body[0] as unknown) : body;
  const code = isRecord(root) && isRecord(root.error) ? root.error.code : undefined;
  return typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? code : null;
}

/** A stream's error event that states no error code: the answer is cut, another try may work. */
function streamErrorWithoutCode(provider: string, error: GoogleError | null): GatewayError {
  const limited = error?.status === 'RESOURCE_EXHAUSTED';
  return new GatewayError({
    status: limited ? 429 : 502,
    type: limited ? 'rate_limit_error' : 'upstream_error',
    code: error?.status ?? 'upstream_stream_error',
    message: error?.message ?? `${provider} reported an error inside the stream.`,
    retryable: true,
  });
}
