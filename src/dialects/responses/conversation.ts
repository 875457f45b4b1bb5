import { gatewayError, type GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput } from '../../core/quote-input.js';
import type { ResponsesRequest } from './parse-request.js';
import { newId } from './response.js';

type Json = Record<string, unknown>;

/** OpenAI's answer to a previous_response_id it does not have (unknown, another key's, expired, deleted). */
export function previousResponseNotFound(id: string): GatewayError {
  return gatewayError('previous_response_not_found', `Previous response with id '${quoteInput(id, 100)}' not found.`, { param: 'previous_response_id' });
}

/**
 * A previous_response_id whose conversation is past what tollgate resolves from its turns (CONVERSATION_LIMITS): a
 * 400 naming it, as a request too long to send, never a turn without its history.
 */
export function conversationTooLong(id: string, tooLong: { tooLong: 'turns' | 'bytes'; limit: number }): GatewayError {
  const what = tooLong.tooLong === 'turns' ? `${tooLong.limit} turns` : `${tooLong.limit} bytes`;
  return gatewayError('invalid_request', `The conversation of response '${quoteInput(id, 100)}' is longer than ${what}, more than tollgate continues by previous_response_id; send the conversation as input instead.`, { param: 'previous_response_id' });
}

/** OpenAI's 404 for a response id it does not have (GET, DELETE, input_items, cancel). */
export function responseNotFound(id: string): GatewayError {
  return gatewayError('response_not_found', `Response with id '${quoteInput(id, 100)}' not found.`);
}

/** The id prefix an input item is listed with when the client sent it without one. */
function idPrefix(type: unknown): string {
  if (type === 'function_call') return 'fc';
  if (type === 'function_call_output') return 'fco';
  if (type === 'reasoning') return 'rs';
  return 'msg';
}

/**
 * A turn's `input` as the conversation keeps it: a string as a user message, each item as the client wrote it with an
 * id (its own, or a new one), so a later turn sends the provider what the client sent (see listedItem for the list).
 */
export function inputItemsOf(input: unknown): Json[] {
  if (typeof input === 'string') return [{ id: newId('msg'), type: 'message', role: 'user', content: input }];
  if (!Array.isArray(input)) return [];
  return input.filter(isRecord).map((item) => {
    const type = item.type ?? 'message';
    return { ...item, type, id: typeof item.id === 'string' ? item.id : newId(idPrefix(type)) };
  });
}

/** A kept input item as GET /v1/responses/{id}/input_items lists it: a message's string content as a text part. */
export function listedItem(item: Json): Json {
  if (item.type !== 'message' || typeof item.content !== 'string') return item;
  const assistant = item.role === 'assistant';
  return { ...item, content: [{ type: assistant ? 'output_text' : 'input_text', text: item.content, ...(assistant ? { annotations: [] } : {}) }] };
}

/**
 * An item of the stored conversation as it goes back upstream: without the id tollgate gave it (a provider serving
 * the Responses API would look for a stored item of that id). Reasoning items keep theirs: it says who wrote them
 * (see withoutTranslatedReasoning), and OpenAI requires it.
 */
export function sentBack(item: Json): Json {
  if (item.type === 'reasoning' || item.id === undefined) return item;
  const { id: _id, ...rest } = item;
  return rest;
}

/** A continued turn: the whole conversation as its input, and what the new Response keeps of it. */
export interface Continued {
  body: ResponsesRequest;
  /** The conversation up to this turn's input, with ids, as its input_items. */
  inputItems: Json[];
  /** This turn's own input items (the end of inputItems): what the store keeps of it, linked to the previous turn. */
  ownItems: Json[];
}

/**
 * A request naming a stored Response by previous_response_id as a request that carries the whole conversation:
 * that Response's input items and output, then this turn's input, with previous_response_id left out, so every
 * provider (translated or not) sees the history. Instructions are not carried over, as OpenAI does not carry them.
 */
export function continuedRequest(body: ResponsesRequest, previous: { input_items: Json[]; response: Json }): Continued {
  const output = Array.isArray(previous.response.output) ? previous.response.output.filter(isRecord) : [];
  const earlier = [...previous.input_items, ...output];
  const own = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? (body.input as Json[]) : [];
  const { previous_response_id: _previous, ...rest } = body;
  const ownItems = inputItemsOf(body.input);
  return { body: { ...rest, input: [...earlier.map(sentBack), ...own] } as ResponsesRequest, inputItems: [...earlier, ...ownItems], ownItems };
}
