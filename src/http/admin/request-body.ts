import type { FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';

/**
 * The body of a write. An absent body is refused rather than read as `{}`: a bare `PUT /api/config` would
 * otherwise wipe every change made through the API.
 */
export function jsonObjectBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) {
    throw gatewayError('invalid_json', 'The request body is empty; expected a JSON object sent with Content-Type: application/json.');
  }
  if (typeof body !== 'object' || Array.isArray(body)) throw gatewayError('invalid_json', 'The request body must be a JSON object.');
  const reserved = protoMember(body);
  if (reserved !== null) {
    throw gatewayError('invalid_value', `${reserved}: "__proto__" is reserved (every JavaScript object has a property of that name) and cannot name anything; choose another`, { param: reserved });
  }
  return body as Record<string, unknown>;
}

/**
 * Where a parsed body holds an own `__proto__` member (`routes.__proto__`), or null. JSON.parse keeps it as a plain
 * member, but the config schema's records skip it without a word: `PATCH {"routes": {"__proto__": {...}}}` answered
 * 200 with a new version and no such route. Walked level by level (the body's depth is bounded by its parser).
 */
function protoMember(body: object): string | null {
  let level: Array<[string, unknown]> = [['', body]];
  while (level.length > 0) {
    const next: Array<[string, unknown]> = [];
    for (const [path, value] of level) {
      if (typeof value !== 'object' || value === null) continue;
      if (Array.isArray(value)) {
        value.forEach((item, index) => next.push([path === '' ? String(index) : `${path}.${index}`, item]));
        continue;
      }
      for (const key of Object.keys(value)) {
        const at = path === '' ? key : `${path}.${key}`;
        if (key === '__proto__') return at;
        next.push([at, (value as Record<string, unknown>)[key]]);
      }
    }
    level = next;
  }
  return null;
}

/** One query parameter as a string; repeated parameters are refused rather than silently picking one. */
export function queryString(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw gatewayError('invalid_query', `Query parameter '${name}' must be given once.`, { param: name });
  return value;
}

/**
 * Refuses a query parameter the route does not take: a misspelt filter (`team` for `team_id`, `start` for `from`)
 * was ignored, and the list, usage or export answered as if unfiltered.
 */
export function onlyQueryParams(request: FastifyRequest, names: ReadonlySet<string>): void {
  const query = request.query as Record<string, unknown> | undefined;
  if (!query) return;
  for (const name of Object.keys(query)) {
    if (names.has(name)) continue;
    const shown = quoteInput(name, 60);
    throw gatewayError('invalid_query', `Unknown query parameter '${shown}': this takes ${names.size > 0 ? [...names].join(', ') : 'none'}.`, { param: shown });
  }
}

/**
 * The config versions an `If-Match` header names (its entity tags, `"12"` or weak `W/"12"`, as `GET /api/config`
 * answers them in `ETag`), or null when there is no condition (no header, or `*`). A tag that is no version is
 * left out: it matches nothing, so the write gets its 412.
 */
export function ifMatchVersions(request: FastifyRequest): number[] | null {
  const header = request.headers['if-match'];
  if (header === undefined) return null;
  const tags = (Array.isArray(header) ? header.join(',') : header).split(',').map((tag) => tag.trim()).filter(Boolean);
  if (tags.includes('*')) return null;
  return tags.flatMap((tag) => {
    const version = /^(?:W\/)?"(\d{1,15})"$/.exec(tag)?.[1];
    return version === undefined ? [] : [Number(version)];
  });
}
