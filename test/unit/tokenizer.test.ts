import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { countPromptTokens, countTextTokens } from '../../src/governance/tokenizer.js';

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
