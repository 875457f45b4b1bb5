import { gatewayError } from '../../core/errors.js';
import { listedItem } from './conversation.js';

type Json = Record<string, unknown>;

/** A stored Response's input items as OpenAI's ResponseItemList. */
export interface ItemList {
  object: 'list';
  data: Json[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

function invalid(param: string, message: string): never {
  throw gatewayError('invalid_value', `Invalid '${param}': ${message}`, { param });
}

/** The query's page size: 1 to 100, 20 when left out (OpenAI's). */
function limitOf(value: unknown): number {
  if (value === undefined) return 20;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) invalid('limit', 'expected an integer between 1 and 100.');
  return limit;
}

/**
 * One page of `items` (in conversation order) as GET /v1/responses/{id}/input_items answers it: `order` desc (the
 * default, newest first) or asc, items after the one `after` names (and before the one `before` names) in that order,
 * at most `limit`. An `after` or `before` naming no item is a 400, as a cursor that cannot be followed.
 */
export function listPage(items: readonly Json[], query: Json): ItemList {
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') invalid('order', "expected 'asc' or 'desc'.");
  const limit = limitOf(query.limit);
  let ordered = order === 'asc' ? [...items] : [...items].reverse();
  const at = (param: string, id: unknown): number => {
    if (typeof id !== 'string') invalid(param, 'expected an item id.');
    const index = ordered.findIndex((item) => item.id === id);
    if (index === -1) invalid(param, `no input item of this response has id '${id.slice(0, 100)}'.`);
    return index;
  };
  if (query.before !== undefined) ordered = ordered.slice(0, at('before', query.before));
  if (query.after !== undefined) ordered = ordered.slice(at('after', query.after) + 1);
  const data = ordered.slice(0, limit).map(listedItem);
  return { object: 'list', data, first_id: (data[0]?.id as string | undefined) ?? null, last_id: (data.at(-1)?.id as string | undefined) ?? null, has_more: ordered.length > limit };
}
