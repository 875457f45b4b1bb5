import { createHash } from 'node:crypto';
import type { ChatMessage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';

/**
 * Mistral's chat API takes a tool call id only as nine letters and digits: any other id in the history (OpenAI's
 * `call_...`, Anthropic's `toolu_...` from the /anthropic route, a fallback's earlier answer) fails the whole request
 * with 400 "Tool call id was X but must be a-z, A-Z, 0-9, with a length of 9." (code 3280). Its own ids pass
 * unchanged; another becomes nine characters of its hash, the same in the assistant's call and in the tool message
 * answering it, in this request and every later one, so the two still match. Mistral's answers never name an
 * earlier id, so nothing needs mapping back.
 */
const TAKEN = /^[a-zA-Z0-9]{9}$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function mistralToolCallId(id: string): string {
  if (TAKEN.test(id)) return id;
  const digest = createHash('sha256').update(id).digest();
  let out = '';
  for (let i = 0; i < 9; i++) out += ALPHABET[(digest[i] as number) % ALPHABET.length];
  return out;
}

/** The vendors whose chat API enforces those ids (by vendor id, a custom instance of the type included). */
export function takesOnlyNineCharToolIds(vendorId: string): boolean {
  return vendorId === 'mistral';
}

/** The message with its tool call ids as Mistral takes them; the message itself when it has none to change. */
export function withMistralToolCallIds(message: ChatMessage): ChatMessage {
  const fields = message as unknown as Record<string, unknown>;
  let changed: Record<string, unknown> | null = null;
  if (typeof fields.tool_call_id === 'string' && !TAKEN.test(fields.tool_call_id)) {
    changed = { ...fields, tool_call_id: mistralToolCallId(fields.tool_call_id) };
  }
  const calls = fields.tool_calls;
  if (Array.isArray(calls) && calls.some((call) => isRecord(call) && typeof call.id === 'string' && !TAKEN.test(call.id))) {
    const mapped = calls.map((call: unknown) => (isRecord(call) && typeof call.id === 'string' ? { ...call, id: mistralToolCallId(call.id) } : call));
    changed = { ...(changed ?? fields), tool_calls: mapped };
  }
  return (changed ?? message) as unknown as ChatMessage;
}
