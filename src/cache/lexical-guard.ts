/**
 * A lexical check run after the vector match, before a semantic cache hit is served.
 *
 * Sentence embeddings place "how do I enable 2FA" and "how do I disable 2FA" (cosine 0.90), or the capital of
 * France and of Germany (0.84), closer together than two honest paraphrases ("What is the capital of France?" /
 * "Tell me France's capital city", 0.77). No threshold separates them, so a hit must also pass this guard: the two
 * texts must carry the same meaningful words, give or take generic ones. Precision comes first (a false hit serves a
 * wrong answer; a miss only costs one upstream call), so when in doubt the guard says no.
 *
 * The rules, each justified by a class of false hits in test/fixtures/cache-calibration.json:
 * 0. A text with no content words at all ("Hi!", "Why?", "Thanks") matches nothing: what it means lies in the
 *    words the guard ignores.
 * 1. Numbers must match exactly ("top 5" vs "top 10", "Python 3.11" vs "3.12"); number words count as digits.
 *    (Sentence embeddings barely see numbers: such pairs score 0.94 to 0.998.)
 * 2. Negation must match ("why does X work" vs "why doesn't X work").
 * 3. The same content words on both sides. A substitution (enable/disable, France/Germany, USD/EUR) asks something
 *    else; so, measured, does an addition: "How do I enable 2FA?" / "... on GitHub?", "How do I cook rice?" / "...
 *    in a rice cooker?" score 0.95+ yet want other answers. Only generic words may be added on one side ("capital"
 *    vs "capital city", "what is X" vs "what is X actually"). This costs some paraphrases ("make green tea" vs
 *    "make a cup of green tea"): misses are cheap, false hits are not.
 * 4. Direction must match: in "convert USD to EUR" the word after to/into/from/than/before/after is also marked
 *    with that word ("to:eur"), so that "EUR to USD", "Is Python faster than Java" / "Java faster than Python",
 *    with the same words, differ under rule 3. Word order is otherwise ignored: "Who did Brutus betray?" and
 *    "Who betrayed Brutus?" pass the guard (a known limit, in the calibration set as such).
 * 5. Particles must not flip: "turn on" / "turn off", "zoom in" / "zoom out", "scroll up" / "scroll down". These
 *    little words are usually noise ("a list in Python"), so they are not content words; the guard only refuses
 *    a pair where one side has a particle and the other has its opposite instead.
 * 6. Operators and signs between the words must be the same, in the same order: "What is 7 * 8?" / "7 + 8?",
 *    "Is 3 > 2?" / "3 < 2?", "x != null" / "x == null", "2x + 3 = 7" / "2x - 3 = 7" embed at 0.94 to 0.99 and
 *    have the same words and numbers. So must the operands around them (numbers, one-letter and digit-bearing
 *    names): "10 - 3" is not "3 - 10". An exclamation mark after a word ends a sentence and is not an operator.
 * 7. The same question words among who, when, where and why: "Where was Einstein born?" / "When was Einstein
 *    born?" (0.84), "How did Rome fall?" / "Why did Rome fall?" (0.93) have the same content words and want other
 *    answers. What, which and how stay fillers: they word one question many ways ("which city is the capital").
 * 8. Tense must not flip: "Who is the president of France?" / "Who was ...?" (0.92), "Was Einstein married?" / "Is
 *    Einstein married?" (0.93), "Did it rain today?" / "Will it rain today?" (0.87) have the same content words and
 *    want other answers. Only the auxiliaries tell (is/are/am/do/does, was/were/did, will/shall), so a side with
 *    none ("Who painted the Mona Lisa?" / "Who was its painter?") passes; a pair refuses when each side has a tense
 *    the other has not.
 * 9. Quantity must not flip the same way: "How do I delete all files in git?" / "... one file in git?" (0.98). The
 *    classes are all (all, every, each), some (some, any) and one.
 */

export interface ContentWords {
  /** Stemmed content words, plus direction marks such as "to:eur" (rule 4). */
  readonly words: ReadonlySet<string>;
  /** Numbers as written in digits ("5", "3.11", "1st"). */
  readonly numbers: ReadonlySet<string>;
  readonly negated: boolean;
  /** The particles of rule 5 that occur: on, off, in, out, up, down. */
  readonly particles: ReadonlySet<string>;
  /** Rule 7's question words that occur: who (whom too), whose, when, where, why. */
  readonly asks: ReadonlySet<string>;
  /** Rule 8's tenses that an auxiliary marks: present, past, future. */
  readonly tenses: ReadonlySet<string>;
  /** Rule 9's quantities that occur: all, some, one. */
  readonly quantities: ReadonlySet<string>;
  /**
   * Rule 6: the operators and signs outside the words with the operands among them, in order, space-separated
   * ("7 * 8", "x != null" as "x !="); '' when the text has no operator.
   */
  readonly expression: string;
}

/**
 * Function words and request fillers: they change how a question is asked, not what is asked
 * ("Could you please tell me ..." = "..."). Role labels of joined conversations ("user:", "assistant:") too.
 * Words that carry direction or polarity (up/down, on/off, before/after, more/less, without) are NOT here; they
 * are content words, negations or rule 4 and 5 markers.
 */
const STOPWORDS = new Set(
  `a an the this that these those it its they them their there here
  i me my mine we us our you your yours he him his she her
  is am are was were be been being do does did doing done have has had having
  will would shall should can could may might must
  what which who whom whose when where why how whats hows
  of at by for as about to into from than then so such
  and or but if also just any some all each every one with
  please tell give show explain describe let know help want need like find get
  say said ok okay hi hello hey thanks thank
  user assistant system`.split(/\s+/),
);

/**
 * Words that may be added on one side without changing the question (rule 3): "the name of France's capital city,
 * exactly" asks what "France's capital" asks, and "the best way to learn SQL" what "how to learn SQL" asks.
 */
const GENERIC_WORDS = new Set(
  [
    ...['city', 'name', 'way', 'step', 'thing', 'word', 'question', 'answer', 'mean', 'meaning', 'definition'],
    ...['exactly', 'actually', 'really', 'basically', 'simply', 'quick', 'quickly', 'briefly', 'current', 'currently', 'ever'],
    ...['best', 'good', 'simple', 'easy'],
  ].map(stem),
);

/** "not" and its relatives; "n't" is rewritten to " not" before tokenising. */
const NEGATIONS = new Set(['not', 'no', 'never', 'without', 'none', 'nobody', 'nothing', 'neither', 'nor', 'cannot', 'nowhere']);

/**
 * A word table without a prototype: a question's words are looked up in these, and "constructor" or "toString" must
 * find nothing (on a plain object literal they found Object's methods, read as a number or a particle).
 */
function wordTable(entries: Record<string, string>): Readonly<Record<string, string>> {
  return Object.assign(Object.create(null) as Record<string, string>, entries);
}

/** Number words, so that "top five" and "top 5" agree (rule 1). */
const NUMBER_WORDS = wordTable({
  zero: '0', two: '2', three: '3', four: '4', five: '5', six: '6', seven: '7', eight: '8', nine: '9',
  // "one" is left out: far more often a pronoun ("which one") than a count.
  ten: '10', eleven: '11', twelve: '12', twenty: '20', thirty: '30', forty: '40', fifty: '50', hundred: '100',
  thousand: '1000', million: '1000000', billion: '1000000000',
  first: '1st', second: '2nd', third: '3rd', fourth: '4th', fifth: '5th', last: 'last',
});

/** Rule 7's question words (stopwords all), as compared. */
const QUESTION_WORDS = wordTable({ who: 'who', whom: 'who', whose: 'whose', when: 'when', where: 'where', why: 'why' });

/** Rule 8's auxiliaries (stopwords all) and the tense each marks. */
const TENSE_WORDS = wordTable({
  is: 'present', are: 'present', am: 'present', do: 'present', does: 'present',
  was: 'past', were: 'past', did: 'past',
  will: 'future', shall: 'future',
});

/** Rule 9's quantifiers (stopwords all) and the quantity each says. */
const QUANTITY_WORDS = wordTable({ all: 'all', every: 'all', each: 'all', some: 'some', any: 'some', one: 'one' });

/** Rule 5's particles and their opposites. */
const OPPOSITE_PARTICLE = wordTable({ on: 'off', off: 'on', in: 'out', out: 'in', up: 'down', down: 'up' });

/** Words that give the next content word a direction mark (rule 4), and the mark. */
const DIRECTIONS = wordTable({ to: 'to:', into: 'to:', from: 'from:', than: 'than:', before: 'before:', after: 'after:' });

/**
 * A token: letters (with their combining marks) and digits of any script, with inner "-", ".", "+", "#" kept so that
 * "gpt-4o", "3.11", "node.js", "c++" and "c#" stay one word ("c++" must not become "c"). A trailing "." (end of
 * sentence) is not part of it. Every script's letters count: read as ASCII alone, "Как установить Python 3.12" and
 * "Как удалить Python 3.12" (install, uninstall) were both just "python 3.12", and the English embedder barely sees
 * Cyrillic or CJK either (0.98 and 1.0), so they were served each other's answers. A script written without spaces
 * (Chinese, Japanese) makes long tokens, so a reworded question there misses: misses are cheap, false hits are not.
 */
const TOKEN = /[\p{L}\p{M}\p{N}]+(?:[-.+#][\p{L}\p{M}\p{N}]+)*[+#]*/gu;
const NUMBER = /^\d+(?:\.\d+)*(?:st|nd|rd|th)?$/;
/** Rule 6: a run of operator, bracket and sign characters (what is left of a text once its tokens are taken out). */
const SYMBOLS = /[-+*/\\%=<>!^&|~()[\]{}$€£¥₹°]+/gu;
/** An exclamation mark that ends a sentence (after a word, or a question mark), not a factorial or "!=". */
const EXCLAMATION = /(?<=[\p{L}\p{M}?])!+(?=\s|$)/gu;
/** A token or a run of symbols, in the order they come (rule 6). */
const EXPRESSION_PART = new RegExp(`${TOKEN.source}|${SYMBOLS.source}`, 'gu');
const TOKEN_START = /^[\p{L}\p{M}\p{N}]/u;

export function contentWords(text: string): ContentWords {
  // Lower-cased token by token (below), so that a name's capitals can still be seen.
  const normalised = text
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    // Negation first, before the apostrophe splits "don't" into "don" + "t".
    .replace(/\bcan't\b/gi, 'can not')
    .replace(/\bwon't\b/gi, 'will not')
    .replace(/n't\b/gi, ' not')
    // Possessives and contractions: "france's" -> "france", "what's" -> "what", "we're" -> "we".
    .replace(/'(?:s|re|ve|ll|d|m)\b/gi, '')
    .replace(/'/g, '')
    // Thousands separators: "1,000" is one number, not "1" and "000".
    .replace(/(\d),(?=\d{3}\b)/g, '$1');

  const words = new Set<string>();
  const numbers = new Set<string>();
  const particles = new Set<string>();
  const asks = new Set<string>();
  const tenses = new Set<string>();
  const quantities = new Set<string>();
  let negated = false;
  let previousWasContent = false;
  let direction: string | undefined;

  for (const match of normalised.matchAll(TOKEN)) {
    const raw = match[0];
    // A generic word capitalised inside a sentence is part of a name ("Mexico City", "Good Friday"), not a filler.
    const named = titleCase(raw) && !startsSentence(normalised, match.index);
    for (const token of splitHyphenatedWords(raw.toLowerCase())) {
      if (NEGATIONS.has(token)) {
        negated = true;
        previousWasContent = false;
        continue;
      }
      const number = NUMBER.test(token) ? token : NUMBER_WORDS[token];
      if (number !== undefined) {
        numbers.add(number);
        previousWasContent = true;
        direction = undefined;
        continue;
      }
      if (OPPOSITE_PARTICLE[token] !== undefined) {
        particles.add(token);
        previousWasContent = false;
        continue;
      }
      const mark = DIRECTIONS[token];
      if (mark !== undefined) {
        // "usd to eur" has a direction; "how to enable" or "want to learn" do not (nothing meaningful before "to").
        direction = previousWasContent ? mark : undefined;
        previousWasContent = false;
        if (!STOPWORDS.has(token)) words.add(stem(token)); // "before" and "after" are content words themselves
        continue;
      }
      if (STOPWORDS.has(token)) {
        const asked = QUESTION_WORDS[token];
        if (asked !== undefined) asks.add(asked);
        const tense = TENSE_WORDS[token];
        if (tense !== undefined) tenses.add(tense);
        const quantity = QUANTITY_WORDS[token];
        if (quantity !== undefined) quantities.add(quantity);
        previousWasContent = false;
        continue;
      }
      const stemmed = stem(token);
      const generic = GENERIC_WORDS.has(stemmed) && !named;
      const word = GENERIC_WORDS.has(stemmed) && named ? `name:${stemmed}` : stemmed;
      words.add(word);
      if (direction) words.add(direction + word);
      direction = undefined;
      // "the best way to learn" has no direction: a generic word before "to" does not make one.
      previousWasContent = !generic;
    }
  }
  return { words, numbers, negated, particles, asks, tenses, quantities, expression: expressionOf(normalised.toLowerCase()) };
}

/** "City", not "city" or "CITY" (a shouted sentence names nothing). */
function titleCase(token: string): boolean {
  const first = token.charAt(0);
  const rest = token.slice(1);
  return first !== first.toLowerCase() && rest !== rest.toUpperCase();
}

/** Whether the token at `index` begins the text or a sentence (past spaces, quotes and brackets). */
function startsSentence(text: string, index: number): boolean {
  for (let i = index - 1; i >= 0; i--) {
    const char = text.charAt(i);
    if (/[\s"'([“«]/u.test(char)) continue;
    return /[.?!:;]/.test(char);
  }
  return true;
}

/** Rule 6's operators with their operands (numbers, one-letter and digit-bearing tokens), or '' without an operator. */
function expressionOf(normalised: string): string {
  const parts: string[] = [];
  let operators = false;
  for (const part of normalised.replace(EXCLAMATION, '').match(EXPRESSION_PART) ?? []) {
    if (!TOKEN_START.test(part)) {
      parts.push(part);
      operators = true;
    } else if (part.length === 1 || /\d/.test(part)) parts.push(part);
  }
  return operators ? parts.join(' ') : '';
}

/** True when a cached answer for one text may be served for the other (the rules at the top of this file). */
export function lexicallyCompatible(a: ContentWords, b: ContentWords): boolean {
  if (isEmpty(a) || isEmpty(b)) return false;
  if (a.negated !== b.negated) return false;
  if (a.expression !== b.expression) return false;
  if (!sameSet(a.numbers, b.numbers)) return false;
  if (!sameSet(a.asks, b.asks)) return false;
  if (particleFlipped(a, b) || particleFlipped(b, a)) return false;
  if (eachHasOwn(a.tenses, b.tenses) || eachHasOwn(a.quantities, b.quantities)) return false;
  return !hasMeaningfulWordMissingFrom(a.words, b.words) && !hasMeaningfulWordMissingFrom(b.words, a.words);
}

/** Convenience for one-off checks; the cache stores `contentWords` of each entry instead of recomputing it. */
export function textsLexicallyCompatible(a: string, b: string): boolean {
  return lexicallyCompatible(contentWords(a), contentWords(b));
}

function isEmpty(text: ContentWords): boolean {
  return text.words.size === 0 && text.numbers.size === 0;
}

function hasMeaningfulWordMissingFrom(words: ReadonlySet<string>, other: ReadonlySet<string>): boolean {
  for (const word of words) if (!other.has(word) && !GENERIC_WORDS.has(word)) return true;
  return false;
}

/** Rule 5: `a` says "on" where `b` says "off" (and not "on"). */
function particleFlipped(a: ContentWords, b: ContentWords): boolean {
  for (const particle of a.particles) {
    if (!b.particles.has(particle) && b.particles.has(OPPOSITE_PARTICLE[particle]!)) return true;
  }
  return false;
}

/** Rules 8 and 9: each side has a mark the other has not (a side with none, or with all of the other's, passes). */
function eachHasOwn(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  let aOwn = false;
  let bOwn = false;
  for (const value of a) if (!b.has(value)) aOwn = true;
  for (const value of b) if (!a.has(value)) bOwn = true;
  return aOwn && bOwn;
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const value of a) if (!b.has(value)) return false;
  return true;
}

/**
 * "well-known" reads like "well known", so plain words joined by hyphens are split; a hyphen next to a digit is
 * part of a name ("gpt-4o", "covid-19", "utf-8") and stays.
 */
function splitHyphenatedWords(token: string): string[] {
  return /\d/.test(token) || !token.includes('-') ? [token] : token.split('-');
}

/**
 * A light suffix stemmer, only so that "cities"/"city", "enabling"/"enable", "languages"/"language" meet. It need
 * not produce real words, only the same stem on both sides. Names with digits ("2fa", "gpt-4o") are left alone.
 */
export function stem(word: string): string {
  if (/\d/.test(word) || word.length <= 3) return word;
  let stemmed = word;
  if (stemmed.endsWith('ies') && stemmed.length > 4) stemmed = stemmed.slice(0, -3) + 'i';
  else if (stemmed.endsWith('ing') && stemmed.length > 5) stemmed = undouble(stemmed.slice(0, -3));
  else if (stemmed.endsWith('ed') && stemmed.length > 4) stemmed = undouble(stemmed.slice(0, -2));
  else if (/(?:s|x|z|ch|sh)es$/.test(stemmed)) stemmed = stemmed.slice(0, -2);
  else if (stemmed.endsWith('s') && !/(?:ss|us|is)$/.test(stemmed)) stemmed = stemmed.slice(0, -1);
  // A final "e" comes and goes with suffixes (enable, enabling, enabled): drop it always. A final "y" turns into
  // "i" before them (city, cities; movie, movies), so "y" and "ie" both end as "i".
  if (stemmed.endsWith('e') && stemmed.length > 3) stemmed = stemmed.slice(0, -1);
  if (stemmed.endsWith('y') && stemmed.length > 3) stemmed = stemmed.slice(0, -1) + 'i';
  return stemmed;
}

/** "stopp" (from "stopped") -> "stop", "runn" -> "run"; but "add", "tell", "pass" keep their double letter. */
function undouble(stemmed: string): string {
  return /([b-df-hj-np-tv-z])\1$/.test(stemmed) && !/(?:ll|ss|zz|ff|dd)$/.test(stemmed) ? stemmed.slice(0, -1) : stemmed;
}
