/**
 * The regex deny list: operator-supplied patterns, compiled once per config version. A pattern is refused at
 * compile time when it is longer than `MAX_PATTERN_LENGTH`, does not compile, or is flagged by `safe-regex2` (nested
 * quantifiers such as `(a+)+`, whose backtracking is exponential on a near-miss: one crafted prompt would stall the
 * gateway). safe-regex2 does not catch everything: a pattern like `\w+@` is accepted yet quadratic on one long word,
 * so operators should bound their quantifiers (`\w{1,64}`) as the built-in detectors do. The stream guard rescans only
 * its bounded window, so there the cost stays bounded whatever the pattern.
 */
import safeRegex from 'safe-regex2';
import type { Detection } from '../types.js';

/** The longest pattern source accepted, in characters. */
export const MAX_PATTERN_LENGTH = 512;

export interface CompiledPattern {
  /** What findings report as their subtype: the operator's name for the pattern, or `pattern_<index>`. */
  name: string;
  re: RegExp;
}

export class UnsafePatternError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`guardrail pattern ${JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern)} refused: ${reason}`);
    this.name = 'UnsafePatternError';
  }
}

/**
 * The pattern with each look-behind group `(?<=…)` / `(?<!…)` turned into a plain group `(?:…)`, for safe-regex2,
 * whose parser does not know look-behinds (and calls every pattern with one unsafe). The repetitions inside are
 * still counted, so the check stays as strict. Escapes and character classes are skipped, not rewritten.
 */
function withoutLookBehinds(source: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (char === '\\') {
      out += source.slice(i, i + 2);
      i++;
    } else if (inClass) {
      if (char === ']') inClass = false;
      out += char;
    } else if (char === '[') {
      inClass = true;
      out += char;
    } else if (source.startsWith('(?<=', i) || source.startsWith('(?<!', i)) {
      out += '(?:';
      i += 3;
    } else out += char;
  }
  return out;
}

/**
 * Compiles one operator pattern (Unicode mode, global; case-insensitive when asked), or throws an
 * `UnsafePatternError` naming the pattern and the reason.
 */
export function compilePattern(name: string, source: string, caseInsensitive = false): CompiledPattern {
  if (source.length === 0) throw new UnsafePatternError(source, 'empty pattern');
  if (source.length > MAX_PATTERN_LENGTH) throw new UnsafePatternError(source, `longer than ${MAX_PATTERN_LENGTH} characters`);
  let re: RegExp;
  try {
    re = new RegExp(source, caseInsensitive ? 'giu' : 'gu');
  } catch (error) {
    throw new UnsafePatternError(source, `not a valid regular expression (${(error as Error).message})`);
  }
  if (!safeRegex(withoutLookBehinds(source))) {
    throw new UnsafePatternError(source, 'catastrophic backtracking risk (nested or too many quantifiers, per safe-regex2); bound or flatten its repetitions');
  }
  return { name, re };
}

/** Every non-empty match of every pattern, sorted by start; each pattern's own matches do not overlap. */
export function detectPatterns(text: string, from: number, patterns: readonly CompiledPattern[]): Detection[] {
  const found: Detection[] = [];
  for (const { name, re } of patterns) {
    re.lastIndex = from;
    for (;;) {
      const match = re.exec(text);
      if (match === null) break;
      if (match[0].length === 0) {
        // Step over the empty match (a whole code point in Unicode mode) so the loop always advances.
        const code = text.codePointAt(match.index) ?? 0;
        re.lastIndex = match.index + (code > 0xffff ? 2 : 1);
        continue;
      }
      found.push({ start: match.index, end: match.index + match[0].length, kind: 'regex', subtype: name });
    }
  }
  return found.sort((a, b) => a.start - b.start || b.end - a.end);
}
