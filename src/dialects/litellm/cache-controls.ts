import type { IncomingHttpHeaders } from 'node:http';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';

/** The longest TTL or age a control may give (a year), like the cache's own headers. */
const MAX_SECONDS = 31_536_000;

/**
 * LiteLLM's per-request cache controls (https://docs.litellm.ai/docs/proxy/caching_controls), as the headers
 * tollgate's response cache reads: `cache: {"no-cache": true}` (answer from the provider, store its answer) and
 * `{"no-store": true}` become `Cache-Control` directives, `{"s-maxage": n}` its `max-age` (no older answer),
 * `{"ttl": n}` `x-tollgate-cache-ttl`, and `caching: false` `x-tollgate-cache: off`. Read from the body or its
 * `extra_body` (the body's own field wins, as LiteLLM merges them), before the body's LiteLLM fields are dropped.
 * `{"namespace": "..."}` keeps a namespace's answers apart from others' (a tenant's answer is never another's): it
 * becomes `x-tollgate-cache-namespace`, part of whose answers a request may share.
 * Null when the body has none: the client's headers say it all. A control of the wrong type is the client's 400.
 */
export function liteLLMCacheHeaders(body: Record<string, unknown>, headers: Readonly<IncomingHttpHeaders>): IncomingHttpHeaders | null {
  const extra = isRecord(body.extra_body) ? body.extra_body : null;
  const cache = body.cache ?? extra?.cache;
  const caching = body.caching ?? extra?.caching;
  if ((cache === undefined || cache === null) && caching !== false) return null;
  if (cache !== undefined && cache !== null && !isRecord(cache)) {
    throw gatewayError('invalid_value', "Invalid 'cache': give an object of cache controls (no-cache, no-store, ttl, s-maxage, namespace).", { param: 'cache' });
  }
  const out: IncomingHttpHeaders = { ...headers };
  if (caching === false) out['x-tollgate-cache'] = 'off';
  const namespace = cache?.namespace;
  if (namespace !== undefined && namespace !== null && namespace !== '') {
    if (typeof namespace !== 'string') throw gatewayError('invalid_value', "Invalid 'cache.namespace': give a string.", { param: 'cache.namespace' });
    out['x-tollgate-cache-namespace'] = namespace;
  }
  const directives: string[] = [];
  if (cache?.['no-cache'] === true) directives.push('no-cache');
  if (cache?.['no-store'] === true) directives.push('no-store');
  const maxAge = seconds(cache?.['s-maxage'], 's-maxage', 0);
  if (maxAge !== null) directives.push(`max-age=${maxAge}`);
  const ttl = seconds(cache?.ttl, 'ttl', 1);
  if (ttl !== null) out['x-tollgate-cache-ttl'] = String(ttl);
  if (directives.length > 0) out['cache-control'] = [headers['cache-control'], ...directives].filter(Boolean).join(', ');
  return out;
}

/** A control's whole seconds (a fraction rounds up), or null when absent. */
function seconds(value: unknown, name: string, least: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < least) {
    throw gatewayError('invalid_value', `Invalid 'cache.${name}': give a number of seconds${least > 0 ? ' above 0' : ''}.`, { param: `cache.${name}` });
  }
  return Math.min(Math.max(Math.ceil(value), least), MAX_SECONDS);
}
