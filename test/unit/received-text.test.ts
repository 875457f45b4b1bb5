import { describe, expect, it } from 'vitest';
import { ReceivedText } from '../../src/tokens/received-text.js';
import { EXACT_CHARS, TokenCounter, countTextTokens } from '../../src/tokens/tokenizer.js';

/** Time enough for exact counts on a loaded machine (the default 5 ms budget would estimate part of the text). */
const UNHURRIED = { exactChars: EXACT_CHARS, budgetMs: 60_000 };
const WORDS = ['the', 'gateway', 'streams', 'an', 'answer', 'of', 'ordinary', 'words,', 'tokens', 'counted', 'when', 'no', 'usage', 'comes.'];

/** Ordinary text in pieces the size of stream deltas. */
function pieces(chars: number): string[] {
  const out: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const piece = ` ${WORDS[i % WORDS.length]}`;
    out.push(piece);
    length += piece.length;
  }
  return out;
}

describe('ReceivedText', () => {
  it('counts what it received exactly as one count of the whole text would, while under the bound', () => {
    const text = new ReceivedText();
    const parts = pieces(20_000);
    for (const part of parts) text.add(part);
    expect(text.length).toBe(parts.join('').length);
    expect(text.keptLength).toBe(text.length);
    expect(text.tokens(new TokenCounter(UNHURRIED))).toBe(countTextTokens(parts.join(''), UNHURRIED));
  });

  it('keeps at most EXACT_CHARS characters of an endless stream and estimates the rest at the kept text\'s rate', () => {
    const text = new ReceivedText();
    const total = 8 * EXACT_CHARS;
    let added = 0;
    // One delta of 4 KB after another (a long stream), 4 MB in all.
    const delta = pieces(4096).join('');
    while (added < total) {
      text.add(delta);
      added += delta.length;
    }
    expect(text.length).toBe(added);
    expect(text.keptLength).toBeLessThanOrEqual(EXACT_CHARS);
    expect(text.keptLength).toBeGreaterThan(EXACT_CHARS - delta.length);
    const counter = new TokenCounter(UNHURRIED);
    const tokens = text.tokens(counter);
    expect(counter.estimated).toBe(true);
    // The same text counted (and estimated) whole, as before the bound: within a percent.
    const whole = countTextTokens(delta.repeat(Math.ceil(total / delta.length)), UNHURRIED);
    expect(Math.abs(tokens - whole) / whole).toBeLessThan(0.01);
  });

  it('never cuts a surrogate pair at the bound', () => {
    const text = new ReceivedText();
    text.add('a'.repeat(EXACT_CHARS - 1));
    text.add('😀 more');
    expect(text.keptLength).toBe(EXACT_CHARS - 1);
    expect(text.length).toBe(EXACT_CHARS - 1 + '😀 more'.length);
  });

  it('an empty text counts nothing', () => {
    const text = new ReceivedText();
    text.add('');
    expect(text.empty).toBe(true);
    expect(text.tokens(new TokenCounter(UNHURRIED))).toBe(0);
  });
});
