import { randomBytes } from 'node:crypto';
import type { ChatCompletionChunk } from '../../core/canonical.js';

/** Stands for `choices` while a chunk's other fields are serialised; per process and unguessable. */
const SLOT = `tollgate-choices-${randomBytes(8).toString('hex')}`;
const QUOTED_SLOT = JSON.stringify(SLOT);

/**
 * Serialises a stream's chunks exactly as JSON.stringify does, but without re-serialising the fields every chunk
 * repeats. A stream's chunks share their leading fields (id, object, created, model, system_fingerprint, ...) and
 * differ in `choices`; so the JSON around `choices` is made once and reused for as long as a chunk has the same
 * keys, in the same order, with the same primitive values. Any other chunk (one carrying `usage` or another object,
 * or one that defines toJSON) is serialised whole. One serialiser per stream.
 */
export function chunkSerialiser(): (chunk: ChatCompletionChunk) => string {
  let keys: string[] = [];
  let values: unknown[] = [];
  let head = '';
  let tail = '';

  /** Whether the chunk's fields other than `choices` are those remembered, in the same order. */
  const sameAround = (chunk: ChatCompletionChunk): boolean => {
    let at = 0;
    for (const key in chunk) {
      if (keys[at] !== key) return false;
      if (key !== 'choices' && chunk[key] !== values[at]) return false;
      at++;
    }
    return at === keys.length;
  };

  /** Remembers the chunk's fields and the JSON around its `choices`; false when it cannot be served that way. */
  const remember = (chunk: ChatCompletionChunk): boolean => {
    keys = [];
    values = [];
    head = '';
    for (const key in chunk) {
      const value = chunk[key];
      if (key !== 'choices' && typeof value === 'object' && value !== null) return false;
      keys.push(key);
      values.push(value);
    }
    const parts = JSON.stringify({ ...chunk, choices: SLOT }).split(QUOTED_SLOT);
    if (parts.length !== 2) return false;
    head = parts[0] as string;
    tail = parts[1] as string;
    return true;
  };

  return (chunk) => {
    // A chunk that serialises itself, or whose choices JSON.stringify would leave out, is not one to take apart.
    if ((chunk as { toJSON?: unknown }).toJSON !== undefined || !Array.isArray(chunk.choices)) return JSON.stringify(chunk);
    if (head === '' || !sameAround(chunk)) {
      if (!remember(chunk)) {
        head = '';
        return JSON.stringify(chunk);
      }
    }
    return head + JSON.stringify(chunk.choices) + tail;
  };
}
