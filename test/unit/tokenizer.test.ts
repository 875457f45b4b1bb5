import { readFileSync } from 'node:fs';
import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { BUDGET_MS, countPromptTokens, countTextTokens, MAX_RUN, TokenCounter } from '../../src/tokens/tokenizer.js';

/** Real prose and code (this project's README), doubled until long enough. */
function realText(chars: number): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  return readme.repeat(Math.ceil(chars / readme.length)).slice(0, chars);
}

/** Deterministic pseudo-random text over an alphabet (no whitespace). */
function randomRun(chars: number, alphabet: string, seed = 7): string {
  let state = seed;
  let out = '';
  for (let i = 0; i < chars; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out += alphabet[(state >>> 16) % alphabet.length];
  }
  return out;
}

const UNLIMITED = { exactChars: Number.MAX_SAFE_INTEGER, budgetMs: 60_000 };

/**
 * What tells bounded counting from the stall it replaced (seconds to minutes of CPU on one long word): a count
 * stays within a few BUDGET_MS, and this bound leaves room for a garbage-collection pause or a busy shared
 * machine (50 ms was exceeded once at 70 ms under load) while still failing on a stall.
 */
const STALL_MS = Math.max(BUDGET_MS * 100, 500);

function timed<T>(fn: () => T): { value: T; ms: number } {
  const started = performance.now();
  const value = fn();
  return { value, ms: performance.now() - started };
}

describe('countTextTokens', () => {
  it("equals gpt-tokenizer's encode length", () => {
    for (const text of ['Hello, world!', 'The quick brown fox jumps over the lazy dog.', 'naïve café — ünïcödé 漢字', '']) {
      expect(countTextTokens(text)).toBe(encode(text).length);
    }
    expect(countTextTokens('Hello, world!')).toBe(4);
  });

  it('counts text that looks like a special token instead of refusing it', () => {
    expect(countTextTokens('<|endoftext|> and <|im_start|>')).toBeGreaterThan(5);
  });

  it('grows with the length of the text', () => {
    let previous = 0;
    for (let n = 1; n <= 64; n *= 2) {
      const count = countTextTokens('lorem ipsum dolor sit amet '.repeat(n));
      expect(count).toBeGreaterThan(previous);
      previous = count;
    }
  });
});

describe('countPromptTokens', () => {
  it("counts OpenAI's way: 3 per message + role + content, 3 to prime the reply, name +1", () => {
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hello, world!', name: 'alice' },
    ];
    const expected =
      3 + (3 + encode('system').length + encode('You are terse.').length) + (3 + encode('user').length + encode('Hello, world!').length + encode('alice').length + 1);
    expect(countPromptTokens(messages)).toBe(expected);
    expect(countPromptTokens([])).toBe(3);
  });

  it('counts text parts like the same string and each image as 765', () => {
    const asString = countPromptTokens([{ role: 'user', content: 'What is in this picture?' }]);
    const asParts = countPromptTokens([{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }] }]);
    expect(asParts).toBe(asString);
    const withImages = countPromptTokens([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'high' } },
        ],
      },
    ]);
    expect(withImages).toBe(asString + 2 * 765);
  });

  it('adds tool definitions and tool calls', () => {
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const tools = [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ];
    const base = countPromptTokens(messages);
    expect(countPromptTokens(messages, tools)).toBe(base + encode(JSON.stringify(tools)).length);
    expect(countPromptTokens(messages, [])).toBe(base);
    expect(countPromptTokens(messages, null)).toBe(base);

    const roundTrip = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":21}' },
    ];
    expect(countPromptTokens(roundTrip)).toBeGreaterThan(base + 6 + encode('{"city":"Paris"}').length);
  });

  it('grows with the prompt', () => {
    let previous = 0;
    for (let n = 1; n <= 32; n *= 2) {
      const count = countPromptTokens([{ role: 'user', content: 'word '.repeat(n * 10) }]);
      expect(count).toBeGreaterThan(previous);
      previous = count;
    }
    expect(countPromptTokens([{ role: 'user', content: 'a' }, { role: 'user', content: 'a' }])).toBeGreaterThan(countPromptTokens([{ role: 'user', content: 'a' }]));
  });
});

describe('counting in bounded time', () => {
  it('counts ordinary text exactly as one encode of the whole would, though it encodes it piece by piece', () => {
    for (const chars of [1_000, 20_000, 150_000]) {
      const text = realText(chars);
      expect(countTextTokens(text, UNLIMITED)).toBe(encode(text).length);
    }
    const spaced = 'word  two   three\n\nnext: (x) — y, z!  '.repeat(300);
    expect(countTextTokens(spaced, UNLIMITED)).toBe(encode(spaced).length);
  });

  it('counts an unbroken run in MAX_RUN pieces, close to the true count, in milliseconds instead of seconds', () => {
    // The true counts (one encode, minutes of CPU for the longer ones): 'a' x n is n / 8 tokens, ' ' x n about n / 128, '!' x n n / 16.
    for (const [text, truth] of [
      ['a'.repeat(100_000), 12_500],
      [' '.repeat(100_000), 782],
      ['!'.repeat(100_000), 6_250],
    ] as const) {
      const { value, ms } = timed(() => countTextTokens(text));
      expect(Math.abs(value - truth) / truth).toBeLessThan(0.03);
      expect(ms).toBeLessThan(STALL_MS);
    }
    const run = randomRun(4 * MAX_RUN, 'abcdefghijklmnopqrstuvwxyz');
    expect(Math.abs(countTextTokens(run, UNLIMITED) - encode(run).length)).toBeLessThanOrEqual(4);
  });

  it('stays within its time budget on multi-megabyte text of every kind, and estimates the rest sanely', () => {
    const cases: Array<[string, string, number, number]> = [
      // label, text, lowest and highest plausible tokens per character
      ['unbroken word', 'a'.repeat(5_000_000), 0.1, 0.15],
      ['random base64', randomRun(2_000_000, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'), 0.5, 0.9],
      ['random CJK', randomRun(1_000_000, '漢字語文中国日本'), 0.5, 1.2],
      ['spaces', ' '.repeat(3_000_000), 0.005, 0.01],
      ['prose', realText(3_000_000), 0.15, 0.4],
    ];
    for (const [label, text, low, high] of cases) {
      const { value, ms } = timed(() => countTextTokens(text));
      expect(ms, label).toBeLessThan(STALL_MS);
      expect(value / text.length, label).toBeGreaterThan(low);
      expect(value / text.length, label).toBeLessThan(high);
    }
  });

  it('estimates what it does not count from a sample spread over the text, close to the exact count', () => {
    const text = realText(400_000);
    const exact = encode(text).length;
    const counter = new TokenCounter({ exactChars: 40_000, budgetMs: 60_000 });
    const estimate = counter.text(text);
    expect(counter.estimated).toBe(true);
    expect(Math.abs(estimate - exact) / exact).toBeLessThan(0.05);
    // Past the budget, later texts of the same count are estimated at the rate seen so far.
    expect(Math.abs(counter.text(text) - exact) / exact).toBeLessThan(0.05);
  });

  it('falls back to a quarter of the UTF-8 bytes when nothing could be counted', () => {
    expect(countTextTokens('héllo wörld '.repeat(1000), { exactChars: 0, budgetMs: 60_000 })).toBe(Math.ceil(Buffer.byteLength('héllo wörld '.repeat(1000)) / 4));
  });

  it('never splits a surrogate pair and handles lone surrogates', () => {
    const emoji = '😀'.repeat(10_000);
    expect(countTextTokens(emoji)).toBeGreaterThan(0);
    expect(countTextTokens('\ud800'.repeat(5_000) + 'a' + '\udc00'.repeat(5_000))).toBeGreaterThan(0);
  });

  it('bounds a whole prompt, however many messages carry the text', () => {
    const messages = Array.from({ length: 2_000 }, () => ({ role: 'user', content: 'b'.repeat(2_000) }));
    const { value, ms } = timed(() => countPromptTokens(messages, [{ type: 'function', function: { name: 'f', parameters: { x: 'z'.repeat(1_000_000) } } }]));
    expect(ms).toBeLessThan(STALL_MS);
    expect(value).toBeGreaterThan(2_000 * 2_000 * 0.1);
  });
});
