import { REDACTED } from '../core/redact-secrets.js';
import { GatewayError } from '../core/errors.js';
import { quoteInput, UPSTREAM_MESSAGE_CHARS } from '../core/quote-input.js';
import { gatewayError, withChanges } from '../core/errors.js';
import { isRecord } from '../core/is-record.js';
import type { Target } from '../core/provider.js';
import { isSensitiveHeader, urlCredentials } from '../core/credential-names.js';
import { baseUrlWithQuery } from './base-url.js';

type Headers = Record<string, string | string[] | undefined>;

/** Statuses after which another attempt may succeed: timeouts, conflicts, rate limits and server faults. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The status an error event inside a stream stands for when its type says the request itself is at fault (an invalid
 * request, one too large): another try, on that target or after a wait, gets the same, as after that HTTP status.
 * Null for any other type (a server error, an overload, a rate limit, a type tollgate does not know): the stream broke
 * down, a retryable 502. Gemini's events state their status as a code and are read by it (gemini/errors.ts).
 */
export function streamErrorClientStatus(type: string | null | undefined): number | null {
  if (type === 'invalid_request_error') return 400;
  if (type === 'request_too_large') return 413;
  return null;
}

/** The upstream answered something tollgate cannot read; another attempt may fare better. */
export function invalidUpstreamBody(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

const PASSED_HEADERS = ['retry-after', 'retry-after-ms'];

/** Headers of an upstream error the client needs in order to behave well (back off). */
export function passedErrorHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = headerValue(headers, name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function asString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * tollgate's words for an upstream error answer that carries no message of its own. Messages the provider wrote
 * go to the client as written; which provider and how many attempts travel in the `x-tollgate-*` headers.
 */
export function noMessage(provider: string, status: number): string {
  return `${provider} answered HTTP ${status} without an error message.`;
}

/** The OpenAI-style error type for an upstream status, when the upstream's body names none. */
export function defaultTypeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'upstream_error';
  return 'invalid_request_error';
}

/** How much of an HTML page is searched for its title or heading. */
const HTML_SCAN_CHARS = 16_384;
const HTML_SUMMARY_CHARS = 200;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

/** The text inside the first `<tag ...>...</tag>` of `lower`/`html` (same text, one lower-cased), tags stripped. */
function elementText(html: string, lower: string, tag: string): string | null {
  let from = 0;
  for (;;) {
    const open = lower.indexOf(`<${tag}`, from);
    if (open === -1) return null;
    const after = lower.charCodeAt(open + tag.length + 1);
    // `<h1>` or `<h1 class=...>`, not `<h1x>`; `<title>`, not `<titles>`.
    if (after === 0x3e /* > */ || after === 0x20 || after === 0x09 || after === 0x0a || after === 0x0d) {
      const start = lower.indexOf('>', open);
      if (start === -1) return null;
      const end = lower.indexOf(`</${tag}`, start);
      const text = plainText(html.slice(start + 1, end === -1 ? undefined : end));
      if (text !== '') return text;
    }
    from = open + 1;
  }
}

/** Tags removed, the common entities decoded, white space collapsed. */
function plainText(fragment: string): string {
  return fragment
    .replace(/<[^>]{0,1000}>/g, ' ')
    .replace(/&(#39|[a-z]{2,5});/gi, (whole, name: string) => ENTITIES[name.toLowerCase()] ?? whole)
    .replace(/\s+/g, ' ')
    .trim();
}

function isHtml(headers: Headers, bodyText: string): boolean {
  const type = headerValue(headers, 'content-type');
  if (type !== undefined && /^\s*text\/html\b/i.test(type)) return true;
  for (let i = 0; i < bodyText.length; i++) {
    const code = bodyText.charCodeAt(i);
    // Leading white space (and a byte-order mark) aside, does the body open with a tag?
    if (code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d || code === 0xfeff) continue;
    return code === 0x3c /* < */;
  }
  return false;
}

/**
 * A proxy's or load balancer's HTML (or XML) error page in one short line: its `<title>`, else its first
 * heading, else an XML `<Message>`, else the start of its text; null when the body is not markup.
 */
export function markupSummary(headers: Headers, bodyText: string): string | null {
  if (!isHtml(headers, bodyText)) return null;
  const html = bodyText.length > HTML_SCAN_CHARS ? bodyText.slice(0, HTML_SCAN_CHARS) : bodyText;
  const lower = html.toLowerCase();
  let text = elementText(html, lower, 'title');
  for (let level = 1; text === null && level <= 6; level++) text = elementText(html, lower, `h${level}`);
  text ??= elementText(html, lower, 'message') ?? plainText(html.replace(/<(script|style)\b[\s\S]{0,100000}?<\/\1>/gi, ' '));
  return quoteInput(text, HTML_SUMMARY_CHARS);
}

/** An upstream error answered as an HTML page: status and the page's title, never the page itself. */
function markupError(provider: string, status: number, headers: Headers, summary: string): GatewayError {
  return new GatewayError({
    status,
    type: defaultTypeFor(status),
    code: null,
    message: `${provider}: upstream answered HTTP ${status} with an HTML page${summary === '' ? '' : ` ("${summary}")`}.`,
    retryable: isRetryableStatus(status),
    headers: passedErrorHeaders(headers),
    upstreamStatus: status,
  });
}

/**
 * Reads an upstream error answer with the provider's own reader (`read`), after two checks every provider
 * shares: an HTML page is summarised rather than pasted, and a message longer than 1,000 characters is cut.
 */
export function upstreamError(
  provider: string,
  status: number,
  headers: Headers,
  bodyText: string,
  read: (bodyText: string) => GatewayError,
): GatewayError {
  const summary = markupSummary(headers, bodyText);
  if (summary !== null) return markupError(provider, status, headers, summary);
  return boundedMessage(read(bodyText));
}

/** The error with its message cut to what a client needs (1,000 characters). */
export function boundedMessage(error: GatewayError): GatewayError {
  const max = UPSTREAM_MESSAGE_CHARS;
  // The slack lets a message a reader already cut (with its "… (N characters)") through unchanged.
  if (error.message.length <= max + 32) return error;
  return withChanges(error, { message: quoteInput(error.message, max) });
}

/** Credentials shorter than this are not looked for (a short one would match ordinary words). */
const SHORTEST_CREDENTIAL = 8;

/** `value` with every string in it (a Gemini error's details: arrays and objects, keys too) scrubbed by `scrub`. */
function scrubStrings(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === 'string') return scrub(value);
  if (Array.isArray(value)) return value.map((item) => scrubStrings(item, scrub));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [scrub(key), scrubStrings(item, scrub)]));
  }
  return value;
}

/** Whether any string in `value` contains `needle`. */
function holds(value: unknown, needle: string): boolean {
  if (typeof value === 'string') return value.includes(needle);
  if (Array.isArray(value)) return value.some((item) => holds(item, needle));
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([key, item]) => key.includes(needle) || holds(item, needle));
  return false;
}

/**
 * What an attempt to `target` sends that is a secret: its key, the values of the provider's credential headers (a
 * gateway's `cf-aig-authorization`, APIM's `Ocp-Apim-Subscription-Key`; with and without their scheme, `Bearer`),
 * and the credentials of its base URL (a user and password, a `?api_key=`). Read only when an attempt failed.
 */
export function targetCredentials(target: Target): string[] {
  const credentials = target.apiKey === null ? [] : [target.apiKey];
  for (const [name, value] of Object.entries(target.provider.headers)) {
    if (!isSensitiveHeader(name)) continue;
    credentials.push(value);
    const space = value.indexOf(' ');
    if (space !== -1) credentials.push(value.slice(space + 1).trim());
  }
  credentials.push(...urlCredentials(baseUrlWithQuery(target.provider)));
  // Longest first: a token inside a longer credential (`Bearer <token>`) must not leave the rest of that one behind.
  return [...new Set(credentials)].filter((value) => value.length >= SHORTEST_CREDENTIAL).sort((a, b) => b.length - a.length);
}

/**
 * The error without the credentials the attempt sent (`targetCredentials`): some upstreams quote the key they were
 * given in an auth error, and what the error carries reaches the client, the request log, traces and alerts. Every
 * occurrence is replaced, in the message and in every other field read from the upstream's body (its type, code and
 * param, a Gemini upstream's `details`, which a `/genai` client is shown as written, and an OpenAI-shaped upstream's
 * extra fields, which an OpenAI client is shown as written).
 */
export function withoutCredentials(error: GatewayError, credentials: readonly string[]): GatewayError {
  let out = error;
  for (const credential of credentials) out = withoutCredential(out, credential);
  return out;
}

/** The error without one credential (see `withoutCredentials`). */
export function withoutCredential(error: GatewayError, credential: string | null): GatewayError {
  if (credential === null || credential.length < SHORTEST_CREDENTIAL) return error;
  const inDetails = error.details !== null && holds(error.details, credential);
  const inFields = error.upstreamFields !== null && holds(error.upstreamFields, credential);
  if (!inDetails && !inFields && !holds([error.message, error.operatorMessage, error.type, error.code, error.param], credential)) return error;
  const scrub = (text: string): string => text.replaceAll(credential, REDACTED);
  return withChanges(error, {
    type: scrub(error.type),
    code: error.code === null ? null : scrub(error.code),
    param: error.param === null ? null : scrub(error.param),
    message: scrub(error.message),
    details: inDetails ? (scrubStrings(error.details, scrub) as unknown[]) : error.details,
    upstreamFields: inFields ? (scrubStrings(error.upstreamFields, scrub) as Record<string, unknown>) : error.upstreamFields,
    operatorMessage: typeof error.operatorMessage === 'string' ? scrub(error.operatorMessage) : null,
  });
}

/**
 * OpenRouter's error for a failure of the provider it routed to says only "Provider returned error" and keeps
 * that provider's own answer in `error.metadata.raw` (with `provider_name`): the message gets it, so the client
 * reads why the request failed.
 */
function withProviderDetail(message: string | null, metadata: unknown): string | null {
  if (metadata === null || typeof metadata !== 'object') return message;
  const meta = metadata as Record<string, unknown>;
  const raw = typeof meta.raw === 'string' ? meta.raw.trim() : meta.raw !== undefined && meta.raw !== null ? JSON.stringify(meta.raw) : '';
  if (raw === '' || (message !== null && message.includes(raw))) return message;
  const source = asString(meta.provider_name);
  const detail = source === null ? raw : `${source}: ${raw}`;
  return message === null ? detail : `${message} (${detail})`;
}

/** An error code as a string: some vendors write it as a number (Perplexity's, vLLM's HTTP status). */
function codeText(code: unknown): string | null {
  return asString(code) ?? (typeof code === 'number' ? String(code) : null);
}

/** FastAPI's `{"detail": ...}` (a string, or pydantic's list of problems as JSON); null when `value` has none. */
function detailText(value: unknown): string | null {
  if (!isRecord(value) || value.detail === undefined || value.detail === null) return null;
  return asString(value.detail) ?? JSON.stringify(value.detail);
}

/** The four fields of OpenAI's error object; the gateway reads them itself, the rest of the object is passed on. */
const OPENAI_ERROR_FIELDS = new Set(['message', 'type', 'param', 'code']);

/** Most bytes of extra fields passed on (as JSON): they explain a refusal; a larger set is left out whole. */
const MAX_EXTRA_FIELDS_BYTES = 8_192;

/**
 * The fields of an OpenAI-shaped error object beyond its four (Azure's `status` and `innererror`, which names the
 * content filter category that fired and its severity), when there are some and they are of a reasonable size.
 */
function extraFields(err: Record<string, unknown>): Record<string, unknown> | null {
  const extra = Object.fromEntries(Object.entries(err).filter(([key]) => !OPENAI_ERROR_FIELDS.has(key)));
  if (Object.keys(extra).length === 0) return null;
  return JSON.stringify(extra).length <= MAX_EXTRA_FIELDS_BYTES ? extra : null;
}

/**
 * Reads the error bodies providers actually send: OpenAI's `{"error":{message,type,param,code}}` (OpenRouter's
 * with the routed provider's own answer in `metadata.raw`, see withProviderDetail), the bare
 * `{"error":"..."}` of some vendors, OpenAI's fields at the top level (Mistral's `{"object":"error","message",...}`,
 * whose message may itself be `{"detail": [...]}`), FastAPI's `{"detail": ...}`, or plain text. The
 * upstream status and message are kept as the provider wrote them (the `x-tollgate-provider` header says who
 * said it). An HTML page is summarised (title or first heading) and a long message is cut. With `keepFields` (the
 * OpenAI-compatible adapters, whose clients of the OpenAI format read the same error object), the fields of
 * OpenAI's `error` object beyond its four are kept as `upstreamFields`; a reader of another provider's format, whose
 * fallback this also is, keeps none.
 */
export function upstreamErrorFromBody(provider: string, status: number, headers: Headers, bodyText: string, options: { keepFields?: boolean } = {}): GatewayError {
  const summary = markupSummary(headers, bodyText);
  if (summary !== null) return markupError(provider, status, headers, summary);
  let message: string | null = null;
  let type: string | null = null;
  let code: string | null = null;
  let param: string | null = null;
  let upstreamFields: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(bodyText);
    if (parsed && typeof parsed === 'object') {
      const record = parsed as Record<string, unknown>;
      const inner = record.error;
      if (inner && typeof inner === 'object') {
        const err = inner as Record<string, unknown>;
        message = withProviderDetail(asString(err.message), err.metadata);
        type = asString(err.type);
        code = codeText(err.code);
        param = asString(err.param);
        if (options.keepFields === true) upstreamFields = extraFields(err);
      } else {
        message = asString(inner) ?? asString(record.message) ?? detailText(record) ?? detailText(record.message);
        // Mistral, vLLM and Cerebras write OpenAI's fields at the top level, beside the message (Mistral's 422 with
        // pydantic's {"detail": [...]} as its message): their type, code and param are the error's too.
        if (record.message !== undefined && record.message !== null) {
          type = asString(record.type);
          code = codeText(record.code);
          param = asString(record.param);
        }
      }
    }
  } catch {
    message = bodyText.trim().slice(0, 500) || null;
  }
  return new GatewayError({
    status,
    type: type === null ? defaultTypeFor(status) : quoteInput(type, 100),
    code: code === null ? null : quoteInput(code, 100),
    param: param === null ? null : quoteInput(param, 200),
    message: message === null ? noMessage(provider, status) : quoteInput(message, UPSTREAM_MESSAGE_CHARS),
    retryable: isRetryableStatus(status),
    headers: passedErrorHeaders(headers),
    upstreamStatus: status,
    upstreamFields,
  });
}
