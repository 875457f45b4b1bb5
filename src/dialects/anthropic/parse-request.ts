import { modelNameProblem, quotedModelName } from '../model-name-check.js';
import { invalidRequest } from './errors.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';

/** A Messages (or count_tokens) request body after the checks the gateway itself depends on. */
export interface MessagesRequest extends Json {
  model: string;
  messages: unknown[];
  max_tokens?: number;
  stream?: boolean;
}

/**
 * Checks what the gateway needs before translating, with Anthropic's own messages so a client sees the error it
 * would get from Anthropic. `max_tokens` is required for messages (as Anthropic requires it) but not for count_tokens.
 */
export function readMessagesRequest(body: unknown, endpoint: 'messages' | 'count_tokens'): MessagesRequest {
  if (!isRecord(body)) throw invalidRequest('body', 'Input should be a valid dictionary');
  if (body.model === undefined || body.model === null || (typeof body.model === 'string' && body.model.trim() === '')) throw invalidRequest('model', 'Field required');
  if (typeof body.model !== 'string') throw invalidRequest('model', 'Input should be a valid string');
  const badName = modelNameProblem(body.model);
  if (badName !== null) throw invalidRequest('model', `the model name ${quotedModelName(body.model)} ${badName}`);
  if (!Array.isArray(body.messages)) throw invalidRequest('messages', 'Field required');
  if (body.messages.length === 0) throw invalidRequest('messages', 'at least one message is required');
  if (endpoint === 'messages') {
    if (body.max_tokens === undefined || body.max_tokens === null) throw invalidRequest('max_tokens', 'Field required');
    if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
      throw invalidRequest('max_tokens', 'Input should be an integer greater than or equal to 1');
    }
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw invalidRequest('stream', 'Input should be a valid boolean');
  for (const field of ['temperature', 'top_p', 'top_k'] as const) {
    if (body[field] !== undefined && body[field] !== null && typeof body[field] !== 'number') throw invalidRequest(field, 'Input should be a valid number');
    // The body parser refuses `1e999` in these already (exact-numbers.ts); Infinity would reach Anthropic as null.
    if (typeof body[field] === 'number' && !Number.isFinite(body[field])) throw invalidRequest(field, 'Input should be a finite number');
  }
  // A count of tokens, as Anthropic takes it: it also goes to Gemini's int32 topK and Bedrock's Claude (markers.ts).
  if (typeof body.top_k === 'number' && !Number.isInteger(body.top_k)) throw invalidRequest('top_k', 'Input should be a valid integer, got a number with a fractional part');
  if (typeof body.top_k === 'number' && body.top_k < 0) throw invalidRequest('top_k', 'Input should be greater than or equal to 0');
  const stops = body.stop_sequences;
  if (stops !== undefined && stops !== null && (!Array.isArray(stops) || stops.some((stop) => typeof stop !== 'string'))) {
    throw invalidRequest('stop_sequences', 'Input should be a valid list of strings');
  }
  if (body.metadata !== undefined && body.metadata !== null && !isRecord(body.metadata)) throw invalidRequest('metadata', 'Input should be a valid dictionary');
  // Read only when translating (user_id as the user, the format as response_format): a value of the wrong type there
  // was silently no value, where Anthropic refuses it, so a request's fate hung on which provider served it.
  const userId = isRecord(body.metadata) ? body.metadata.user_id : undefined;
  if (userId !== undefined && userId !== null && typeof userId !== 'string') throw invalidRequest('metadata.user_id', 'Input should be a valid string');
  dictionaryOrAbsent(body.output_config, 'output_config');
  if (isRecord(body.output_config)) dictionaryOrAbsent(body.output_config.format, 'output_config.format');
  dictionaryOrAbsent(body.output_format, 'output_format');
  return body as MessagesRequest;
}

function dictionaryOrAbsent(value: unknown, where: string): void {
  if (value !== undefined && value !== null && !isRecord(value)) throw invalidRequest(where, 'Input should be a valid dictionary');
}
