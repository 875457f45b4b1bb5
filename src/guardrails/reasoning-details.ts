/**
 * OpenRouter's `reasoning_details`: a reasoning model's thinking as typed entries next to `reasoning`, which clients
 * keep and send back on the next turn (`reasoning.text` with `text` and maybe a `signature`, `reasoning.summary` with
 * `summary`, `reasoning.encrypted` with opaque `data`). Their text repeats the reasoning's, so the output rules read
 * it too: redacted where the reasoning is, a redacted entry's signature withheld (it signs the text as written), the
 * encrypted entries passed as they came.
 */
import { isRecord } from '../core/is-record.js';

type Entry = Record<string, unknown>;

/** The field of an entry that holds readable text, by its type. */
const TEXT_FIELD: Record<string, 'text' | 'summary'> = { 'reasoning.text': 'text', 'reasoning.summary': 'summary' };

/** An entry's readable text and the field it is in, or null (an encrypted entry, a signature alone, anything else). */
export function detailText(entry: unknown): { field: 'text' | 'summary'; text: string } | null {
  if (!isRecord(entry) || typeof entry.type !== 'string' || !Object.hasOwn(TEXT_FIELD, entry.type)) return null;
  const field = TEXT_FIELD[entry.type] as 'text' | 'summary';
  return typeof entry[field] === 'string' ? { field, text: entry[field] } : null;
}

/** What identifies one entry's text across a stream's pieces: its type and its `index`. */
export function detailKey(entry: Entry): string {
  return `${String(entry.type)}:${typeof entry.index === 'number' ? entry.index : 0}`;
}

/** An entry carrying `text` in `field` instead of its own, and without its signature when `unsigned`. */
export function withDetailText(entry: Entry, field: 'text' | 'summary', text: string, unsigned: boolean): Entry {
  const { signature, ...rest } = entry;
  return { ...rest, [field]: text, ...(signature !== undefined && !unsigned ? { signature } : {}) };
}

/** Whether an entry carries a signature (of the text before it in its entry). */
export function isSigned(entry: Entry): boolean {
  return typeof entry.signature === 'string' && entry.signature !== '';
}
