import { describe, expect, it } from 'vitest';
import { compileGuardrails } from '../../src/guardrails/scanner.js';
import { compilePattern, UnsafePatternError } from '../../src/guardrails/detectors/regex-list.js';
import { ownNow } from '../helpers/own-time.js';

// Operator regexes with repetitions in a row that can take the same characters (no nesting, so safe-regex2 lets them
// through, and each repetition is bounded): every start position tries every split of a run between them. Before
// the check, `\d*\d*\d*x` held the event loop 30 s on 1,000 digits and `\S+@\S+\.com` 5 s on 10 KB of `@`.

describe('operator patterns whose repetitions trade characters', () => {
  const polynomial = [
    '\\d*\\d*\\d*x',
    '\\w+\\s?\\w+!',
    '\\S+@\\S+\\.com',
    '.*foo.*bar',
    '\\d+.\\d+x',
    '(\\d+)\\s*(\\d+)x',
    '[a-z]+[a-z0-9]*@',
    '(?:ab)+(?:ab)+x',
    '\\d{1,40}\\d{1,40}\\b',
    '.*foo.*(?=bar)',
  ];

  it.each(polynomial)('refuses %s, naming it and the way out', (pattern) => {
    expect(() => compilePattern('p', pattern)).toThrow(UnsafePatternError);
    expect(() => compilePattern('p', pattern)).toThrow(/polynomial backtracking risk.*max_match_length/);
    expect(() => compileGuardrails([{ name: 'r', kind: 'regex', action: 'redact', patterns: [pattern] }])).toThrow(JSON.stringify(pattern));
    expect(() => compileGuardrails([{ name: 'r', kind: 'national_id', action: 'redact', custom_formats: [{ name: 'f', pattern }] }])).toThrow(/polynomial/);
  });

  it('refuses by case only when case folds them together', () => {
    expect(() => compilePattern('p', 'A+a+x')).not.toThrow();
    expect(() => compilePattern('p', 'A+a+x', true)).toThrow(/polynomial/);
  });

  it('accepts repetitions kept apart by a character the first cannot take, or short enough to be cheap', () => {
    for (const pattern of [
      '[a-z]+-\\d+',
      '\\w+@',
      'https?://[a-z0-9.-]+\\.corp\\.example\\b',
      'TICKET-\\d{3,6}',
      '\\d{3}-?\\d{4}',
      '\\d{2,4}\\d{2,4}',
      '[^\\s@]+@[^\\s@]+\\.com',
      'sk-[A-Za-z0-9]{20,}',
      '(?:Mr|Ms)\\.? [A-Z][a-z]+',
      '(?<!\\d)[12]\\d{2}(?:0[1-9]|1[0-2])\\d{10}(?!\\d)',
      // Nothing after the last repetition can fail, so the first split tried matches: no split is traded.
      '.*secret.*',
      '(\\d+)\\s*(\\d+)',
      '\\d{1,40}\\d{1,40}',
      '\\w+\\s+\\w+(?:!)?',
    ]) {
      expect(() => compilePattern('p', pattern), pattern).not.toThrow();
    }
  });

  it('accepts a trading pattern under a max_match_length that keeps its splits cheap, and it then scans fast', () => {
    const rules = compileGuardrails([{ name: 'r', kind: 'regex', action: 'redact', patterns: ['\\S+@\\S+\\.com', '\\w+\\s?\\w+!'], max_match_length: 24 }]);
    expect(rules.redact('mail a@b.com now', rules.scan('mail a@b.com now'))).toBe('mail [REDACTED:regex] now');
    for (const hostile of ['@'.repeat(64 * 1024), 'a'.repeat(64 * 1024)]) {
      const started = ownNow();
      rules.scan(hostile);
      expect(ownNow() - started).toBeLessThan(2_000);
    }
  });
});
