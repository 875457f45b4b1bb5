import type { VendorDefinition } from '../core/provider.js';

/**
 * A configured base URL (environment, file or API) read the way the vendor's own SDK reads it, and also in the
 * other common form, so a value copied from either works.
 *
 * Each vendor row names the path its API lives under (`versionPath`: `/v1`, `/openai/v1`, `/v1beta`, ...), and its
 * `defaultBaseUrl` is its SDK's default, which either includes that path or not:
 *
 * - SDK base URL without the version path (Anthropic `https://api.anthropic.com`, Gemini, Cohere, Groq, Mistral,
 *   Cerebras, Ollama, Vertex, Azure OpenAI): the SDK always appends it, so tollgate does too, unless the URL already
 *   ends with it or with any version segment (`/v1`, `/v2`, `/v1beta`): `https://api.anthropic.com` and
 *   `https://api.anthropic.com/v1` both reach `/v1/messages`, and so does a proxy prefix (`http://host/anthropic`).
 * - SDK base URL with the version path (OpenAI `https://api.openai.com/v1` and most OpenAI-compatible vendors): the
 *   SDK appends nothing, so a URL with a path is used as written (`http://host/proxy/v1`, a gateway's
 *   `.../openai`); only a bare origin (`http://host:8000`) gets the version path, as there it can mean nothing else.
 *
 * A trailing slash never matters. Applied once when a provider is resolved, never per request.
 */

/** A path segment that names an API version: `v1`, `v2`, `v1beta`, `v1beta1`, `v1alpha`. */
const VERSION_SEGMENT = /\/v\d+(?:(?:alpha|beta)\d*)?$/i;

/** `scheme://authority`, the path, and any query or fragment, without parsing (templates such as `{region}` stay as written). */
const PARTS = /^([a-z][a-z\d+.-]*:\/\/[^/?#]*)([^?#]*)(.*)$/is;

function trimSlashes(path: string): string {
  return path.replace(/\/+$/, '');
}

/** Whether the vendor's SDK writes its base URL with the version path (the table's default is the SDK's). */
export function sdkBaseUrlHasVersion(vendor: Pick<VendorDefinition, 'defaultBaseUrl' | 'versionPath'>): boolean {
  const version = vendor.versionPath;
  if (!version) return true;
  const path = PARTS.exec(vendor.defaultBaseUrl)?.[2] ?? '';
  return trimSlashes(path).toLowerCase().endsWith(version.toLowerCase());
}

/**
 * A configured base URL's query (`?api_key=...`, an API gateway's `?subscription-key=...`) apart from the rest: the
 * adapters append operation paths to the rest, and the call puts the query after them (`withBaseQuery`), where an
 * upstream reads it. A fragment is dropped (it is never sent).
 */
export function splitBaseQuery(baseUrl: string): { url: string; query: string } {
  const trimmed = baseUrl.trim();
  const hash = trimmed.indexOf('#');
  const withoutFragment = hash === -1 ? trimmed : trimmed.slice(0, hash);
  const question = withoutFragment.indexOf('?');
  if (question === -1) return { url: withoutFragment, query: '' };
  return { url: withoutFragment.slice(0, question), query: withoutFragment.slice(question + 1) };
}

/** An operation URL with the base URL's query added (after the operation's own, `?alt=sse`, `?api-version=`). */
export function withBaseQuery(url: string, query: string | undefined): string {
  if (!query) return url;
  return `${url}${url.includes('?') ? '&' : '?'}${query}`;
}

/** The base URL as configured again: the resolved one and its query. */
export function baseUrlWithQuery(provider: { baseUrl: string; baseQuery?: string }): string {
  return provider.baseQuery ? `${provider.baseUrl}?${provider.baseQuery}` : provider.baseUrl;
}

/**
 * The URL the adapter appends operation paths to (`/chat/completions`, `/messages`, `/models/x:generateContent`):
 * the configured base URL with the vendor's version path added when the vendor's convention says it is missing.
 */
export function apiRoot(baseUrl: string, vendor: Pick<VendorDefinition, 'defaultBaseUrl' | 'versionPath'>): string {
  const parts = PARTS.exec(baseUrl.trim());
  if (!parts) return trimSlashes(baseUrl.trim());
  const [, origin = '', rawPath = '', rest = ''] = parts;
  const path = trimSlashes(rawPath);
  const version = vendor.versionPath ? trimSlashes(vendor.versionPath) : '';
  // A query is split off before (splitBaseQuery); what is left here (a fragment) would end up before the operation path.
  if (!version || rest !== '') return `${origin}${path}${rest}`;
  const present = path.toLowerCase().endsWith(version.toLowerCase()) || VERSION_SEGMENT.test(path);
  const add = path === '' || (!present && !sdkBaseUrlHasVersion(vendor));
  return `${origin}${path}${add ? version : ''}`;
}

/**
 * Why an environment base URL cannot be used, or null when it can: it must be an absolute http(s) URL with a host.
 * A value without a scheme (`api.anthropic.com`) would otherwise fail every request with no word in the log.
 */
export function baseUrlProblem(value: string): string | null {
  const trimmed = value.trim();
  if (!/^https?:\/\//i.test(trimmed)) return 'expected an http:// or https:// URL';
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    return 'not a valid URL';
  }
  if (parsed.hostname === '') return 'the URL has no host';
  return null;
}
