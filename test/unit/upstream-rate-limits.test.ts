import { describe, expect, it } from 'vitest';
import { parseResetDuration } from '../../src/core/durations.js';
import { upstreamRateLimits } from '../../src/providers/upstream-rate-limits.js';

describe('the reset durations OpenAI writes (Go duration format)', () => {
  it('reads milliseconds, seconds, minutes and hours, and nothing else', () => {
    expect(parseResetDuration('20ms')).toBe(20);
    expect(parseResetDuration('1.5s')).toBe(1500);
    expect(parseResetDuration('6m0s')).toBe(360_000);
    expect(parseResetDuration('1h2m3.5s')).toBe(3_723_500);
    expect(parseResetDuration('0s')).toBe(0);
    for (const bad of ['', 'soon', '5', '1d', '-1s', 'ms']) expect(parseResetDuration(bad)).toBeNull();
  });
});

describe('upstream rate-limit headers in a route style', () => {
  const now = Date.parse('2026-11-30T12:00:00.000Z');

  it('leaves a reset it cannot read out rather than inventing one', () => {
    const pairs = upstreamRateLimits({ 'x-ratelimit-limit-requests': '10', 'x-ratelimit-reset-requests': 'later' }, 'anthropic', now);
    expect(pairs).toEqual([['anthropic-ratelimit-requests-limit', '10']]);
  });

  it("turns Anthropic's reset time into OpenAI's duration, and its input and output groups are left to Anthropic's own route", () => {
    const headers = {
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-reset': '2026-11-30T12:01:30Z',
      'anthropic-ratelimit-input-tokens-limit': '8000',
    };
    expect(upstreamRateLimits(headers, 'openai', now)).toEqual([
      ['x-ratelimit-limit-requests', '50'],
      ['x-ratelimit-reset-requests', '1m30s'],
    ]);
  });

  it("passes Azure OpenAI's remaining counts, which come without their limits", () => {
    const headers = { 'x-ratelimit-remaining-requests': '119', 'x-ratelimit-remaining-tokens': '119800' };
    expect(upstreamRateLimits(headers, 'openai', now)).toEqual([
      ['x-ratelimit-remaining-requests', '119'],
      ['x-ratelimit-remaining-tokens', '119800'],
    ]);
  });

  it("passes a vendor's own groups in the route's style whole, and never a value Node could not send", () => {
    const headers = { 'x-ratelimit-limit-requests-day': '14400', 'x-ratelimit-remaining-tokens-minute': '5990', 'x-ratelimit-reset-requests': 'bad\u0001value' };
    expect(upstreamRateLimits(headers, 'openai', now)).toEqual([
      ['x-ratelimit-limit-requests-day', '14400'],
      ['x-ratelimit-remaining-tokens-minute', '5990'],
    ]);
  });

  it('finds nothing in an answer without them', () => {
    expect(upstreamRateLimits({ 'content-type': 'application/json' }, 'openai', now)).toEqual([]);
  });
});
