import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { CountCache, countKey } from '../../src/tokens/count-cache.js';
import { COUNTED, countPromptTokens, TokenCounter } from '../../src/tokens/tokenizer.js';
import type { ChatMessage } from '../../src/core/canonical.js';
import { ownNow } from '../helpers/own-time.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('CountCache', () => {
  it('keeps the recently used counts within its bound, short texts and long alike', () => {
    const long = (c: string) => countKey(c.repeat(100));
    // Generations of two: a text used within the last two new texts is kept, never more than four held.
    const cache = new CountCache(4);
    cache.set(countKey('user'), 1);
    cache.set(long('b'), 2); // the first generation is full: it becomes the previous one
    expect(cache.get(countKey('user'))).toBe(1); // used again: carried into the current generation
    cache.set(long('c'), 3); // the current generation is full: the previous one (with b) goes
    expect(cache.get(long('b'))).toBeUndefined();
    expect([cache.get(countKey('user')), cache.get(long('c'))]).toEqual([1, 3]);
    cache.set(long('d'), 4);
    cache.set(long('e'), 5);
    cache.set(long('f'), 6);
    // Three new texts since user and c were last used: both gone; the last two new ones kept.
    expect(cache.get(long('f'))).toBe(6);
    expect(cache.get(long('e'))).toBe(5);
    expect(cache.get(countKey('user'))).toBeUndefined();
    expect(cache.get(long('c'))).toBeUndefined();
    expect(cache.size).toBeLessThanOrEqual(4);
  });

  it('costs the same per call whatever it holds, for a text used on every request as for new ones', () => {
    // One Map used as an LRU (delete, then set again) slowed down with every use of the same key: V8 keeps the
    // deleted entries in the key's bucket chain until it rehashes, and a chain can grow as long as the table is
    // large. A cache of 50,000 must answer a hot key and take new texts about as fast as one of 100: 1.3-5 times
    // here, its table no longer fitting the CPU's caches; the old way was 37-54 times slower. Each size is read on
    // this thread's own time (a busy machine's scheduler stretches the wall clock of a reading, mostly the longer
    // one), the least of five fresh caches (one can catch a garbage collection).
    const time = (maxEntries: number, fill: number): number => {
      let best = Infinity;
      for (let round = 0; round < 5; round++) {
        const cache = new CountCache(maxEntries);
        for (let i = 0; i < fill; i++) cache.set(`fill ${i} `.padEnd(30, 'x'), i);
        const started = ownNow();
        for (let i = 0; i < 20_000; i++) {
          cache.get('user');
          cache.set('user', 1);
          cache.set(`new ${i} `.padEnd(30, 'y'), i);
        }
        best = Math.min(best, ownNow() - started);
      }
      return best;
    };
    const small = time(100, 100);
    const large = time(50_000, 49_000);
    expect(large).toBeLessThan(small * 10);
  });

  it('keys a short text by itself and a long one by a digest, which no short text can spell', () => {
    expect(countKey('user')).toBe('user');
    const text = 'x'.repeat(100);
    const digest = createHash('sha1').update(text).digest('base64');
    expect(countKey(text)).toBe(digest);
    expect(digest).toHaveLength(28);
    // A client's text that spells the digest is itself long enough to be digested: a different key.
    expect(countKey(digest)).not.toBe(digest);
  });
});

describe('token counts of texts counted before', () => {
  it('are the counts a fresh count gives, and only exact counts are kept', () => {
    const text = `${README.slice(0, 5000)} ${Math.random()}`;
    const fresh = new TokenCounter({ exactChars: Number.MAX_SAFE_INTEGER, budgetMs: 60_000 }).text(text);
    expect(COUNTED.get(countKey(text))).toBe(fresh);
    const again = new TokenCounter();
    expect(again.text(text)).toBe(fresh);
    expect(again.estimated).toBe(false);

    const partly = `${README.slice(0, 9000)} ${Math.random()}`;
    const counter = new TokenCounter({ exactChars: 4000, budgetMs: 60_000 });
    counter.text(partly);
    expect(counter.estimated).toBe(true);
    expect(COUNTED.get(countKey(partly))).toBeUndefined();

    // A text longer than a count may still encode exactly is not even looked up: its digest (milliseconds for a
    // multi-megabyte text, on the event loop) could only find what a count with larger limits kept.
    const counted = `${README.slice(0, 9000)} ${Math.random()}`;
    new TokenCounter({ exactChars: Number.MAX_SAFE_INTEGER, budgetMs: 60_000 }).text(counted);
    expect(COUNTED.get(countKey(counted))).toBeDefined();
    const smaller = new TokenCounter({ exactChars: 4000, budgetMs: 60_000 });
    smaller.text(counted);
    expect(smaller.estimated).toBe(true);
  });

  it('let a conversation resent turn after turn be counted exactly within the same budget', () => {
    const salt = Math.random();
    const messages: ChatMessage[] = Array.from({ length: 40 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `${salt} ${i} ${README.slice(i * 2000, i * 2000 + 2000)}` }));
    // OpenAI's count (3 a message, its role and content, 3 to prime the reply) with the tokenizer itself.
    const exact = 3 + messages.reduce((sum, message) => sum + 3 + encode(message.role).length + encode(message.content as string).length, 0);
    const tight = () => new TokenCounter({ exactChars: 20_000, budgetMs: 60_000 });
    const counts: number[] = [];
    const estimated: boolean[] = [];
    for (let turn = 0; turn < 6; turn++) {
      const counter = tight();
      counts.push(countPromptTokens(messages, undefined, counter));
      estimated.push(counter.estimated);
    }
    // About 80,000 characters at 20,000 a count: each turn counts the next 20,000 and finds the earlier ones known.
    expect(estimated).toEqual([true, true, true, true, false, false]);
    expect(counts.slice(4)).toEqual([exact, exact]);
  });
});
