import type { GatewayError } from '../../core/errors.js';
import { invalidRequest } from './errors.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';

export interface DialectOptions {
  /**
   * Set by the lenient read (see lenient.ts): what the canonical form cannot express is recorded here and left
   * out instead of refused. Malformed input is refused either way.
   */
  untranslatable?: GatewayError[];
}

function unsupported(where: string, what: string): () => GatewayError {
  return () => invalidRequest(where, `${what} cannot be translated by the gateway.`);
}

/**
 * Refuses what the canonical form cannot express, or, in the lenient read, records it and returns null (left out).
 * The error is built only when it is thrown or is the first recorded (the one the read reports): a body of a million
 * blocks left out must not build, and hold, a million errors with their stack traces.
 */
export function cannotTranslate(options: DialectOptions, error: () => GatewayError): null {
  if (!options.untranslatable) throw error();
  if (options.untranslatable.length === 0) options.untranslatable.push(error());
  return null;
}

/**
 * `cache_control` rides on the canonical part so an adapter that reads it (Vertex AI's Claude) can put it back
 * (prompt caching); an attempt on any other format gets the part without it (markers.ts).
 */
function withCacheControl(part: Json, block: Json): Json {
  return block.cache_control !== undefined ? { ...part, cache_control: block.cache_control } : part;
}

function textOf(block: Json, where: string): string {
  if (typeof block.text !== 'string') throw invalidRequest(`${where}.text`, 'Field required');
  return block.text;
}

/** Anthropic's image sources as an OpenAI `image_url`: inline data as a data: URL, a web image by its URL. */
function imagePart(block: Json, where: string, options: DialectOptions): Json | null {
  const source = isRecord(block.source) ? block.source : null;
  if (!source) throw invalidRequest(`${where}.source`, 'Field required');
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || typeof source.data !== 'string') throw invalidRequest(`${where}.source`, 'base64 sources need media_type and data');
    return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string') throw invalidRequest(`${where}.source.url`, 'Field required');
    return { type: 'image_url', image_url: { url: source.url } };
  }
  return cannotTranslate(options, unsupported(`${where}.source`, `An image source of type '${quoteValue(source.type)}' (only base64 and url are)`));
}

/**
 * A document as an OpenAI `file` part with inline data, the one document form every file-capable provider
 * takes (the Anthropic adapter turns it back into a document block). Documents by URL or file id would need
 * the gateway to fetch them, so they are refused rather than silently dropped.
 */
function documentPart(block: Json, where: string, options: DialectOptions): Json | null {
  const source = isRecord(block.source) ? block.source : null;
  const title = typeof block.title === 'string' && block.title !== '' ? block.title : null;
  if (source?.type === 'base64' && source.media_type === 'application/pdf' && typeof source.data === 'string') {
    return { type: 'file', file: { filename: title ?? 'document.pdf', file_data: `data:application/pdf;base64,${source.data}` } };
  }
  if (source?.type === 'text' && typeof source.data === 'string') {
    const data = Buffer.from(source.data, 'utf8').toString('base64');
    return { type: 'file', file: { filename: title ?? 'document.txt', file_data: `data:text/plain;base64,${data}` } };
  }
  return cannotTranslate(options, unsupported(`${where}.source`, 'A document that is not an inline base64 PDF or plain text'));
}

/**
 * A tool_result's content (a string or blocks): its text, and its images and documents as canonical parts. A tool
 * message carries text only (Chat Completions takes no image in one), so the parts go to the user message that
 * follows the tool messages (messages.ts). Other blocks (search results, ...) have no canonical form.
 */
function toolResultContent(content: unknown, where: string, options: DialectOptions): { text: string; media: Json[] } {
  if (content === undefined || content === null) return { text: '', media: [] };
  if (typeof content === 'string') return { text: content, media: [] };
  if (!Array.isArray(content)) throw invalidRequest(`${where}.content`, 'Input should be a valid string or list');
  const texts: string[] = [];
  const media: Json[] = [];
  content.forEach((block: unknown, i) => {
    const at = `${where}.content.${i}`;
    if (isRecord(block) && block.type === 'text') texts.push(textOf(block, at));
    else if (isRecord(block) && (block.type === 'image' || block.type === 'document')) {
      const part = block.type === 'image' ? imagePart(block, at, options) : documentPart(block, at, options);
      if (part) media.push(part);
    } else cannotTranslate(options, unsupported(at, 'A tool_result block other than text, an image or a document'));
  });
  return { text: texts.join('\n'), media };
}

/**
 * A `tool_result` block as a canonical `tool` message (an error result says so, since OpenAI's shape has no flag),
 * and the images and documents it answered with, for the user message after it.
 */
export function toolMessage(block: Json, where: string, options: DialectOptions): { message: Json; media: Json[] } {
  if (typeof block.tool_use_id !== 'string' || block.tool_use_id === '') throw invalidRequest(`${where}.tool_use_id`, 'Field required');
  const { text, media } = toolResultContent(block.content, where, options);
  return { message: { role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error === true ? `Error: ${text}` : text }, media };
}

/** A `tool_use` block as a canonical tool call: the input object becomes the JSON arguments string. */
export function toolCall(block: Json, where: string): Json {
  if (typeof block.id !== 'string' || typeof block.name !== 'string') throw invalidRequest(where, 'tool_use blocks need an id and a name');
  return { id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } };
}

/** One user content block (not a tool_result) as a canonical content part; null when the lenient read left it out. */
export function userPart(block: Json, where: string, options: DialectOptions): Json | null {
  switch (block.type) {
    case 'text':
      return withCacheControl({ type: 'text', text: textOf(block, where) }, block);
    case 'image': {
      const part = imagePart(block, where, options);
      return part && withCacheControl(part, block);
    }
    case 'document': {
      const part = documentPart(block, where, options);
      return part && withCacheControl(part, block);
    }
    default:
      return cannotTranslate(options, unsupported(`${where}.type`, `A user content block of type '${quoteValue(block.type)}'`));
  }
}

/** A text block as a canonical text part (for system prompts and assistant turns). */
export function textPart(block: Json, where: string): Json {
  if (block.type !== 'text') throw invalidRequest(`${where}.type`, `Expected a text block, got '${quoteValue(block.type)}'`);
  return withCacheControl({ type: 'text', text: textOf(block, where) }, block);
}

/** Whether parts are only text without markers, so they can travel as a plain string every provider takes. */
export function plainText(parts: Json[]): boolean {
  return parts.every((part) => part.type === 'text' && part.cache_control === undefined);
}
