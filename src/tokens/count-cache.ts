/**
 * Token counts of texts counted before, most recently used kept. A chat client sends the whole conversation with
 * every turn, so the same messages (and the same tool definitions) are counted again and again, at 0.1-0.3 µs a
 * character; looking a text up costs a hash of it (about a nanosecond a character). Only exact counts are kept: a
 * count depends on nothing but the text then. Bounded by the characters held, so a flood of distinct prompts
 * costs at most that much memory (about 12 MB with the gateway's bounds).
 */
export class CountCache {
  private readonly counts = new Map<string, number>();
  private chars = 0;

  /**
   * @param maxChars characters held in all (the texts are the keys; about 2 bytes each at worst)
   * @param maxEntries texts held (each entry costs some 100 bytes beside its text)
   * @param maxTextChars longest text kept (a longer one would push out many shorter ones for one hit)
   */
  constructor(
    private readonly maxChars: number,
    private readonly maxEntries: number,
    private readonly maxTextChars: number,
  ) {}

  get(text: string): number | undefined {
    const tokens = this.counts.get(text);
    if (tokens !== undefined) {
      // Most recently used last: Map keeps insertion order, and eviction takes from the front.
      this.counts.delete(text);
      this.counts.set(text, tokens);
    }
    return tokens;
  }

  set(text: string, tokens: number): void {
    if (text.length > this.maxTextChars || this.counts.has(text)) return;
    this.counts.set(text, tokens);
    this.chars += text.length;
    if (this.chars <= this.maxChars && this.counts.size <= this.maxEntries) return;
    for (const oldest of this.counts.keys()) {
      this.counts.delete(oldest);
      this.chars -= oldest.length;
      if (this.chars <= this.maxChars && this.counts.size <= this.maxEntries) break;
    }
  }

  /** Forgets every count (benches compare with and without what was counted before). */
  clear(): void {
    this.counts.clear();
    this.chars = 0;
  }

  get size(): number {
    return this.counts.size;
  }

  get heldChars(): number {
    return this.chars;
  }
}
