import { isRecord } from '../../core/is-record.js';

type Json = Record<string, unknown>;

/**
 * What starts the encrypted_content of a reasoning item tollgate wrote to carry Gemini's thought signatures: a JSON
 * object of call_id -> signature as base64url. Gemini gives a function call (the first of a parallel batch) a
 * signature of its reasoning, and Gemini 3 wants it back with the call on the next turn, or it loses that reasoning
 * (tollgate's adapter then sends Google's skip placeholder so the turn is not refused). A Responses function_call item
 * has no field for it, but a reasoning item's encrypted_content is what clients hand back untouched (the Vercel AI SDK
 * with store: false, a stored conversation by previous_response_id), as for Claude's signed thinking.
 */
const SIGNATURES_PREFIX = 'tg_gemini_signatures.';

/**
 * Bounds on what a client hands back (it writes this text): an encrypted_content longer than this is not one tollgate
 * wrote (a signature is a few KB), and is not decoded at all.
 */
const MAX_ENCRYPTED_CHARS = 1 << 20;

/** A canonical tool call's thought signature (`extra_content.google.thought_signature`, set by the Gemini adapter). */
export function thoughtSignatureOf(call: unknown): string | undefined {
  if (!isRecord(call) || !isRecord(call.extra_content) || !isRecord(call.extra_content.google)) return undefined;
  const signature = call.extra_content.google.thought_signature;
  return typeof signature === 'string' && signature !== '' ? signature : undefined;
}

/** One call's thought signature as a reasoning item's encrypted_content (see SIGNATURES_PREFIX). */
export function encryptedSignature(callId: string, signature: string): string {
  return SIGNATURES_PREFIX + Buffer.from(JSON.stringify({ [callId]: signature })).toString('base64url');
}

/**
 * Adds the signatures a reasoning item's encrypted_content carries, when tollgate wrote it (see encryptedSignature),
 * to `into` (call_id -> signature). Anything else (another prefix, not base64url JSON of an object, entries that are
 * not strings) adds nothing: the call then goes without its signature, as before.
 */
export function readSignatures(encrypted: unknown, into: Map<string, string>): void {
  if (typeof encrypted !== 'string' || !encrypted.startsWith(SIGNATURES_PREFIX) || encrypted.length > MAX_ENCRYPTED_CHARS) return;
  let map: unknown;
  try {
    map = JSON.parse(Buffer.from(encrypted.slice(SIGNATURES_PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    return;
  }
  if (!isRecord(map)) return;
  // A loop over own keys into a Map: a key such as __proto__ is only a call id here.
  for (const [callId, signature] of Object.entries(map)) if (typeof signature === 'string' && signature !== '') into.set(callId, signature);
}

/**
 * Puts each signature back on the assistant tool calls of the same id, where the Gemini adapter reads it. Only the
 * calls' own objects are changed: messagesOf made them for this request.
 */
export function restoreSignatures(messages: readonly Json[], signatures: ReadonlyMap<string, string>): void {
  if (signatures.size === 0) return;
  for (const message of messages) {
    if (message.role !== 'assistant' || !Array.isArray(message.tool_calls)) continue;
    for (const call of message.tool_calls) {
      if (!isRecord(call) || typeof call.id !== 'string') continue;
      const signature = signatures.get(call.id);
      if (signature !== undefined) call.extra_content = { google: { thought_signature: signature } };
    }
  }
}
