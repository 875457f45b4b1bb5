import { gatewayError } from '../../core/errors.js';
import type { VirtualKeyView } from '../../governance/types.js';
import type { KeyPosition } from '../../governance/governance-store.js';

/** The most keys one `GET /api/keys?ids=` names: 500 ids (about 10 KB) keep the URL within Node's 16 KB header limit. */
export const MAX_KEY_IDS = 500;

/** What `fields=` may name: every field of a key as the API shows it (the hash of the secret is never one). */
const KEY_FIELDS = [
  'id',
  'name',
  'key_prefix',
  'team',
  'models',
  'model_rate_limits',
  'budget',
  'budget_period',
  'spend',
  'requests',
  'period_start',
  'period_resets_at',
  'rate_limit',
  'tokens_per_minute',
  'expires_at',
  'disabled',
  'metadata',
  'plugins',
  'cache',
  'guardrails',
  'mcp',
  'total_spend',
  'total_requests',
  'last_used_at',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof VirtualKeyView)[];
type KeyField = (typeof KEY_FIELDS)[number];
// A field added to the key view and not listed above fails the build here, rather than being silently unselectable.
const everyField: Exclude<keyof VirtualKeyView, KeyField> extends never ? true : never = true;
void everyField;
const KNOWN = new Set<string>(KEY_FIELDS);

/** A comma-separated list, its items trimmed, empty ones (a trailing comma) dropped, repeats kept once. */
function commaList(raw: string): string[] {
  return [...new Set(raw.split(',').map((item) => item.trim()).filter((item) => item !== ''))];
}

/** `ids=a,b,c`: at most MAX_KEY_IDS distinct ids. */
export function parseKeyIds(raw: string): string[] {
  const ids = commaList(raw);
  if (ids.length > MAX_KEY_IDS) throw gatewayError('invalid_query', `ids names ${ids.length} keys; ask for at most ${MAX_KEY_IDS} at a time.`, { param: 'ids' });
  return ids;
}

/** `fields=name,team`: the fields each key of the answer keeps (`id` always). */
export function parseKeyFields(raw: string): KeyField[] {
  const fields = commaList(raw);
  const unknown = fields.find((field) => !KNOWN.has(field));
  if (unknown !== undefined) throw gatewayError('invalid_query', `Unknown key field '${unknown.slice(0, 60)}'; fields takes: ${KEY_FIELDS.join(', ')}.`, { param: 'fields' });
  return ['id', ...(fields as KeyField[]).filter((field) => field !== 'id')];
}

/** A key cut to `fields` (a field the key does not have, such as `plugins` on a key without them, stays absent). */
export function projectKey(key: VirtualKeyView, fields: readonly KeyField[]): Partial<VirtualKeyView> {
  const out: Record<string, unknown> = {};
  for (const field of fields) if (key[field] !== undefined) out[field] = key[field];
  return out as Partial<VirtualKeyView>;
}

/** The prefix of a position cursor (an id starts with `vk_`, so the two never mix). */
const CURSOR_PREFIX = 'c_';

/**
 * The `next_after` of a page: where its last key stands (creation time and id), not the id alone, so the next page
 * starts in the right place even when that key is deleted before it is asked for (with the id alone the listing
 * stopped at a 400, an unknown cursor, whenever another admin deleted a key while a script paged).
 */
export function keyCursor(key: { created_at: string; id: string }): string {
  return `${CURSOR_PREFIX}${Buffer.from(`${key.created_at}\n${key.id}`).toString('base64url')}`;
}

/** `after` as a position (a cursor keyCursor made), the id it is otherwise (the cursor before positions), or null when it is a cursor that does not read. */
export function parseKeyCursor(after: string): KeyPosition | string | null {
  if (!after.startsWith(CURSOR_PREFIX)) return after;
  const [createdAt, id, ...rest] = Buffer.from(after.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8').split('\n');
  if (rest.length > 0 || !createdAt || !id || Number.isNaN(Date.parse(createdAt))) return null;
  return [createdAt, id];
}
