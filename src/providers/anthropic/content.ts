import type { GatewayError } from '../../core/errors.js';
import { type AnthropicBlock } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

function unsupported(what: string): GatewayError {
  return gatewayError('invalid_request', `anthropic: ${what}`, { param: 'messages' });
}

/** Anthropic copies `cache_control` markers from the part onto the block it becomes (prompt caching). */
function withCacheControl(block: AnthropicBlock, part: Record<string, unknown>): AnthropicBlock {
  return part.cache_control === undefined ? block : { ...block, cache_control: part.cache_control };
}

/** An `image_url` part: inline data travels as base64, a web URL as a URL source Anthropic fetches itself. */
function imageBlock(part: Record<string, unknown>): AnthropicBlock {
  const image = part.image_url;
  const url = typeof image === 'string' ? image : isRecord(image) && typeof image.url === 'string' ? image.url : null;
  if (!url) throw unsupported('an image_url part needs a url.');
  const inline = DATA_URL.exec(url);
  if (inline) return { type: 'image', source: { type: 'base64', media_type: inline[1], data: inline[2] } };
  if (url.startsWith('data:')) throw unsupported('image data URLs must be base64-encoded.');
  if (!/^https?:\/\//i.test(url)) throw unsupported('an image URL must be a data: URL or an http(s) URL.');
  return { type: 'image', source: { type: 'url', url } };
}

/** A `file` part carrying a PDF (or plain text) as a data URL becomes a document block. */
function documentBlock(part: Record<string, unknown>): AnthropicBlock {
  const file = isRecord(part.file) ? part.file : {};
  const data = typeof file.file_data === 'string' ? DATA_URL.exec(file.file_data) : null;
  if (!data) throw unsupported('file parts are supported only with inline base64 file_data (file ids are not).');
  const [, mediaType, payload] = data;
  if (mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: mediaType, data: payload } };
  if (mediaType === 'text/plain') {
    return { type: 'document', source: { type: 'text', media_type: mediaType, data: Buffer.from(payload ?? '', 'base64').toString('utf8') } };
  }
  throw unsupported(`file parts of type ${mediaType} are not supported (PDF and plain text are).`);
}

/**
 * Canonical content parts to Anthropic blocks. Empty text parts are left out (Anthropic rejects empty text
 * blocks); a part Anthropic cannot take (audio) fails the request rather than silently changing the question.
 */
export function contentBlocks(content: unknown, allowMedia: boolean): AnthropicBlock[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw unsupported('message content must be a string or an array of parts.');
  const blocks: AnthropicBlock[] = [];
  for (const part of content) {
    if (!isRecord(part)) throw unsupported('every content part must be an object.');
    const type = part.type;
    if (type === 'text' || type === 'refusal') {
      const text = type === 'text' ? part.text : part.refusal;
      if (typeof text !== 'string') throw unsupported(`a ${type} part needs a string ${type}.`);
      if (text !== '') blocks.push(withCacheControl({ type: 'text', text }, part));
    } else if (allowMedia && type === 'image_url') blocks.push(withCacheControl(imageBlock(part), part));
    else if (allowMedia && type === 'file') blocks.push(withCacheControl(documentBlock(part), part));
    else throw unsupported(`content parts of type '${quoteValue(type)}' are not supported here.`);
  }
  return blocks;
}
