import type { IncomingHttpHeaders } from 'node:http';

/**
 * What the client's headers ask of the gateway, parsed once per request so every stage reads the same answer
 * whatever the dialect: caching directives, the W3C trace context, and tollgate's own `x-tollgate-*` headers.
 */
export interface RequestHints {
  /** `Cache-Control` directives, lower-case (`no-cache`, `no-store`, `max-age` with its value); empty when absent. */
  readonly cacheControl: ReadonlyMap<string, string | true>;
  /** The W3C `traceparent` header when it is well formed (version 00, non-zero ids), else null. */
  readonly traceparent: string | null;
  /** The W3C `tracestate` header as sent, when a valid traceparent came with it. */
  readonly tracestate: string | null;
  /** Every `x-tollgate-<name>` header by `<name>` (lower-case), values as sent (repeated headers joined by `, `). */
  readonly tollgate: ReadonlyMap<string, string>;
}

const NO_DIRECTIVES: ReadonlyMap<string, string | true> = new Map();
const NO_TOLLGATE: ReadonlyMap<string, string> = new Map();
export const NO_HINTS: RequestHints = Object.freeze({ cacheControl: NO_DIRECTIVES, traceparent: null, tracestate: null, tollgate: NO_TOLLGATE });

const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
const TOLLGATE_PREFIX = 'x-tollgate-';
/** Longest header value a hint keeps; a longer one is ignored rather than parsed. */
const MAX_HINT_CHARS = 4096;

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function parseCacheControl(raw: string): ReadonlyMap<string, string | true> {
  const directives = new Map<string, string | true>();
  for (const part of raw.split(',')) {
    const [name, ...rest] = part.split('=');
    const key = name?.trim().toLowerCase();
    if (!key) continue;
    const value = rest.join('=').trim().replace(/^"(.*)"$/, '$1');
    directives.set(key, rest.length > 0 ? value : true);
  }
  return directives;
}

/** Reads the hints from the client's headers (Node's lower-case names). Cheap when none of them is present. */
export function parseRequestHints(headers: Readonly<IncomingHttpHeaders>): RequestHints {
  let cacheControl = NO_DIRECTIVES;
  let traceparent: string | null = null;
  let tracestate: string | null = null;
  let tollgate: Map<string, string> | null = null;
  const cache = single(headers['cache-control']);
  if (cache && cache.length <= MAX_HINT_CHARS) cacheControl = parseCacheControl(cache);
  const parent = single(headers.traceparent)?.trim().toLowerCase();
  if (parent && TRACEPARENT.test(parent)) {
    traceparent = parent;
    const state = single(headers.tracestate);
    if (state && state.length <= MAX_HINT_CHARS) tracestate = state;
  }
  for (const name in headers) {
    if (!name.startsWith(TOLLGATE_PREFIX)) continue;
    const value = single(headers[name]);
    if (value === undefined || value.length > MAX_HINT_CHARS) continue;
    (tollgate ??= new Map()).set(name.slice(TOLLGATE_PREFIX.length), value);
  }
  if (cacheControl === NO_DIRECTIVES && traceparent === null && tollgate === null) return NO_HINTS;
  return { cacheControl, traceparent, tracestate, tollgate: tollgate ?? NO_TOLLGATE };
}
