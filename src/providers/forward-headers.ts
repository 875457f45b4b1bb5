import type { IncomingHttpHeaders } from 'node:http';
import type { Target, UpstreamRequest } from '../core/provider.js';
import { platformBetaHeader } from './platform-betas.js';

/**
 * Headers a vendor's own SDK sends for the vendor to read, forwarded when the request goes to that vendor:
 * OpenAI's organization, project, beta opt-ins, idempotency key and client request id (also Azure OpenAI's);
 * Anthropic's version and beta flags. The Anthropic ones only come from `/anthropic`, where the body is in the
 * version the client named; a request translated from another dialect is built for the version the adapter speaks.
 */
interface VendorHeaders {
  names: readonly string[];
  dialects: readonly string[] | null;
  models?: RegExp;
  /** A header's value as the vendor takes it (undefined: not sent). */
  rewrite?: (name: string, value: string) => string | undefined;
}

/** Longest `X-Client-Request-Id` OpenAI takes (printable ASCII only). */
const CLIENT_REQUEST_ID_CHARS = 512;

/**
 * A client's `X-Client-Request-Id` as OpenAI takes it (printable ASCII, at most 512 characters), else not sent. Not
 * a 400: the id is only for looking the request up in the vendor's logs, and the same request may go to a target that
 * does not read it at all; sent as it came, OpenAI would refuse the whole request for it.
 */
function clientRequestId(name: string, value: string): string | undefined {
  if (name !== 'x-client-request-id') return value;
  return value.length <= CLIENT_REQUEST_ID_CHARS && /^[\x20-\x7e]+$/.test(value) ? value : undefined;
}

const VENDOR_HEADERS: Record<string, VendorHeaders> = {
  openai: { names: ['openai-organization', 'openai-project', 'openai-beta', 'idempotency-key', 'x-client-request-id'], dialects: null, rewrite: clientRequestId },
  // Azure OpenAI serves OpenAI's API to the same SDK (its AzureOpenAI client), whose callers set the id the same way.
  azure: { names: ['x-client-request-id'], dialects: null, rewrite: clientRequestId },
  anthropic: { names: ['anthropic-beta', 'anthropic-version'], dialects: ['anthropic'] },
  // Claude on Vertex AI takes its beta opt-ins in the anthropic-beta header too; its version goes in the body
  // (anthropic_version: vertex-2023-10-16), so a client's anthropic-version is not sent. Gemini models get neither.
  // Only the flags Vertex serves go: one it does not know fails the whole request (platform-betas.ts).
  vertex: { names: ['anthropic-beta'], dialects: ['anthropic'], models: /^claude/, rewrite: (_name, value) => platformBetaHeader('vertex', value) },
};

/** Vendor headers that go upstream but cannot change an answer (a retry's idempotency key, the client's request id). */
const NOT_ANSWER_SHAPING: ReadonlySet<string> = new Set(['idempotency-key', 'x-client-request-id']);

/**
 * The vendor headers forwarded upstream that can change an answer (beta opt-ins, organization, project, API
 * version): what a response cache must key on besides the body.
 */
export const ANSWER_SHAPING_HEADERS: readonly string[] = [...new Set(Object.values(VENDOR_HEADERS).flatMap((vendor) => vendor.names))].filter(
  (name) => !NOT_ANSWER_SHAPING.has(name),
);

/**
 * Headers that are never forwarded, whatever an operator lists: the client's credential for tollgate (a virtual
 * key must not reach a provider), the provider credentials tollgate sets, and what describes this hop only.
 */
export const NEVER_FORWARDED: ReadonlySet<string> = new Set([
  'authorization',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'proxy-authorization',
  'cookie',
  'host',
  'connection',
  'keep-alive',
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'x-tollgate-provider-key',
  // The LiteLLM proxy's header for the virtual key (read by the /litellm mount).
  'x-litellm-api-key',
]);

function valueOf(headers: Readonly<IncomingHttpHeaders>, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Whether the operator set this header on the provider themselves (their value wins over the client's). */
function operatorSets(target: Target, name: string): boolean {
  for (const key in target.provider.headers) if (key.toLowerCase() === name) return true;
  return false;
}

/**
 * Adds to the built upstream request the client headers meant for its vendor, then those the operator allows for
 * every provider (`settings.forward_headers`). They replace the vendor's recommended defaults (a client's
 * `anthropic-version`), never the operator's own headers or the credential.
 */
export function forwardClientHeaders(
  built: UpstreamRequest,
  target: Target,
  dialect: string,
  clientHeaders: Readonly<IncomingHttpHeaders>,
  allowList: readonly string[],
): void {
  const vendor = VENDOR_HEADERS[target.provider.vendor.id];
  const names =
    vendor && (vendor.dialects === null || vendor.dialects.includes(dialect)) && (!vendor.models || vendor.models.test(target.model)) ? vendor.names : null;
  if (names) for (const name of names) copy(built, target, clientHeaders, name, vendor?.rewrite);
  for (const name of allowList) if (!names?.includes(name)) copy(built, target, clientHeaders, name);
}

function copy(built: UpstreamRequest, target: Target, clientHeaders: Readonly<IncomingHttpHeaders>, name: string, rewrite?: VendorHeaders['rewrite']): void {
  const sent = valueOf(clientHeaders, name);
  const value = sent === undefined || !rewrite ? sent : rewrite(name, sent);
  if (value === undefined || NEVER_FORWARDED.has(name) || operatorSets(target, name)) return;
  // The built headers may spell a vendor default in another case; one spelling goes upstream.
  for (const key of Object.keys(built.headers)) if (key !== name && key.toLowerCase() === name) delete built.headers[key];
  built.headers[name] = value;
}

/** Where providers put the id of the request on their side, in the order they are looked for. */
const UPSTREAM_ID_HEADERS = ['x-request-id', 'request-id', 'x-amzn-requestid', 'apim-request-id', 'x-goog-request-id', 'x-trace-id'];

/** The upstream's own id for the exchange, shown to the client as `x-upstream-request-id` (bounded in length). */
export function upstreamRequestId(headers: Readonly<IncomingHttpHeaders>): string | null {
  for (const name of UPSTREAM_ID_HEADERS) {
    const value = headers[name];
    const text = Array.isArray(value) ? value[0] : value;
    if (text !== undefined && text !== '') return text.length > 200 ? text.slice(0, 200) : text;
  }
  return null;
}
