import { isUtf8 } from 'node:buffer';
import type { FastifyRequest } from 'fastify';
import type { GatewayError } from '../core/errors.js';
import { NumberOutOfRange, parseExactly } from '../exact-numbers.js';
import { gatewayError } from '../core/errors.js';
import { foreignCharset, unsupportedCharset } from './body-charset.js';

/**
 * How deep arrays and objects may nest in a request body. No request of any API served here comes near it
 * (tool schemas nest a few dozen levels at most), while code that walks a parsed body recursively (serialising
 * it upstream, translating it, hashing it for the cache) would overflow the stack a few thousand levels down.
 */
export const MAX_JSON_DEPTH = 128;

const TOO_DEEP = 1;
const MAY_BE_ROUNDED = 2;

/** The smallest normal double: below it a double holds fewer digits (2.5e-324 reads as 5e-324). */
const MIN_NORMAL = 2.2250738585072014e-308;

/**
 * Whether JSON.parse may have rounded this number: an integer past 2^53, one that overflowed (`1e400` reads as
 * Infinity, which JSON.stringify writes as `null`), a subnormal, or a fraction whose shortest form has 16 or more
 * significant digits (the text it came from may have had more). Exact ones, nearly all, answer false at once.
 * What the parsed value cannot tell: a text whose extra digits a double drops to a shorter number
 * (`0.10000000000000000001` reads as 0.1, `1e-400` as 0); only scanning the text would, at a cost to every request.
 */
function mayBeRounded(n: number): boolean {
  if (Number.isInteger(n)) return !Number.isSafeInteger(n);
  if (!Number.isFinite(n) || (n !== 0 && Math.abs(n) < MIN_NORMAL)) return true;
  const text = String(n);
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x65 /* e */) break;
    if (code >= 0x30 && code <= 0x39 && (digits > 0 || code !== 0x30)) digits++;
  }
  return digits >= 16;
}

/**
 * One walk over a parsed JSON value, level by level (never by recursion, so any depth is safe to ask about):
 * whether arrays and objects nest more than `limit` levels deep, and whether a number in it may have been rounded.
 * JSON.parse itself is iterative in V8, so parsing first and walking the result costs far less than scanning the
 * raw text: the walk touches only values, not characters (measured: about 0.3 µs for a 2 KB chat body, 15 µs for a
 * 1 MB one made of long texts).
 */
function inspect(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  let found = 0;
  let level: object[] = [value];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > limit) return found | TOO_DEEP;
    const next: object[] = [];
    for (const node of level) {
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) {
          const child: unknown = node[i];
          if (typeof child === 'object' && child !== null) next.push(child);
          else if (typeof child === 'number' && mayBeRounded(child)) found = MAY_BE_ROUNDED;
        }
      } else {
        for (const key in node) {
          const child: unknown = (node as Record<string, unknown>)[key];
          if (typeof child === 'object' && child !== null) next.push(child);
          else if (typeof child === 'number' && mayBeRounded(child)) found = MAY_BE_ROUNDED;
        }
      }
    }
    level = next;
  }
  return found;
}

/** Whether a parsed JSON value nests arrays and objects more than `limit` levels deep. */
export function nestsDeeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  return (inspect(value, limit) & TOO_DEEP) !== 0;
}

export function tooDeep(limit: number = MAX_JSON_DEPTH): GatewayError {
  return gatewayError('json_too_deep', `The JSON body of your request nests arrays or objects more than ${limit} levels deep; flatten it.`);
}

/**
 * The body's text, or null when its bytes are not UTF-8 (RFC 8259 §8.1: JSON exchanged between systems is UTF-8).
 * Decoding alone would turn each bad byte into U+FFFD and send the upstream a text the client never wrote. The
 * check is one pass over the bytes in native code (Node's isUtf8, simdutf), on every request, so nothing costlier:
 * no second decode, no scan of the text for U+FFFD. The body arrives as bytes, after any Content-Encoding was
 * inflated (body-limit.ts).
 */
function bodyText(body: string | Buffer): string | null {
  if (typeof body === 'string') return body;
  return isUtf8(body) ? body.toString('utf8') : null;
}

function notUtf8(): GatewayError {
  return gatewayError('invalid_body', 'The request body is not valid UTF-8; send the JSON text encoded as UTF-8.');
}

/**
 * Plain JSON.parse for request bodies (then, for the rare body with a number a double cannot hold, a lossless parse:
 * see exact-numbers.ts): it is on every request, and the prototype-poisoning scan of the
 * default parser costs measurable time. JSON.parse only ever creates an own `__proto__` property, which is
 * harmless unless copied key by key into another object; code that merges request data (the config merge
 * patch) skips such keys. Bodies nested deeper than {@link MAX_JSON_DEPTH} are refused before any route sees them,
 * as are bodies that are not UTF-8. Errors go to the route family's error handler, so each answers in its own shape.
 */
export function parseJsonBody(request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void {
  const raw = bodyText(body);
  if (raw === null) {
    done(notUtf8());
    return;
  }
  if (raw.length < YIELD_ABOVE) parseText(request, raw, done);
  else setImmediate(() => parseText(request, raw, (err, value) => setImmediate(() => done(err, value))));
}

/**
 * Bodies this long (in UTF-16 units) are decoded, parsed and handed on in three turns of the event loop instead of
 * one. Each step costs about 4 ms a megabyte here (decoding and parsing a 2 MB body 7-8 ms each, then the request's
 * own synchronous start, serialising it upstream among the rest, as much again): in one turn, every other request,
 * `/health` included, waited 40-60 ms behind one large body (test/e2e/tokenizer-stall.test.ts). Smaller bodies,
 * nearly all, take the one-turn path: yielding costs a few microseconds they need not pay.
 */
const YIELD_ABOVE = 256 * 1024;

function parseText(request: FastifyRequest, raw: string, done: (err: Error | null, value?: unknown) => void): void {
  // A leading byte order mark (Windows tools write one; RFC 8259 lets a parser ignore it, as Python's json.loads of
  // the raw bytes does behind the vendors' APIs) is not part of the JSON text.
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.length === 0) {
    done(gatewayError('invalid_json', 'The request body is empty; expected a JSON object.'));
    return;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    done(gatewayError('invalid_json', `We could not parse the JSON body of your request: ${(err as Error).message}.`));
    return;
  }
  const found = inspect(value, MAX_JSON_DEPTH);
  if ((found & TOO_DEEP) !== 0) done(tooDeep());
  // A number JSON.parse may have rounded: parse again keeping it exact (see exact-numbers.ts). Model traffic only:
  // the admin API validates its own numbers, and a huge one there is a plain validation error.
  else if (found === MAY_BE_ROUNDED && !request.url.startsWith('/api/')) exactly(text, value, done);
  else done(null, value);
}

/**
 * {@link parseJsonBody} for a body whose Content-Type may declare a charset: the app's parser of `application/json`.
 * One declared in another charset than UTF-8 is refused (a 415, see body-charset.ts) before its bytes are read as
 * UTF-8.
 */
export function parseDeclaredJsonBody(request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void {
  const charset = foreignCharset(request.headers['content-type']);
  if (charset === null) parseJsonBody(request, body, done);
  else done(unsupportedCharset(charset));
}

/**
 * The lossless parse of text JSON.parse accepted. A field tollgate reads holding a number no double can hold
 * (`"temperature": 1e999`) is a 400 naming it: read as Infinity, it would reach the upstream as `null`. Should the
 * parse ever refuse what JSON.parse took otherwise (it quotes numbers in that text and parses it again), the request
 * goes on with JSON.parse's value (numbers rounded, as before) rather than failing a valid body.
 */
function exactly(text: string, plain: unknown, done: (err: Error | null, value?: unknown) => void): void {
  let value: unknown;
  try {
    value = parseExactly(text);
  } catch (err) {
    if (err instanceof NumberOutOfRange) {
      done(gatewayError('invalid_value', err.message, { param: err.field }));
      return;
    }
    value = plain;
  }
  done(null, value);
}

type BodyParser = (request: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => void;

/**
 * Wraps a parser of text (such as fastify's strict JSON parser) for registration with `parseAs: 'buffer'`: a body
 * that is not UTF-8, or declared in another charset, is refused as {@link parseJsonBody} refuses it, instead of
 * reaching the parser with each bad byte decoded to U+FFFD (and stored so, for an admin write).
 */
export function fromUtf8(parse: BodyParser): (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void) => void {
  return (request, body, done) => {
    const charset = foreignCharset(request.headers['content-type']);
    if (charset !== null) {
      done(unsupportedCharset(charset));
      return;
    }
    const text = bodyText(body);
    if (text === null) done(notUtf8());
    else parse(request, text, done);
  };
}

/** Wraps another body parser (such as fastify's strict JSON parser) with the same depth limit. */
export function withDepthLimit(parse: BodyParser): BodyParser {
  return (request, body, done) =>
    parse(request, body, (err, value) => {
      if (err) done(err);
      else if (nestsDeeperThan(value)) done(tooDeep());
      else done(null, value);
    });
}
