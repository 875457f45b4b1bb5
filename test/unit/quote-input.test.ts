import { describe, expect, it } from 'vitest';
import { gatewayError, MAX_ERROR_MESSAGE_CHARS } from '../../src/core/errors.js';
import { quoteInput } from '../../src/core/quote-input.js';

describe('quoteInput', () => {
  it('returns values up to the limit unchanged', () => {
    expect(quoteInput('openai/gpt-4o-mini')).toBe('openai/gpt-4o-mini');
    expect(quoteInput('a'.repeat(200))).toBe('a'.repeat(200));
    expect(quoteInput('abc', 3)).toBe('abc');
  });

  it('cuts a longer value and says how long it was', () => {
    expect(quoteInput('a'.repeat(12_000_000))).toBe(`${'a'.repeat(200)}… (12000000 characters)`);
    expect(quoteInput('abcdef', 3)).toBe('abc… (6 characters)');
  });

  it('never splits a surrogate pair', () => {
    const value = `${'a'.repeat(199)}😀tail`;
    const quoted = quoteInput(value);
    expect(quoted.startsWith(`${'a'.repeat(199)}…`)).toBe(true);
    expect(quoted).not.toContain('\ud83d');
  });
});

describe('GatewayError', () => {
  it('bounds any message, whatever built it', () => {
    const error = gatewayError('invalid_request', `bad: ${'x'.repeat(1_000_000)}`);
    expect(error.message.length).toBeLessThan(MAX_ERROR_MESSAGE_CHARS + 40);
    expect(error.message).toContain('(1000005 characters)');
    expect(gatewayError('invalid_request', 'short').message).toBe('short');
  });
});
