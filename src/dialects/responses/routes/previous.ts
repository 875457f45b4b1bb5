import type { FastifyRequest } from 'fastify';
import type { RuntimeConfig } from '../../../core/config.js';
import { gatewayError, type GatewayError } from '../../../core/errors.js';
import { quoteInput } from '../../../core/quote-input.js';
import type { HttpDeps } from '../../../http/deps.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { checkVirtualKey } from '../../../http/key-check.js';
import { presentedCredential } from '../../openai/routes/register.js';
import { isRecord } from '../../../core/is-record.js';
import { continuedRequest, conversationTooLong, inputItemsOf, previousResponseNotFound, sentBack } from '../conversation.js';
import type { ResponsesRequest } from '../parse-request.js';
import { scopeOf } from './keeper.js';
import type { StoredResponse } from '../../../store/response-store.js';

/** A turn as it starts: the body to send, the input items its Response keeps, and the turn it continues. */
export interface Turn {
  body: ResponsesRequest;
  /** This turn's own input items, as its Response keeps them (after those of `continues`' conversation). */
  inputItems: Array<Record<string, unknown>>;
  previousResponseId: string | null;
  /** The Response tollgate kept that this turn continues (its conversation comes first), null for none. */
  continues?: string | null;
  /** The whole conversation up to this turn's input (kept instead of the link should `continues` go before it commits). */
  conversationItems?: Array<Record<string, unknown>>;
  /** Why a translation cannot take the previous_response_id left in `body` (one tollgate did not expand). */
  previousError: GatewayError | null;
  /** The provider and key that keep the previous Response, when an upstream kept it (see NativeRequest.pinned). */
  pinned?: { provider: string; keyId: string | null } | null;
}

/**
 * The turn a Responses request starts. Its item_reference items naming items tollgate kept for the caller become those
 * items (withReferencedItems). A previous_response_id tollgate kept for the caller (same virtual key, or
 * anonymous) becomes the whole conversation in the body (continuedRequest), for any provider; one kept for another
 * caller is OpenAI's 400 previous_response_not_found, whatever the model (a key never continues another's). One an
 * upstream kept (OpenAI's own), or one tollgate never saw, goes on to a provider serving the Responses API as it is;
 * a translation refuses it (not found, or where it is kept).
 */
export function startTurn(deps: HttpDeps, request: FastifyRequest, read: ResponsesRequest, config: RuntimeConfig): Turn {
  const id = read.previous_response_id;
  const references = Array.isArray(read.input) && read.input.some(isItemReference);
  if (typeof id !== 'string' && !references) return { body: read, inputItems: inputItemsOf(read.input), previousResponseId: null, previousError: null };
  // Whose conversation it may be: the key rules as the auth stage applies them. A caller they refuse gets nothing of
  // the store, and the auth stage's own refusal (reported as every refusal of it is).
  let scope: string;
  try {
    scope = scopeOf(checkVirtualKey(deps.governance, config, isRemoteClient(request, config.settings), presentedCredential(request), null)?.id);
  } catch {
    return { body: read, inputItems: [], previousResponseId: null, previousError: typeof id === 'string' ? previousResponseNotFound(id) : null };
  }
  const body = references ? withReferencedItems(deps, read, scope) : read;
  const own: Turn = { body, inputItems: inputItemsOf(body.input), previousResponseId: null, previousError: null };
  if (typeof id !== 'string') return own;
  const found = deps.responses.find(id);
  if (found && found.scope !== scope) throw previousResponseNotFound(id);
  if (found?.response) {
    const conversation = deps.responses.conversation(found);
    if ('tooLong' in conversation) throw conversationTooLong(id, conversation);
    const continued = continuedRequest(body, { input_items: conversation.items, response: found.response });
    return { body: continued.body, inputItems: continued.ownItems, conversationItems: continued.inputItems, previousResponseId: id, continues: id, previousError: null };
  }
  if (!found) return { ...own, previousResponseId: id, previousError: previousResponseNotFound(id) };
  const provider = found.provider ?? 'openai';
  const kept = gatewayError('unsupported_for_provider', `previous_response_id '${quoteInput(id, 100)}' names a response the provider '${provider}' keeps itself; continue it with a model of that provider, or send the conversation as input.`, { param: 'previous_response_id' });
  // It goes to that provider, with the key that made it: another account would not find it.
  return { ...own, previousResponseId: id, previousError: kept, pinned: { provider, keyId: found.provider_key_id ?? null } };
}

function isItemReference(item: unknown): boolean {
  return isRecord(item) && item.type === 'item_reference' && typeof item.id === 'string';
}

/**
 * The input with each item_reference that names an item of a Response tollgate kept for the caller replaced by that
 * item (without the id tollgate gave it, see sentBack), as the Vercel AI SDK names earlier answers when store is on.
 * One tollgate did not keep stays: OpenAI may have it; a translation refuses it.
 */
function withReferencedItems(deps: HttpDeps, body: ResponsesRequest, scope: string): ResponsesRequest {
  // Each id is looked up once, and each record read once (see findItem): a lookup decodes the whole stored record the
  // item is in, its input included, so an input naming one item of a Response with a few MB of input a thousand times
  // held the event loop for 20 s.
  const resolved = new Map<string, Record<string, unknown> | null>();
  const records = new Map<string, StoredResponse | null>();
  const input = (body.input as unknown[]).map((item) => {
    if (!isItemReference(item)) return item;
    const id = (item as { id: string }).id;
    let found = resolved.get(id);
    if (found === undefined) {
      const kept = deps.responses.findItem(id, scope, records);
      found = kept ? sentBack(kept) : null;
      resolved.set(id, found);
    }
    return found ?? item;
  });
  return { ...body, input };
}
