import { hash } from 'node:crypto';

/** Texts shorter than a digest (roles, names) are their own key; a digest is 28 characters, so the two never meet. */
const OWN_KEY_BELOW = 28;

/** The key a text's count is kept under: the text itself when short, else its SHA-1. */
export function countKey(text: string): string {
  return text.length < OWN_KEY_BELOW ? text : hash('sha1', text, 'base64');
}

/**
 * Token counts of texts counted before, the recently used kept. A chat client sends the whole conversation with
 * every turn, so the same messages (and the same tool definitions) are counted again and again, at 0.1-0.3 µs a
 * character; finding a text's count costs a SHA-1 of it (about 1 µs a kilobyte). Only exact counts are kept: a
 * count depends on nothing but the text then. The texts themselves are not kept (a prompt may hold what should
 * not linger in memory), only their digests: about 85 bytes an entry.
 *
 * Kept in two generations of maps, never deleted from: a count found or added goes into the current generation;
 * when that holds half the bound it becomes the previous one, and the one before is dropped whole. A text used
 * within the last `maxEntries / 2` new texts is always kept, and never more than `maxEntries` entries are held.
 * (An LRU on one Map, moving a used key to the end with `delete` and `set` and evicting with `keys().next()`, costs
 * what the Map holds on every call once full: V8 keeps deleted entries in their bucket's chain and at the front of
 * the iteration order until it rehashes, so a key used on every request (a role's name) walks a chain that grows with
 * each use, and eviction steps over every entry deleted before. At 50,000 entries that was 80 µs a hit and 20 µs an
 * eviction; bench/RESULTS.md, issue 22.)
 */
export class CountCache {
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(private readonly maxEntries: number) {}

  /** The count kept under `key` (see countKey), or undefined. */
  get(key: string): number | undefined {
    const tokens = this.current.get(key);
    if (tokens !== undefined) return tokens;
    const earlier = this.previous.get(key);
    // Used again: kept on into the current generation.
    if (earlier !== undefined) this.keep(key, earlier);
    return earlier;
  }

  set(key: string, tokens: number): void {
    if (this.current.has(key)) return;
    this.keep(key, tokens);
  }

  private keep(key: string, tokens: number): void {
    this.current.set(key, tokens);
    if (this.current.size < this.maxEntries / 2) return;
    this.previous = this.current;
    this.current = new Map();
  }

  /** Forgets every count (benches compare with and without what was counted before). */
  clear(): void {
    this.current = new Map();
    this.previous = new Map();
  }

  /** Entries held, both generations (a text used in both counts twice); at most `maxEntries`. */
  get size(): number {
    return this.current.size + this.previous.size;
  }
}
