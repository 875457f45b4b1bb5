/**
 * A tool result cut to `max_result_bytes`: the content blocks a client gets (text blocks shortened, other blocks
 * that no longer fit replaced by a note) and the one text a model reads, both within the cap.
 */
import { isRecord } from '../core/is-record.js';

export interface CappedResult {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  /** The result as one text for a model's tool message. */
  text: string;
  /** The size of the result as the server gave it (content and structured content, as JSON). */
  resultBytes: number;
  truncated: boolean;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The JSON size of a value; a value JSON cannot write (a cycle, a BigInt) counts as 0. */
export function jsonBytes(value: unknown): number {
  if (value === undefined) return 0;
  try {
    return byteLength(JSON.stringify(value) ?? '');
  } catch {
    return 0;
  }
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, never splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  if (byteLength(text) <= maxBytes) return text;
  const bytes = encoder.encode(text).subarray(0, maxBytes);
  // A character cut in two decodes as U+FFFD at the end: drop it (a genuine U+FFFD there is lost, harmlessly).
  return decoder.decode(bytes).replace(/\uFFFD+$/, '');
}

/** The bytes a character takes inside a JSON string as JSON.stringify writes it (escapes included). */
function jsonCharBytes(code: number): number {
  if (code === 0x22 || code === 0x5c) return 2; // \" and \\
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdfff) return 6; // a lone surrogate, written \udxxx (pairs are handled by the caller)
  return 3;
}

/**
 * The longest prefix of `text` whose JSON string content (what goes between the quotes, escapes included) fits in
 * `maxBytes`, never splitting a character: a result cut to fit `max_result_bytes` must still fit once written as
 * JSON, where a quote or a control character takes two to six bytes.
 */
export function cutJsonString(text: string, maxBytes: number): string {
  let used = 0;
  let at = 0;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    const next = at + 1 < text.length ? text.charCodeAt(at + 1) : 0;
    const pair = code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
    const bytes = pair ? 4 : jsonCharBytes(code);
    if (used + bytes > maxBytes) break;
    used += bytes;
    at += pair ? 2 : 1;
  }
  return text.slice(0, at);
}

/** What a model reads for one content block: its text, or a short description of what it is. */
function blockText(block: unknown): string {
  if (!isRecord(block)) return '';
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio':
      return `[${block.type}: ${typeof block.mimeType === 'string' ? block.mimeType : 'unknown type'}]`;
    case 'resource': {
      const resource = isRecord(block.resource) ? block.resource : {};
      if (typeof resource.text === 'string') return resource.text;
      return `[resource: ${typeof resource.uri === 'string' ? resource.uri : 'embedded'}]`;
    }
    case 'resource_link':
      return `[resource link: ${typeof block.uri === 'string' ? block.uri : ''}${typeof block.name === 'string' ? ` (${block.name})` : ''}]`;
    default:
      return `[${typeof block.type === 'string' ? block.type : 'unknown'} content]`;
  }
}

const MARKER = (resultBytes: number, maxBytes: number): string => `\n[truncated: the result was ${resultBytes} bytes; cut at ${maxBytes}]`;

/** The model's text within `maxBytes`, a marker saying it was cut included. */
function capText(text: string, resultBytes: number, maxBytes: number): { text: string; cut: boolean } {
  if (byteLength(text) <= maxBytes) return { text, cut: false };
  const marker = MARKER(resultBytes, maxBytes);
  return { text: cutUtf8(text, Math.max(0, maxBytes - byteLength(marker))) + (byteLength(marker) <= maxBytes ? marker : ''), cut: true };
}

/**
 * Caps a tool's answer at `maxBytes`: content blocks are kept in order while their JSON fits; a text block past the
 * budget is shortened, any other block past it replaced by a short text note; structured content is kept only
 * when it fits in what is left. The model's text (the blocks' texts, else the structured content as JSON) is cut
 * with a marker.
 */
export function capResult(content: readonly unknown[], structuredContent: Record<string, unknown> | undefined, maxBytes: number): CappedResult {
  const resultBytes = jsonBytes(content) + jsonBytes(structuredContent);
  const joined = content.map(blockText).filter((part) => part !== '').join('\n');
  const fullText = joined === '' && structuredContent ? (JSON.stringify(structuredContent) ?? '') : joined;
  const { text, cut } = capText(fullText, resultBytes, maxBytes);
  if (resultBytes <= maxBytes) return { content: [...content], ...(structuredContent ? { structuredContent } : {}), text, resultBytes, truncated: cut };

  const note = (dropped: number) => ({ type: 'text', text: `[truncated: ${dropped} content block(s) cut or left out; the result was ${resultBytes} bytes, over max_result_bytes ${maxBytes}]` });
  // The content array as JSON within the cap: its brackets, a comma between blocks, and room kept for the note
  // that says what was cut (when even the note does not fit, the blocks go without it).
  const noteBytes = jsonBytes(note(content.length)) + 1;
  const withNote = noteBytes + 2 <= maxBytes;
  let left = maxBytes - 2 - (withNote ? noteBytes : 0);
  const kept: unknown[] = [];
  let dropped = 0;
  for (const block of content) {
    const size = jsonBytes(block) + (kept.length > 0 ? 1 : 0);
    if (size <= left) {
      kept.push(block);
      left -= size;
      continue;
    }
    if (isRecord(block) && block.type === 'text' && typeof block.text === 'string') {
      // The block's JSON without its text, plus the room for some of its text (as JSON writes it, escapes included).
      const overhead = jsonBytes({ ...block, text: '' }) + (kept.length > 0 ? 1 : 0);
      const room = left - overhead;
      if (room > 0) {
        kept.push({ ...block, text: cutJsonString(block.text, room) });
        left = 0;
      }
    }
    dropped++;
  }
  if (dropped > 0 && withNote) kept.push(note(dropped));
  const structured = structuredContent && jsonBytes(structuredContent) <= left ? { structuredContent } : {};
  return { content: kept, ...structured, text, resultBytes, truncated: true };
}
