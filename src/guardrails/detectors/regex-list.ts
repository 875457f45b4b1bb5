/**
 * The regex deny list: operator-supplied patterns, compiled once per config version. A pattern is refused at
 * compile time when it is longer than `MAX_PATTERN_LENGTH`, does not compile, is flagged by `safe-regex2` (nested
 * quantifiers such as `(a+)+`, whose backtracking is exponential on a near-miss: one crafted prompt would stall the
 * gateway), or repeats a group whose alternatives can match the same text (`(a|ab)*`, see ambiguousRepetition).
 * Those checks leave patterns like `[a-z]+-\d+` or `\w+@`, whose cost is quadratic in the length of one long run
 * (each start position scans to its end: a 1 MB word held the event loop for minutes). So every unbounded
 * repetition (`*`, `+`, `{n,}`) is compiled bounded to the rule's longest match (`max_match_length`, default 256):
 * `[a-z]{1,256}-\d{1,256}`, as the built-in detectors bound theirs. A match never spans more than that anyway (the
 * stream guard's look-behind assumes it), and each attempt then costs a bounded number of steps.
 */
import safeRegex from 'safe-regex2';
import type { Detection } from '../types.js';
import { MAX_TRADE_COST, tradedRepetitions } from './traded-repetitions.js';

/** The longest pattern source accepted, in characters. */
export const MAX_PATTERN_LENGTH = 512;
/** The bound given to an operator pattern's unbounded repetitions when its rule sets no `max_match_length`. */
export const DEFAULT_MAX_REPEAT = 256;

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
  return rewriteSyntax(source, (at) => (source.startsWith('(?<=', at) || source.startsWith('(?<!', at) ? { text: '(?:', length: 4 } : null));
}

/**
 * `source` walked outside its escapes (`\u{…}`, `\p{…}`, `\k<…>` included) and character classes, which are copied as
 * they are: at every other position `rewrite` says what to write there and how many characters of the source that
 * stands for, or null to copy the character.
 */
function rewriteSyntax(source: string, rewrite: (at: number) => { text: string; length: number } | null): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (char === '\\') {
      const next = source[i + 1] ?? '';
      let end = i + 2;
      if ((next === 'u' || next === 'p' || next === 'P') && source[i + 2] === '{') end = source.indexOf('}', i) + 1;
      else if (next === 'k' && source[i + 2] === '<') end = source.indexOf('>', i) + 1;
      if (end <= i) end = source.length;
      out += source.slice(i, end);
      i = end - 1;
    } else if (inClass) {
      if (char === ']') inClass = false;
      out += char;
    } else if (char === '[') {
      inClass = true;
      out += char;
    } else {
      const rewritten = rewrite(i);
      if (rewritten === null) out += char;
      else {
        out += rewritten.text;
        i += rewritten.length - 1;
      }
    }
  }
  return out;
}

/** A branch of an alternation that is a plain literal: letters, digits, spaces and escaped punctuation only. */
const PLAIN_LITERAL = /^(?:[\p{L}\p{N} _\-,:;'"/@#%&=<>!~`]|\\[^A-Za-z0-9])+$/u;

/** The first character a plain literal branch matches (an escape stands for the character it escapes). */
function firstCharOf(branch: string, caseInsensitive: boolean): string {
  const first = branch.startsWith('\\') ? branch.slice(1, 2) : (String.fromCodePoint(branch.codePointAt(0) ?? 0));
  return caseInsensitive ? first.toLowerCase() : first;
}

/** Whether an alternation's branches cannot match the same start: plain literals, each starting differently. */
function distinctBranches(branches: readonly string[], caseInsensitive: boolean): boolean {
  const firsts = new Set<string>();
  for (const branch of branches) {
    if (!PLAIN_LITERAL.test(branch)) return false;
    const first = firstCharOf(branch, caseInsensitive);
    if (firsts.has(first)) return false;
    firsts.add(first);
  }
  return true;
}

/** The length of the quantifier at `at` that lets what precedes it repeat (`*`, `+`, `{n,m}` past 1), else 0. */
function repeatingQuantifier(source: string, at: number): number {
  const char = source[at];
  if (char === '*' || char === '+') return 1;
  if (char !== '{') return 0;
  const match = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at, at + 24));
  if (!match) return 0;
  const max = match[2] === undefined ? Number(match[1]) : match[3] === '' ? Infinity : Number(match[3]);
  return max > 1 ? match[0].length : 0;
}

/**
 * A repeated group holding an alternation whose branches can match the same text (`(a|ab)*`, `(\d|\d\d)+`,
 * `(\w|\d)+`): on a near-miss the engine tries every way of splitting the text among the branches, which is
 * exponential (`(a|a)*b` on 30 characters ran for 90 s). safe-regex2 counts nested quantifiers only and lets these
 * through. Conservative: a repeated group's alternations must be plain literals starting with different characters
 * (`(?:foo|bar)+` passes; `(?:cat|car)+` must be written `ca[tr]`). Returns the offending group's source, or null.
 */
function ambiguousRepetition(source: string, caseInsensitive: boolean): string | null {
  interface Group {
    start: number;
    branchStart: number;
    branches: string[];
    /** An alternation inside it (its own or a nested group's) whose branches may overlap. */
    ambiguous: boolean;
  }
  const stack: Group[] = [{ start: -1, branchStart: 0, branches: [], ambiguous: false }];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (char === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      continue;
    }
    if (char === '[') inClass = true;
    else if (char === '(') {
      // The group's own text starts after its `(?:`, `(?<name>`, `(?=`... prefix.
      const prefix = /^\((?:\?(?:[:=!]|<[=!]|<[A-Za-z_$][\w$]*>))?/.exec(source.slice(i, i + 40))?.[0].length ?? 1;
      stack.push({ start: i, branchStart: i + prefix, branches: [], ambiguous: false });
      i += prefix - 1;
    } else if (char === '|') {
      const group = stack.at(-1)!;
      group.branches.push(source.slice(group.branchStart, i));
      group.branchStart = i + 1;
    } else if (char === ')' && stack.length > 1) {
      const group = stack.pop()!;
      if (group.branches.length > 0) {
        group.branches.push(source.slice(group.branchStart, i));
        if (!distinctBranches(group.branches, caseInsensitive)) group.ambiguous = true;
      }
      if (group.ambiguous && repeatingQuantifier(source, i + 1) > 0) return source.slice(group.start, i + 1);
      if (group.ambiguous) stack.at(-1)!.ambiguous = true;
    }
  }
  return null;
}

/**
 * Compiles one operator pattern (Unicode mode, global; case-insensitive when asked), or throws an
 * `UnsafePatternError` naming the pattern and the reason. `checkTrades` false skips the check of repetitions in a row
 * (traded-repetitions.ts) for a pattern stored before that check existed (see compileGuardrails).
 */
export function compilePattern(name: string, source: string, caseInsensitive = false, maxRepeat = DEFAULT_MAX_REPEAT, checkTrades = true): CompiledPattern {
  if (source.length === 0) throw new UnsafePatternError(source, 'empty pattern');
  if (source.length > MAX_PATTERN_LENGTH) throw new UnsafePatternError(source, `longer than ${MAX_PATTERN_LENGTH} characters`);
  const flags = caseInsensitive ? 'giu' : 'gu';
  try {
    new RegExp(source, flags);
  } catch (error) {
    throw new UnsafePatternError(source, `not a valid regular expression (${(error as Error).message})`);
  }
  const risk = backtrackingRisk(source, caseInsensitive);
  if (risk !== null) throw new UnsafePatternError(source, risk);
  // Bounded repetitions are linear alone, not in a row: see traded-repetitions.ts.
  const traded = checkTrades ? tradedRepetitions(source, caseInsensitive, maxRepeat) : null;
  if (traded !== null) throw new UnsafePatternError(source, tradedRisk(traded, maxRepeat));
  return { name, re: new RegExp(boundRepetitions(source, maxRepeat), flags) };
}

/**
 * `source` (a valid Unicode-mode pattern) with each unbounded repetition bounded to at most `max` (and never below
 * its own minimum): `*` becomes `{0,max}`, `+` `{1,max}`, `{n,}` `{n,max(n,max)}`; a lazy `?` after it stays.
 * Escapes (`\u{…}`, `\p{…}`, `\k<…>` included) and character classes are copied as they are.
 */
export function boundRepetitions(source: string, max: number): string {
  return rewriteSyntax(source, (at) => {
    const char = source[at];
    if (char === '*') return { text: `{0,${max}}`, length: 1 };
    if (char === '+') return { text: `{1,${max}}`, length: 1 };
    if (char !== '{') return null;
    const match = /^\{(\d+),\}/.exec(source.slice(at, at + 24));
    if (!match) return null;
    const min = Number(match[1]);
    return { text: `{${min},${Math.max(min, max)}}`, length: match[0].length };
  });
}

function tradedRisk(chain: string, maxRepeat: number): string {
  return (
    `polynomial backtracking risk: the repetitions ${chain.slice(0, 60)} can match the same characters, so a near-miss ` +
    `tries every split between them (more than ${MAX_TRADE_COST} per position at max_match_length ${maxRepeat}); ` +
    'make them match different characters (`[^\\s@]+@[^\\s@]+`, not `\\S+@\\S+`) or lower max_match_length'
  );
}

/**
 * Why a pattern could backtrack catastrophically (nested quantifiers, per safe-regex2, or a repeated group whose
 * alternatives can match the same text), or null. For every operator pattern tollgate runs over traffic.
 */
export function backtrackingRisk(source: string, caseInsensitive = false): string | null {
  if (!safeRegex(withoutLookBehinds(source))) return 'catastrophic backtracking risk (nested or too many quantifiers, per safe-regex2); bound or flatten its repetitions';
  const ambiguous = ambiguousRepetition(source, caseInsensitive);
  if (ambiguous === null) return null;
  return `catastrophic backtracking risk: the repeated group ${ambiguous.slice(0, 60)} has alternatives that can match the same text; make them start differently (plain words) or use a character class`;
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
