import { hash } from 'node:crypto';

/** Texts shorter than a digest (roles, names) are their own key; a digest is 28 characters, so the two never meet. */
const OWN_KEY_BELOW = 28;

/** The key a text's count is kept under: the text itself when short, else its SHA-1. */
export function countKey(text: string): string {
  return text.length < OWN_KEY_BELOW ? text : hash('sha1', text, 'base64');
}

/**
 * Token counts of texts counted before, most recently used kept. A chat client sends the whole conversation with
 * every turn, so the same messages (and the same tool definitions) are counted again and again, at 0.1-0.3 µs a
 * character; finding a text's count costs a SHA-1 of it (about 1 µs a kilobyte). Only exact counts are kept: a
 * count depends on nothing but the text then. The texts themselves are not kept (a prompt may hold what should
 * not linger in memory), only their digests: about 85 bytes an entry.
 */
export class CountCache {
  private readonly counts = new Map<string, number>();

  constructor(private readonly maxEntries: number) {}

  /** The count kept under `key` (see countKey), or undefined. */
  get(key: string): number | undefined {
    const tokens = this.counts.get(key);
    if (tokens !== undefined) {
      // Most recently used last: a Map keeps insertion order, and eviction takes from the front.
      this.counts.delete(key);
      this.counts.set(key, tokens);
    }
    return tokens;
  }

  set(key: string, tokens: number): void {
    if (this.counts.has(key)) return;
    this.counts.set(key, tokens);
    if (this.counts.size <= this.maxEntries) return;
    const oldest = this.counts.keys().next();
    if (!oldest.done) this.counts.delete(oldest.value);
  }

  /** Forgets every count (benches compare with and without what was counted before). */
  clear(): void {
    this.counts.clear();
  }

  get size(): number {
    return this.counts.size;
  }
}
