import { randomBytes } from 'node:crypto';

/** Gemini names no tool call ids, so the gateway makes OpenAI-style ones for the client to answer with. */
export function toolCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

export function completionId(responseId: unknown): string {
  return `chatcmpl-${typeof responseId === 'string' && responseId !== '' ? responseId : randomBytes(12).toString('hex')}`;
}
