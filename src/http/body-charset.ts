import type { GatewayError } from '../core/errors.js';
import { gatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';

/**
 * The charsets a JSON body may declare: UTF-8 (RFC 8259 §8.1: JSON exchanged between systems that are not part of
 * a closed ecosystem MUST be UTF-8) and US-ASCII, a subset of it. `utf8` is no registered name, but clients write
 * it meaning UTF-8 (Node and Python read it so).
 */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** `charset=<value>` among a Content-Type's parameters, the value quoted or not (RFC 9110 §5.6.6). */
const CHARSET_PARAMETER = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i;

/**
 * The charset a Content-Type declares when it is not one a JSON body may be in, else null. The body's bytes are read
 * as UTF-8 whatever it says: a UTF-16 or Latin-1 text would reach the upstream corrupted, or fail with a puzzling
 * "not valid UTF-8" or JSON syntax error, so the client learns instead that the charset is the problem. The common
 * header, `application/json` with no parameter, is answered by one character search.
 */
export function foreignCharset(contentType: string | undefined): string | null {
  if (contentType === undefined || !contentType.includes(';')) return null;
  const match = CHARSET_PARAMETER.exec(contentType);
  if (match === null) return null;
  const charset = match[1] ?? match[2] ?? '';
  return UTF8_CHARSETS.has(charset.toLowerCase()) ? null : charset;
}

/** The 415 for a body declared in another charset than UTF-8. */
export function unsupportedCharset(charset: string): GatewayError {
  return gatewayError(
    'unsupported_media_type',
    `The request body's Content-Type declares charset '${quoteInput(charset, 40)}'; JSON must be sent as UTF-8 (RFC 8259): encode the body as UTF-8 and send Content-Type: application/json (charset=utf-8 or none).`,
    { param: 'content-type' },
  );
}
