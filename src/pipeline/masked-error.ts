import { stdSerializers } from 'pino';
import { maskValuesIn } from '../config/plugin-secrets.js';
import { withChanges, type GatewayError } from '../core/errors.js';

/**
 * A plugin's error as the gateway log gets it, with the values of its secret options masked (`****abcd`): a plugin
 * failing a request often quotes its credential without meaning to, in a URL carrying it (`?key=`) or in a header its
 * HTTP client keeps on the error (axios' `error.config.headers`). The error is serialized as the log would (message,
 * stack, its own fields) and masked whole; nothing is done when the plugin has no secret.
 */
export function maskedError(err: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0 || err === undefined || err === null) return err;
  // Masked as the JSON text holds them: a secret with a quote or a backslash is escaped there.
  const escaped = secrets.map((secret) => JSON.stringify(secret).slice(1, -1));
  const serialized: unknown = err instanceof Error ? stdSerializers.err(err) : err;
  try {
    return JSON.parse(maskValuesIn(JSON.stringify(serialized) ?? 'null', escaped)) as unknown;
  } catch {
    // A field that cannot be written as JSON (a cycle, a BigInt): the message alone.
    return { type: err instanceof Error ? err.name : typeof err, message: maskValuesIn(failureText(err), secrets) };
  }
}

/**
 * The text of what a plugin threw or failed with: an Error's message, else the value as String() writes it. Never
 * throws: String() refuses some values (an object without a prototype, one whose toString throws), and describing
 * such a failure threw in turn, inside rxjs when it was an Observable's error, which reported it as an uncaught
 * exception (the end of `tollgate serve`) and left the request unanswered.
 */
export function failureText(err: unknown): string {
  try {
    return err instanceof Error ? String(err.message) : String(err);
  } catch {
    return '(a value that cannot be written as text)';
  }
}

/** A plugin's error message, for an event or a log line, with its secret option values masked. */
export function maskedMessage(message: string, secrets: readonly string[]): string {
  return secrets.length === 0 ? message : maskValuesIn(message, secrets);
}

/**
 * JSON data (a GatewayError's `details` or `upstreamFields`) with the secret values masked in every string and key;
 * null when it cannot be written as JSON (a cycle, a BigInt), which no client could be sent either.
 */
function maskedData<T>(value: T, secrets: readonly string[]): T | null {
  if (value === null || value === undefined) return value;
  // Masked as the JSON text holds them: a secret with a quote or a backslash is escaped there.
  const escaped = secrets.map((secret) => JSON.stringify(secret).slice(1, -1));
  try {
    return JSON.parse(maskValuesIn(JSON.stringify(value), escaped)) as T;
  } catch {
    return null;
  }
}

/**
 * A plugin's own GatewayError (its refusal of the request) with the values of its secret options masked in every
 * text of it that is logged or shown: its message, its `operatorMessage` (which the gateway log and the request log
 * keep instead of the message), its `cause` (which the gateway log writes whole for an `internal_error`), and the
 * fields a client is shown beside the message (`upstreamFields`, `details`: a refusal carrying the answer of the
 * service the plugin called, which may echo the plugin's key). A plugin that fails with
 * `gatewayError('internal_error', ..., { cause: err })`, the documented way to tell the operator why, otherwise
 * logged its HTTP client's error with the credential in its headers as it was. Every other field is kept: the client
 * reads the same refusal whether the plugin has secrets or not. The error itself is returned when it has none.
 */
export function maskedGatewayError(err: GatewayError, secrets: readonly string[]): GatewayError {
  if (secrets.length === 0) return err;
  // A GatewayError of another copy of tollgate (see its brand) may lack the newer fields.
  const { cause } = err as { cause?: unknown };
  const operatorMessage = (err.operatorMessage as string | null | undefined) ?? null;
  const masked = withChanges(err, {
    message: maskedMessage(err.message, secrets),
    operatorMessage: operatorMessage === null ? null : maskedMessage(operatorMessage, secrets),
    ...(cause !== undefined ? { cause: maskedError(cause, secrets) } : {}),
    details: maskedData(err.details as GatewayError['details'] | undefined, secrets),
    upstreamFields: maskedData(err.upstreamFields as GatewayError['upstreamFields'] | undefined, secrets),
  });
  // Where the plugin made it, not here.
  if (typeof err.stack === 'string') masked.stack = maskedMessage(err.stack, secrets);
  return masked;
}
