import type { ChatCompletionRequest, EmbeddingsRequest } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { modelNameError } from '../model-name-check.js';
import { gatewayError } from '../../core/errors.js';

/**
 * Checks the few fields the gateway itself depends on. Everything else is the provider's business: it is
 * forwarded as-is and the provider's own validation error comes back to the client.
 */
export function parseChatCompletionRequest(body: unknown): ChatCompletionRequest {
  if (!isRecord(body)) {
    throw gatewayError('invalid_body', 'The request body must be a JSON object.');
  }
  const { model, messages } = body;
  if (model === undefined || model === null || model === '') {
    throw gatewayError('missing_required_parameter', "Missing required parameter: 'model'.", { param: 'model' });
  }
  if (typeof model !== 'string') {
    throw gatewayError('invalid_type', "Invalid type for 'model': expected a string.", { param: 'model' });
  }
  const badName = modelNameError(model);
  if (badName !== null) throw gatewayError('invalid_model_name', badName, { param: 'model' });
  if (messages === undefined || messages === null) {
    throw gatewayError('missing_required_parameter', "Missing required parameter: 'messages'.", { param: 'messages' });
  }
  if (!Array.isArray(messages)) {
    throw gatewayError('invalid_type', "Invalid type for 'messages': expected an array.", { param: 'messages' });
  }
  if (messages.length === 0) {
    throw gatewayError('empty_array', "Invalid 'messages': empty array. Expected at least one message.", { param: 'messages' });
  }
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isRecord(message) || typeof message.role !== 'string') {
      throw gatewayError('invalid_type', `Invalid 'messages[${i}]': each message must be an object with a string 'role'.`, { param: `messages[${i}].role` });
    }
    const { content } = message;
    // Content is a string, null (an assistant turn with tool calls) or an array of part objects; anything else is
    // refused here, with its index, rather than by whichever adapter trips over it.
    if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        if (!isRecord(content[j])) {
          throw gatewayError('invalid_type', `Invalid 'messages[${i}].content[${j}]': expected an object (a content part such as {"type":"text","text":"..."}).`, { param: `messages[${i}].content[${j}]` });
        }
      }
    } else if (content !== undefined && content !== null && typeof content !== 'string') {
      throw gatewayError('invalid_type', `Invalid type for 'messages[${i}].content': expected a string or an array of content parts.`, { param: `messages[${i}].content` });
    }
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw gatewayError('invalid_type', "Invalid type for 'stream': expected a boolean.", { param: 'stream' });
  }
  checkStreamOptions(body.stream_options);
  return body as ChatCompletionRequest;
}

/**
 * `stream_options` is read and rewritten on the way out (usage is asked of the upstream for every stream), so a
 * value of the wrong type would not reach the provider to be refused: a string was spread into `{"0": ...}`, a
 * number or a non-boolean `include_usage` silently replaced. Refused here as OpenAI refuses it.
 */
function checkStreamOptions(options: unknown): void {
  if (options === undefined || options === null) return;
  if (!isRecord(options)) {
    throw gatewayError('invalid_type', "Invalid type for 'stream_options': expected an object.", { param: 'stream_options' });
  }
  const includeUsage = options.include_usage;
  if (includeUsage !== undefined && includeUsage !== null && typeof includeUsage !== 'boolean') {
    throw gatewayError('invalid_type', "Invalid type for 'stream_options.include_usage': expected a boolean.", { param: 'stream_options.include_usage' });
  }
}

/** Most fallbacks one request may name; a longer chain only adds latency to a failure. */
const MAX_REQUEST_FALLBACKS = 10;

/**
 * Takes tollgate's own `fallbacks` field (`["<provider>/<model>" or a route name, ...]`) off the request (a chat
 * completion's or an embeddings request's), so it never reaches an upstream that would reject an unknown field, and
 * returns it checked.
 */
export function takeRequestFallbacks(request: ChatCompletionRequest | EmbeddingsRequest): string[] {
  const raw = request.fallbacks;
  if (raw === undefined || raw === null) {
    // Deleting only what is there keeps the object's shape (and its fast property access) for everyone else.
    if ('fallbacks' in request) delete request.fallbacks;
    return [];
  }
  if (!Array.isArray(raw) || raw.some((item) => typeof item !== 'string' || item.trim() === '')) {
    throw gatewayError('invalid_type', "Invalid 'fallbacks': expected an array of model names such as \"openai/gpt-4o-mini\".", { param: 'fallbacks' });
  }
  if (raw.length > MAX_REQUEST_FALLBACKS) {
    throw gatewayError('too_many_fallbacks', `Invalid 'fallbacks': at most ${MAX_REQUEST_FALLBACKS} entries.`, { param: 'fallbacks' });
  }
  for (const name of raw as string[]) {
    const badName = modelNameError(name, 'fallbacks');
    if (badName !== null) throw gatewayError('invalid_model_name', badName, { param: 'fallbacks' });
  }
  delete request.fallbacks;
  return raw as string[];
}
