import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { GatewayError } from '../core/errors.js';
import { gatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';

/** The request content codings inflated (RFC 9110's names; `x-gzip` is gzip's old one). */
const DECOMPRESSORS = new Map<string, () => NodeJS.ReadWriteStream & Readable>([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/** What a 415 for another coding names in Accept-Encoding (RFC 9110 §15.5.16). */
export const ACCEPTED_ENCODINGS = 'gzip, deflate, br';

/** The request's content coding, lower-cased; null for none (absent, blank or `identity`). */
export function contentCoding(header: string | string[] | undefined): string | null {
  const coding = typeof header === 'string' ? header.trim().toLowerCase() : '';
  return coding === '' || coding === 'identity' ? null : coding;
}

/** A decompressor for the coding, or the 415 naming it (and what is supported). */
export function decompressorFor(coding: string, header: string): (NodeJS.ReadWriteStream & Readable) | GatewayError {
  // A Map, not an object: the client names the coding, and 'constructor' or '__proto__' must find nothing.
  const create = DECOMPRESSORS.get(coding);
  if (create !== undefined) return create();
  return gatewayError('unsupported_media_type', `Content-Encoding '${quoteInput(header, 40)}' is not supported: send the request body uncompressed, or compressed with one of ${ACCEPTED_ENCODINGS}.`, {
    param: 'content-encoding',
    headers: { 'accept-encoding': ACCEPTED_ENCODINGS },
  });
}

/** A body that does not decompress as its coding says. */
export function notValidCoding(coding: string, err: Error): GatewayError {
  return gatewayError('invalid_body', `The request body is not valid ${coding} data, as its Content-Encoding says: ${quoteInput(err.message, 120)}.`, { param: 'content-encoding' });
}
