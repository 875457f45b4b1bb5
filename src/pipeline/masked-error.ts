import { stdSerializers } from 'pino';
import { maskValuesIn } from '../config/plugin-secrets.js';

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
    return { type: err instanceof Error ? err.name : typeof err, message: maskValuesIn(err instanceof Error ? err.message : String(err), secrets) };
  }
}

/** A plugin's error message, for an event or a log line, with its secret option values masked. */
export function maskedMessage(message: string, secrets: readonly string[]): string {
  return secrets.length === 0 ? message : maskValuesIn(message, secrets);
}
