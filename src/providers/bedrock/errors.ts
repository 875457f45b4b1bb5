import { GatewayError } from '../../core/errors.js';
import { defaultTypeFor, isRetryableStatus, passedErrorHeaders, noMessage } from '../upstream-error.js';

type Headers = Record<string, string | string[] | undefined>;

/** AWS errors that mean the credential itself is wrong (AWS answers them with 403; clients expect 401). */
const CREDENTIAL_ERRORS = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignatureException',
  'MissingAuthenticationTokenException',
  'ExpiredTokenException',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
]);

const TYPES: Record<string, string> = {
  ValidationException: 'invalid_request_error',
  AccessDeniedException: 'permission_error',
  ResourceNotFoundException: 'not_found_error',
  ThrottlingException: 'rate_limit_error',
  ModelNotReadyException: 'rate_limit_error',
  ServiceQuotaExceededException: 'rate_limit_error',
  ModelTimeoutException: 'timeout_error',
  InternalServerException: 'upstream_error',
  ModelErrorException: 'upstream_error',
  ModelStreamErrorException: 'upstream_error',
  ServiceUnavailableException: 'service_unavailable',
};

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `ValidationException:http://internal.amazon.com/coral/...` or `com.amazon.coral#ValidationException` → the bare name. */
function bareType(raw: string | undefined): string | null {
  if (!raw) return null;
  const name = raw.split(':')[0]?.split('#').pop()?.trim();
  return name ? name : null;
}

function messageOf(bodyText: string): { message: string | null; type: string | null } {
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (parsed && typeof parsed === 'object') {
      const record = parsed as Record<string, unknown>;
      const message = record.message ?? record.Message;
      return { message: typeof message === 'string' && message !== '' ? message : null, type: typeof record.__type === 'string' ? record.__type : null };
    }
  } catch {
    // not JSON: a proxy's HTML or text page
  }
  const text = bodyText.trim().slice(0, 500);
  return { message: text === '' ? null : text, type: null };
}

/**
 * Statuses Bedrock gives failures that are not the client's, which mean something else to a client: ModelErrorException's 424
 * ("an error while processing the model") is the upstream failing, a 502 another target may answer (a 4xx would
 * be taken for the client's mistake, neither retried nor failed over); ModelTimeoutException's 408 is the model
 * running out of time, the gateway's 504 (a 408 tells a client its own request was too slow);
 * ServiceQuotaExceededException's 400 is the account's quota spent (a daily token quota: "You can resubmit your
 * request later"), a 429 another target or account may answer meanwhile and a client may retry later.
 */
const REMAPPED_STATUSES: Record<string, number> = { ModelErrorException: 502, ModelTimeoutException: 504, ServiceQuotaExceededException: 429 };

/**
 * Where a signature error's diagnosis starts: AWS quotes the canonical request and string to sign it computed, which
 * hold every signed header with its value: the session token (x-amz-security-token), the operator's provider headers,
 * forwarded client headers. They are for the signer (tollgate), never for a client or a log: the message stops there.
 */
const SIGNING_DIAGNOSIS = /\s*The (?:Canonical String for this request|String-to-Sign) should have been/;

function withoutSigningDiagnosis(message: string | null): string | null {
  if (message === null) return null;
  const at = message.search(SIGNING_DIAGNOSIS);
  if (at < 0) return message;
  return at === 0 ? null : message.slice(0, at);
}

/** An AWS REST-JSON error: `{"message": ...}` with the error name in the `x-amzn-errortype` header. */
export function bedrockError(provider: string, status: number, headers: Headers, bodyText: string): GatewayError {
  const parsed = messageOf(bodyText);
  const body = { ...parsed, message: withoutSigningDiagnosis(parsed.message) };
  const type = bareType(header(headers, 'x-amzn-errortype')) ?? bareType(body.type ?? undefined);
  const credentials = type !== null && CREDENTIAL_ERRORS.has(type);
  const finalStatus = credentials ? 401 : ((type !== null && Object.hasOwn(REMAPPED_STATUSES, type) ? REMAPPED_STATUSES[type] : undefined) ?? status);
  return new GatewayError({
    status: finalStatus,
    type: credentials ? 'authentication_error' : ((type && TYPES[type]) ?? defaultTypeFor(status)),
    code: type,
    message: body.message ?? noMessage(provider, status),
    retryable: isRetryableStatus(finalStatus),
    headers: passedErrorHeaders(headers),
    upstreamStatus: status,
  });
}

/**
 * The HTTP status ConverseStreamOutput and InvokeModelWithResponseStream's ResponseStream document for each exception
 * they can send inside the stream (AWS Bedrock API reference). modelStreamErrorException (424 there, "Retry your
 * request") stays a 502; modelTimeoutException (408 there) is the gateway's 504, as when it answers the call.
 */
const STREAM_STATUSES: Record<string, number> = {
  validationexception: 400,
  throttlingexception: 429,
  internalserverexception: 500,
  serviceunavailableexception: 503,
  modeltimeoutexception: 504,
};

/**
 * An exception frame inside an open ConverseStream (`throttlingException`, `validationException`, ...): the
 * status and type its name documents, so a request Bedrock refused is a 400 no attempt retries, while a stream
 * error or an unknown exception is a 502 the client may retry.
 */
export function streamException(provider: string, exceptionType: string, payload: string): GatewayError {
  const { message } = messageOf(payload);
  const key = exceptionType.toLowerCase();
  const status = (Object.hasOwn(STREAM_STATUSES, key) ? STREAM_STATUSES[key] : undefined) ?? 502;
  const name = exceptionType.charAt(0).toUpperCase() + exceptionType.slice(1);
  return new GatewayError({
    status,
    type: status === 502 ? 'upstream_error' : (TYPES[name] ?? defaultTypeFor(status)),
    code: exceptionType,
    message: message ?? `${provider} reported ${exceptionType} inside the stream.`,
    retryable: isRetryableStatus(status),
  });
}
