import { hash } from 'node:crypto';
import type { ChatCompletionRequest, ChatMessage } from '../core/canonical.js';
import type { CachePolicy } from '../core/config.js';

/**
 * Request fields that do not change the answer: how it is delivered (stream), who asked (user, metadata), whether
 * the provider keeps it (store). Everything else the client sent is part of the exact key, so a field tollgate
 * does not know yet (a new sampling option) separates answers instead of mixing them.
 */
const DELIVERY_FIELDS = new Set(['stream', 'stream_options', 'user', 'metadata', 'store', 'service_tier', 'prompt_cache_key', 'safety_identifier', 'fallbacks']);

/** What the cache knows of one chat request: its keys, and the text the semantic tier compares. */
export interface CacheKeys {
  /** The whole request (but delivery fields) and its scope: equal keys ask the same thing. */
  exact: string;
  /**
   * Everything but the last user message's text: system prompt, tools, tool choice, response format, sampling
   * parameters, earlier turns, model and scope. A semantic match must have the same one, so a paraphrase is only
   * ever a paraphrase of the last question in the same conversation under the same instructions.
   */
  semanticScope: string;
  /** The conversation as text (earlier turns and the last question), embedded for the semantic tier; null: no semantic tier. */
  conversation: string | null;
  /** The last user message's text (the lexical check compares it). */
  question: string | null;
}

/** Why a request is not cached, or null when it is. */
export function uncacheableReason(request: ChatCompletionRequest, policy: CachePolicy): string | null {
  if (typeof request.n === 'number' && request.n > 1) return 'n > 1 asks for several different answers';
  const sampled = (typeof request.temperature === 'number' && request.temperature > 0) || (typeof request.top_p === 'number' && request.top_p < 1);
  if (sampled && !policy.cacheSampled) return 'temperature > 0 or top_p < 1 asks for varied answers (cache_sampled is off)';
  if (request.messages.length === 0) return 'no messages';
  return null;
}

/**
 * The keys of a chat request under a scope (`team:<id>`, `key:<id>`, `global`) and a model or route name.
 * Objects are serialised with sorted keys, so the same request written in another field order has the same key.
 * `semantic`: the request's policy uses the semantic tier (else only `exact` and `question` are made).
 */
export function cacheKeysOf(
  request: ChatCompletionRequest,
  scope: string,
  semantic = true,
  nativeBody: Record<string, unknown> | null = null,
  nativeVersion: string | null = null,
): CacheKeys {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request)) if (!DELIVERY_FIELDS.has(name)) fields[name] = value;
  // A client body that goes upstream as it is (native pass-through) may ask for more than its canonical form says
  // (server tools, safety settings, top_k): its own fields are part of what it asks. So is the API version it is
  // sent to (Gemini's v1beta, v1, v1alpha take and answer different fields).
  if (nativeBody !== null) fields[NATIVE_FIELD] = withoutDelivery(nativeBody, null);
  if (nativeBody !== null && nativeVersion !== null) fields[NATIVE_VERSION_FIELD] = nativeVersion;
  // Whether the provider keeps the answer for a later turn to name (OpenAI's Responses API: previous_response_id, item
  // ids) is part of a native body's answer: one it did not keep (store: false) would fail that turn.
  if (nativeBody !== null && nativeBody.store !== undefined) fields[NATIVE_STORE_FIELD] = nativeBody.store;
  const exact = digest(['exact', scope, fields]);
  const lastUser = lastUserIndex(request.messages);
  const question = lastUser === -1 ? null : textOf(request.messages[lastUser]?.content);
  if (lastUser === -1 || question === null) return { exact, semanticScope: '', conversation: null, question: null };
  // Without the semantic tier the scope and the conversation are never read (an answer stored without a vector is
  // never a semantic match, even once the tier is turned on): a second digest of the whole request saved per miss.
  if (!semantic) return { exact, semanticScope: '', conversation: null, question };
  const messages = request.messages.map((message, i) => (i === lastUser ? { ...message, content: '\u0000question' } : message));
  // The native body's conversation is the canonical messages' (already in the scope, the question left out).
  if (nativeBody !== null) fields[NATIVE_FIELD] = withoutDelivery(nativeBody, NATIVE_CONVERSATION_FIELDS);
  const semanticScope = digest(['semantic', scope, { ...fields, messages }]);
  const earlier = request.messages
    .slice(0, lastUser)
    .filter((message) => message.role !== 'system' && message.role !== 'developer')
    .map((message) => `${message.role}: ${textOf(message.content) ?? ''}`);
  // A single question is embedded as it is (as the threshold was calibrated); a conversation as its turns.
  const conversation = earlier.length === 0 ? question : [...earlier, `user: ${question}`].join('\n');
  return { exact, semanticScope, conversation, question };
}

function lastUserIndex(messages: ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user') return i;
  return -1;
}

/** A message's text: a string, or text parts only; null when it holds anything else (an image, audio, a file). */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts: string[] = [];
  for (const part of content as Array<{ type?: unknown; text?: unknown }>) {
    if (part?.type !== 'text' || typeof part.text !== 'string') return null;
    texts.push(part.text);
  }
  return texts.join('\n');
}

/** Where a native body's fields go in the key's object (a name no canonical field has). */
const NATIVE_FIELD = '\u0000native';
/** Where a native body's `store` goes in the key's object. */
const NATIVE_STORE_FIELD = '\u0000nativeStore';
/** Where the API version a native body is sent to goes in the key's object. */
const NATIVE_VERSION_FIELD = '\u0000nativeVersion';

/** The conversation fields of the native bodies (Anthropic's, Gemini's, the Responses API's input and instructions). */
const NATIVE_CONVERSATION_FIELDS: ReadonlySet<string> = new Set(['messages', 'system', 'contents', 'systemInstruction', 'system_instruction', 'input', 'instructions']);

function withoutDelivery(body: Record<string, unknown>, alsoLeftOut: ReadonlySet<string> | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) if (!DELIVERY_FIELDS.has(name) && !alsoLeftOut?.has(name)) out[name] = value;
  return out;
}

function digest(value: unknown): string {
  // One-shot `hash`: about half the cost of createHash().update().digest() for a short input (it runs per request).
  return hash('sha256', stableJson(value), 'base64url');
}

/**
 * JSON with object keys sorted at every level (in UTF-16 code unit order, as `<` compares them). Built by appending
 * to one string: it runs twice per cacheable request, and the entries/filter/sort/map/join version cost twice as
 * much (10 µs of a cache miss in a profile).
 */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + stableJson(value[i]);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    out += (out.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + stableJson(item);
  }
  return out + '}';
}
