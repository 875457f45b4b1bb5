import type { ChatCompletionRequest, ChatMessage } from '../core/canonical.js';
import { isRecord } from '../core/is-record.js';

/**
 * How the dialects write a plain-text document's data in its canonical `file` part (an Anthropic document with a
 * text source, a Gemini text/plain inline part).
 */
const PLAIN_TEXT_DATA = 'data:text/plain;base64,';

function plainTextData(part: unknown): string | null {
  if (!isRecord(part) || part.type !== 'file' || !isRecord(part.file)) return null;
  const data = part.file.file_data;
  return typeof data === 'string' && data.startsWith(PLAIN_TEXT_DATA) ? data.slice(PLAIN_TEXT_DATA.length) : null;
}

/** Whether a message holds a plain-text document. */
function holdsTextDocument(message: ChatMessage): boolean {
  return message.role === 'user' && Array.isArray(message.content) && message.content.some((part) => plainTextData(part) !== null);
}

/**
 * The message with its plain-text documents as text parts, for formats that take no text file: OpenAI's Chat
 * Completions takes PDFs only as `file` parts and says to send a text file's contents as a text part
 * (https://developers.openai.com/api/docs/guides/file-inputs), other OpenAI-format servers take no files at all,
 * and Cohere takes no file (Bedrock takes a txt document, but its text works for every Bedrock model family). The
 * model reads the same text either way.
 */
function textDocumentsAsText(message: ChatMessage): ChatMessage {
  if (!holdsTextDocument(message)) return message;
  const parts = (message.content as unknown[]).map((part) => {
    const data = plainTextData(part);
    return data === null ? part : { type: 'text', text: Buffer.from(data, 'base64').toString('utf8') };
  });
  return { ...message, content: parts };
}

/** Formats whose adapters take a plain-text document as a file (a document block, an inline text/plain part). */
const TAKES_TEXT_FILES = new Set(['anthropic', 'vertex', 'gemini']);

/** The request as an attempt on an upstream of `format` takes its plain-text documents (see textDocumentsAsText). */
export function textDocumentsFor(request: ChatCompletionRequest, format: string): ChatCompletionRequest {
  if (TAKES_TEXT_FILES.has(format) || !request.messages.some(holdsTextDocument)) return request;
  return { ...request, messages: request.messages.map(textDocumentsAsText) };
}
