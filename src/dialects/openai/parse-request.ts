import { GatewayError } from '../../errors.js';
import type { ChatCompletionRequest } from '../../core/canonical.js';
import { isRecord } from '../../is-record.js';
import { modelNameError } from '../model-name-check.js';

/**
 * Checks the few fields the gateway itself depends on. Everything else is the provider's business: it is
 * forwarded as-is and the provider's own validation error comes back to the client.
 */
export function parseChatCompletionRequest(body: unknown): ChatCompletionRequest {
  if (!isRecord(body)) {
    throw GatewayError.badRequest('The request body must be a JSON object.', null, 'invalid_body');
  }
  const { model, messages } = body;
  if (model === undefined || model === null || model === '') {
    throw GatewayError.badRequest("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  }
  if (typeof model !== 'string') {
    throw GatewayError.badRequest("Invalid type for 'model': expected a string.", 'model', 'invalid_type');
  }
  const badName = modelNameError(model);
  if (badName !== null) throw GatewayError.badRequest(badName, 'model', 'invalid_model_name');
  if (messages === undefined || messages === null) {
    throw GatewayError.badRequest("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  }
  if (!Array.isArray(messages)) {
    throw GatewayError.badRequest("Invalid type for 'messages': expected an array.", 'messages', 'invalid_type');
  }
  if (messages.length === 0) {
    throw GatewayError.badRequest("Invalid 'messages': empty array. Expected at least one message.", 'messages', 'empty_array');
  }
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isRecord(message) || typeof message.role !== 'string') {
      throw GatewayError.badRequest(
        `Invalid 'messages[${i}]': each message must be an object with a string 'role'.`,
        `messages[${i}].role`,
        'invalid_type',
      );
    }
    const { content } = message;
    // Content is a string, null (an assistant turn with tool calls) or an array of part objects; anything else is
    // refused here, with its index, rather than by whichever adapter trips over it.
    if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        if (!isRecord(content[j])) {
          throw GatewayError.badRequest(`Invalid 'messages[${i}].content[${j}]': expected an object (a content part such as {"type":"text","text":"..."}).`, `messages[${i}].content[${j}]`, 'invalid_type');
        }
      }
    } else if (content !== undefined && content !== null && typeof content !== 'string') {
      throw GatewayError.badRequest(`Invalid type for 'messages[${i}].content': expected a string or an array of content parts.`, `messages[${i}].content`, 'invalid_type');
    }
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw GatewayError.badRequest("Invalid type for 'stream': expected a boolean.", 'stream', 'invalid_type');
  }
  return body as ChatCompletionRequest;
}

/** Most fallbacks one request may name; a longer chain only adds latency to a failure. */
const MAX_REQUEST_FALLBACKS = 10;

/**
 * Takes tollgate's own `fallbacks` field (`["<provider>/<model>" or a route name, ...]`) off the request, so it
 * never reaches an upstream that would reject an unknown field, and returns it checked.
 */
export function takeRequestFallbacks(request: ChatCompletionRequest): string[] {
  const raw = request.fallbacks;
  if (raw === undefined || raw === null) {
    // Deleting only what is there keeps the object's shape (and its fast property access) for everyone else.
    if ('fallbacks' in request) delete request.fallbacks;
    return [];
  }
  if (!Array.isArray(raw) || raw.some((item) => typeof item !== 'string' || item.trim() === '')) {
    throw GatewayError.badRequest("Invalid 'fallbacks': expected an array of model names such as \"openai/gpt-4o-mini\".", 'fallbacks', 'invalid_type');
  }
  if (raw.length > MAX_REQUEST_FALLBACKS) {
    throw GatewayError.badRequest(`Invalid 'fallbacks': at most ${MAX_REQUEST_FALLBACKS} entries.`, 'fallbacks', 'too_many_fallbacks');
  }
  for (const name of raw as string[]) {
    const badName = modelNameError(name, 'fallbacks');
    if (badName !== null) throw GatewayError.badRequest(badName, 'fallbacks', 'invalid_model_name');
  }
  delete request.fallbacks;
  return raw as string[];
}
