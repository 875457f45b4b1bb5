/**
 * Polynomial backtracking in an operator pattern: two or more repetitions in a row that can match the same
 * characters (`\d*\d*x`, `\w+\s?\w+!`, `\S+@\S+\.com`). Nothing is nested, so safe-regex2 lets them through, and
 * bounding each repetition to `max_match_length` does not help: on a near-miss the engine tries every way of
 * splitting the run between them, at every start position, so one start costs the product of their lengths
 * (`\d*\d*\d*x` took 30 s on 1,000 digits; `\S+@\S+\.com` 5 s on 10 KB of `@`), all on the event loop.
 *
 * The check walks the pattern's parse: from each repetition it follows what may come after it (optional items
 * skipped, mandatory ones passed while the repetition could have taken their characters too) and multiplies the
 * lengths of the repetitions met on the way that can take the same characters. A chain whose product passes `MAX_TRADE_COST` is
 * refused. Which characters an item matches is found by running it on probe characters: ASCII, a sample of other
 * scripts, and every character the pattern itself names.
 */

/** The most one start position may cost in traded splits: four times what one bounded repetition costs. */
export const MAX_TRADE_COST = 1024;

interface Atom {
  type: 'atom';
  /** The probe characters it matches (all of them for a back-reference, which can repeat anything). */
  chars: ReadonlySet<string>;
}
interface Assertion {
  type: 'assertion';
}
interface Group {
  type: 'group';
  alternatives: Item[][];
  /** A look-ahead or look-behind: it matches no characters of its own. */
  lookaround: boolean;
}
interface Item {
  node: Atom | Assertion | Group;
  min: number;
  max: number;
  source: string;
}

const PROBE_SAMPLE = '\u00a0\u00e9\u00df\u03a9\u044f\u4e2d\u0663\u2028\u200b\uff21\u0301\u{1F600}';

function probeAlphabet(source: string): string[] {
  const chars = new Set<string>();
  for (let code = 0; code < 128; code++) chars.add(String.fromCharCode(code));
  for (const char of PROBE_SAMPLE) chars.add(char);
  // The characters the pattern names (in classes and ranges too), so a class of another script is probed by its own.
  for (const char of source) chars.add(char);
  for (const match of source.matchAll(/\\u\{([0-9a-fA-F]+)\}|\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})/g)) {
    const code = parseInt(match[1] ?? match[2] ?? match[3]!, 16);
    if (code <= 0x10ffff) chars.add(String.fromCodePoint(code));
  }
  return [...chars];
}

/** A recursive-descent parse of a valid Unicode-mode pattern, enough to see its sequences and repetitions. */
class Parser {
  private at = 0;
  constructor(
    private readonly source: string,
    private readonly flags: string,
    private readonly probes: readonly string[],
    private readonly maxRepeat: number,
  ) {}

  parse(): Group {
    return { type: 'group', alternatives: this.alternatives(), lookaround: false };
  }

  private alternatives(): Item[][] {
    const alternatives: Item[][] = [[]];
    while (this.at < this.source.length && this.source[this.at] !== ')') {
      if (this.source[this.at] === '|') {
        this.at++;
        alternatives.push([]);
      } else alternatives.at(-1)!.push(this.item());
    }
    return alternatives;
  }

  private item(): Item {
    const start = this.at;
    const node = this.node();
    const [min, max] = this.quantifier();
    return { node, min, max, source: this.source.slice(start, this.at) };
  }

  private node(): Atom | Assertion | Group {
    const s = this.source;
    const char = s[this.at]!;
    if (char === '(') {
      const prefix = /^\((?:\?(?:[:=!]|<[=!]|<[A-Za-z_$][\w$]*>))?/.exec(s.slice(this.at, this.at + 40))![0];
      this.at += prefix.length;
      const alternatives = this.alternatives();
      this.at++; // the `)`
      return { type: 'group', alternatives, lookaround: /^\(\?<?[=!]/.test(prefix) };
    }
    if (char === '^' || char === '$') {
      this.at++;
      return { type: 'assertion' };
    }
    const start = this.at;
    if (char === '[') this.skipClass();
    else if (char === '\\') {
      const next = s[this.at + 1] ?? '';
      if (next === 'b' || next === 'B') {
        this.at += 2;
        return { type: 'assertion' };
      }
      if (/[1-9]/.test(next) || (next === 'k' && s[this.at + 2] === '<')) {
        this.at = next === 'k' ? s.indexOf('>', this.at) + 1 : this.at + 1 + /^\d+/.exec(s.slice(this.at + 1))![0].length;
        return { type: 'atom', chars: new Set(this.probes) };
      }
      this.skipEscape();
    } else this.at += (s.codePointAt(this.at) ?? 0) > 0xffff ? 2 : 1;
    return { type: 'atom', chars: this.matched(s.slice(start, this.at)) };
  }

  private skipClass(): void {
    this.at++;
    while (this.at < this.source.length && this.source[this.at] !== ']') {
      if (this.source[this.at] === '\\') this.skipEscape();
      else this.at++;
    }
    this.at++; // the `]`
  }

  private skipEscape(): void {
    const rest = this.source.slice(this.at);
    const escape = /^\\(?:[upP]\{[^}]*\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|c[A-Za-z]|[\s\S])/u.exec(rest);
    this.at += escape?.[0].length ?? 1;
  }

  private matched(atom: string): Set<string> {
    try {
      const re = new RegExp(`^(?:${atom})$`, this.flags);
      return new Set(this.probes.filter((probe) => re.test(probe)));
    } catch {
      return new Set(this.probes);
    }
  }

  /** `[min, max]` of the quantifier here (unbounded ones at `maxRepeat`, as they run), `[1, 1]` when none. */
  private quantifier(): [number, number] {
    const s = this.source;
    const char = s[this.at];
    let bounds: [number, number] | null = null;
    if (char === '*' || char === '+' || char === '?') {
      bounds = [char === '+' ? 1 : 0, char === '?' ? 1 : this.maxRepeat];
      this.at++;
    } else if (char === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(this.at, this.at + 24));
      if (match) {
        const min = Number(match[1]);
        bounds = [min, match[2] === undefined ? min : match[3] === '' ? Math.max(min, this.maxRepeat) : Number(match[3])];
        this.at += match[0].length;
      }
    }
    if (bounds === null) return [1, 1];
    if (s[this.at] === '?') this.at++; // lazy: the same splits, tried in the other order
    return bounds;
  }
}

/** The characters an item can consume: an atom's own, everything inside a group. */
function charsOf(node: Item['node']): Set<string> {
  if (node.type === 'atom') return new Set(node.chars);
  const chars = new Set<string>();
  if (node.type === 'group' && !node.lookaround) for (const alternative of node.alternatives) for (const item of alternative) for (const char of charsOf(item.node)) chars.add(char);
  return chars;
}

/** The characters a match of the item can start with (a group's leading items', through the optional ones). */
function startCharsOf(node: Item['node']): Set<string> {
  if (node.type !== 'group') return charsOf(node);
  const chars = new Set<string>();
  if (node.lookaround) return chars;
  for (const alternative of node.alternatives) {
    for (const item of alternative) {
      for (const char of startCharsOf(item.node)) chars.add(char);
      if (!nullable(item)) break;
    }
  }
  return chars;
}

function nullable(item: Item): boolean {
  const { node } = item;
  if (item.min === 0 || node.type === 'assertion') return true;
  if (node.type === 'atom') return false;
  return node.lookaround || node.alternatives.some((alternative) => alternative.every(nullable));
}

function intersect(a: ReadonlySet<string>, b: ReadonlySet<string>): Set<string> {
  return new Set([...a].filter((char) => b.has(char)));
}

type Walk = { risk: string } | { passed: Set<string>; cost: number } | null;

/** The items that follow a point of the pattern: the rest of its sequence, then those of the enclosing ones. */
type Continuation = ReadonlyArray<{ sequence: readonly Item[]; from: number }>;

/** Whether an item can fail to match where it stands: it must take a character, or it asserts something. */
function canFail(item: Item): boolean {
  const { node } = item;
  if (node.type === 'assertion' || !nullable(item)) return true;
  return node.type === 'group' && item.min > 0 && (node.lookaround || node.alternatives.some((alternative) => alternative.some(canFail)));
}

/**
 * Whether anything after a repetition can still fail the match. When nothing can (`.*foo.*`: the last `.*` takes
 * what is left, even nothing), the first split the engine tries succeeds, so the splits are never traded.
 */
function failsAfter(sequence: readonly Item[], index: number, after: Continuation): boolean {
  if (sequence.slice(index + 1).some(canFail)) return true;
  return after.some((next) => next.sequence.slice(next.from).some(canFail));
}

/**
 * Follows `sequence` from `from` with `chars` still in play and `cost` splits so far: a risk (the chain's source),
 * `passed` (the end reached, with what is still in play), or null (a mandatory item none of `chars` can match).
 * `after` is what follows the sequence, to tell whether a repetition's splits can be traded (see failsAfter).
 */
function walk(sequence: readonly Item[], from: number, chars: Set<string>, cost: number, chain: string, after: Continuation): Walk {
  for (let index = from; index < sequence.length; index++) {
    const item = sequence[index]!;
    const { node } = item;
    if (node.type === 'assertion' || (node.type === 'group' && node.lookaround)) continue;
    const shared = intersect(startCharsOf(node), chars);
    if (item.max > 1 && item.max > item.min && shared.size > 0) {
      const traded = cost * (item.max - item.min);
      if (traded > MAX_TRADE_COST && failsAfter(sequence, index, after)) return { risk: `${chain}…${item.source}` };
      cost = traded;
      if (!nullable(item)) chars = intersect(charsOf(node), chars);
      continue;
    }
    if (node.type === 'group') {
      const passed: Set<string>[] = [];
      // What follows an alternative: the rest of this sequence, then what follows it.
      const rest = [{ sequence, from: index + 1 }, ...after];
      for (const alternative of node.alternatives) {
        const result = walk(alternative, 0, chars, cost, chain, rest);
        if (result !== null && 'risk' in result) return result;
        if (result !== null) passed.push(result.passed);
      }
      if (item.min === 0) continue;
      if (passed.length === 0) return null;
      chars = new Set(passed.flatMap((set) => [...set]));
      continue;
    }
    if (item.min === 0) continue;
    // A mandatory character the repetition before could have taken too does not stop the trade (`\S+@\S+`, `.*foo.*`).
    if (shared.size === 0) return null;
  }
  return { passed: chars, cost };
}

/**
 * Every sequence of the pattern with the items after it in its enclosing ones: `then` is what follows a sequence's
 * end (none past a repeated group: what repeats a group is nesting, safe-regex2's part).
 */
function findRisk(group: Group, then: readonly { sequence: Item[]; from: number }[]): string | null {
  for (const sequence of group.alternatives) {
    for (let index = 0; index < sequence.length; index++) {
      const item = sequence[index]!;
      if (item.node.type === 'group') {
        const after = item.max > 1 ? [] : [{ sequence, from: index + 1 }, ...then];
        const inner = findRisk(item.node, item.node.lookaround ? [] : after);
        if (inner !== null) return inner;
      }
      if (item.max <= 1 || item.max === item.min || (item.node.type === 'group' && item.node.lookaround)) continue;
      let result: Walk = { passed: charsOf(item.node), cost: item.max - item.min };
      const nexts = [{ sequence, from: index + 1 }, ...then];
      for (let n = 0; n < nexts.length; n++) {
        const next = nexts[n]!;
        result = walk(next.sequence, next.from, result.passed, result.cost, item.source, nexts.slice(n + 1));
        if (result === null || 'risk' in result) break;
      }
      if (result !== null && 'risk' in result) return result.risk;
    }
  }
  return null;
}

/**
 * The repetitions of `source` (a valid Unicode-mode pattern, unbounded repetitions running at `maxRepeat`) that
 * can trade characters at more than `MAX_TRADE_COST` splits per start, as `first…last`; or null.
 */
export function tradedRepetitions(source: string, caseInsensitive: boolean, maxRepeat: number): string | null {
  const flags = caseInsensitive ? 'iu' : 'u';
  return findRisk(new Parser(source, flags, probeAlphabet(source), maxRepeat).parse(), []);
}
