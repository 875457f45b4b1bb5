import { countTokens } from 'gpt-tokenizer';
import type { ChatMessage } from '../core/canonical.js';
import { CountCache, countKey } from './count-cache.js';

/**
 * Token counting for budget reservations, count-tokens answers and charging streams that end without a usage
 * report.
 *
 * gpt-tokenizer's default encoding (o200k_base, the GPT-4o / GPT-5 family's) serves for every provider: other
 * vendors' tokenizers differ by some percent either way, which is fine for an estimate; billed usage comes
 * from the upstream whenever it reports any.
 *
 * Counting runs on the event loop, so it must take bounded time whatever the text. gpt-tokenizer's cost grows
 * with the square of a pre-token's length: one unbroken 100 KB "word" (`aaaa...`, a run of spaces or of `!`)
 * took 7-8 s, during which nothing else was served. So:
 * - text is encoded piece by piece, and no piece holds a run of whitespace or of non-whitespace longer than
 *   MAX_RUN characters (a longer run is cut, which changes its count by a token or so per cut: such runs are
 *   not language); pieces are otherwise cut only before a space that follows a word, where the encoder's own
 *   pre-tokenizer splits too, so ordinary text counts exactly as one `encode` of the whole would;
 * - one count (a prompt, a completion) encodes at most EXACT_CHARS characters and spends at most BUDGET_MS
 *   of tokenizer time; the rest is ESTIMATED at the tokens per character of what was counted (or, when too
 *   little was counted to tell, a quarter of its UTF-8 bytes). Ordinary text is counted exactly well past
 *   100 KB (about 0.1-0.3 µs a character); the worst text (random letters, CJK) costs about 2.5 µs a
 *   character in MAX_RUN pieces, so the budget, not the size, bounds it.
 */

/** Text that looks like a special token (`<|endoftext|>`) is counted as plain text, never refused. */
const PLAIN = { disallowedSpecial: new Set<string>() };

/** Longest run of whitespace or of non-whitespace encoded in one piece (a piece costs at most ~0.3 ms). */
export const MAX_RUN = 128;
/** A piece ends at the first space past this many characters, so the time budget is checked often. */
const PIECE_CHARS = 1024;
/** Characters encoded exactly per count; past them the rest is estimated. */
export const EXACT_CHARS = 512 * 1024;
/** Tokenizer time per count; past it the rest is estimated. */
export const BUDGET_MS = 5;
/**
 * Characters counted whatever the time (a few ms at worst), so that an estimate always rests on a sample;
 * fewer than this counted (only when `exactChars` is smaller) and the estimate is a quarter of the bytes.
 */
const MIN_SAMPLE = 2048;

/** Exact counts kept for texts counted again (see count-cache.ts): 50,000 texts, about 4 MB of heap. */
export const COUNTED = new CountCache(50_000);

export interface CountLimits {
  exactChars: number;
  budgetMs: number;
}

const DEFAULT_LIMITS: CountLimits = { exactChars: EXACT_CHARS, budgetMs: BUDGET_MS };

// The encoder builds its tables on first use, and its merge tables on the first text that needs merging (each
// 10-20 ms): at start-up, not inside a request's budget.
countTokens('tollgate warms up: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', PLAIN);

/** The whitespace of JavaScript's `\s` (what the encoder's pre-tokenizer means by it). */
function isSpace(code: number): boolean {
  if (code > 32 && code < 0x85) return false;
  return (
    code === 32 ||
    (code >= 9 && code <= 13) ||
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** Where the piece starting at `start` ends (exclusive), at most at `limit`. */
function pieceEnd(text: string, start: number, limit: number): number {
  if (limit - start <= MAX_RUN) return limit;
  let space = isSpace(text.charCodeAt(start));
  let runStart = start;
  let cut = -1;
  for (let i = start + 1; i < limit; i++) {
    const code = text.charCodeAt(i);
    const isWs = isSpace(code);
    if (isWs !== space) {
      space = isWs;
      runStart = i;
      // Before the whitespace that follows a word: the encoder splits there too (" word" stays whole).
      if (isWs && code === 32) cut = i;
    } else if (i - runStart >= MAX_RUN) {
      // A run too long to encode in one piece: cut it, never between the halves of a surrogate pair.
      return code >= 0xdc00 && code <= 0xdfff ? i + 1 : i;
    }
    if (cut > start && i - start >= PIECE_CHARS) return cut;
  }
  return limit;
}

/** The first place at or after `at` (within a run's length) where a piece may start without splitting a word. */
function boundaryFrom(text: string, at: number): number {
  const limit = Math.min(text.length, at + MAX_RUN);
  for (let i = Math.max(1, at); i < limit; i++) {
    if (text.charCodeAt(i) === 32 && !isSpace(text.charCodeAt(i - 1))) return i;
  }
  const code = text.charCodeAt(at);
  return code >= 0xdc00 && code <= 0xdfff ? at + 1 : at;
}

/** Texts longer than this are sampled in WINDOWS places at once, so an estimate is not made from their start only. */
const SPREAD_ABOVE = 16 * 1024;
const WINDOWS = 16;

/**
 * Counts several texts as one count: they share the exact-character and time budgets, and what could not be
 * counted exactly is estimated from what was.
 */
export class TokenCounter {
  private exactLeft: number;
  private readonly deadline: number;
  private exhausted = false;
  private countedChars = 0;
  private countedTokens = 0;
  /** Whether any part of any text was estimated rather than counted. */
  estimated = false;

  constructor(limits: CountLimits = DEFAULT_LIMITS) {
    this.exactLeft = limits.exactChars;
    this.deadline = performance.now() + limits.budgetMs;
  }

  text(text: string): number {
    const length = text.length;
    if (length === 0) return 0;
    // The key (a digest of a long text) is made once, for the lookup and for keeping the count. A text longer than
    // this count may still encode exactly is estimated in part, and only exact counts are kept: it gets no key (a
    // SHA-1 of a 2 MB text costs 2-5 ms of the event loop, for nothing).
    const key = length <= this.exactLeft && !this.exhausted ? countKey(text) : null;
    const known = key === null ? undefined : COUNTED.get(key);
    if (known !== undefined) {
      // Counted exactly before: it informs this count's estimates as if counted now, and spends none of its budget.
      this.countedChars += length;
      this.countedTokens += known;
      return known;
    }
    // A long text is counted from several places in turn (a piece from each window, round and round), so
    // that when the budget runs out the sample represents the whole text. Window edges fall between words.
    const count = length > SPREAD_ABOVE ? WINDOWS : 1;
    const at: number[] = [];
    const ends: number[] = [];
    for (let k = 0; k < count; k++) {
      at.push(k === 0 ? 0 : boundaryFrom(text, Math.floor((k * length) / count)));
      if (k > 0) ends.push(at[k] as number);
    }
    ends.push(length);
    let tokens = 0;
    let counted = 0;
    let open = count;
    while (open > 0 && !this.exhausted) {
      for (let k = 0; k < count && !this.exhausted; k++) {
        const start = at[k] as number;
        const limit = ends[k] as number;
        if (start >= limit) continue;
        const end = pieceEnd(text, start, limit);
        if (end - start > this.exactLeft) {
          this.exhausted = true;
          break;
        }
        tokens += countTokens(start === 0 && end === length ? text : text.slice(start, end), PLAIN);
        this.exactLeft -= end - start;
        counted += end - start;
        at[k] = end;
        if (end >= limit) open--;
        if (this.countedChars + counted >= MIN_SAMPLE && performance.now() > this.deadline) this.exhausted = true;
      }
    }
    this.countedChars += counted;
    this.countedTokens += tokens;
    if (counted < length) {
      this.estimated = true;
      tokens += this.estimate(text, length - counted, counted, tokens);
    } else if (key !== null) COUNTED.set(key, tokens);
    return tokens;
  }

  /** Tokens in `rest` uncounted characters of `text`, at the rate of this text's sample, else of the whole count's, else bytes / 4. */
  private estimate(text: string, rest: number, counted: number, tokens: number): number {
    if (counted >= MIN_SAMPLE) return Math.ceil((rest * tokens) / counted);
    if (this.countedChars >= MIN_SAMPLE) return Math.ceil((rest * this.countedTokens) / this.countedChars);
    return Math.ceil((Buffer.byteLength(text, 'utf8') * (rest / text.length)) / 4);
  }
}

export function countTextTokens(text: string, limits?: CountLimits): number {
  return text.length === 0 ? 0 : new TokenCounter(limits).text(text);
}

/** A flat estimate per image: OpenAI's high-detail price of a 1024x1024 image (85 base + 4 tiles of 512x512 at 170). */
const IMAGE_TOKENS = 765;
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING = 3;


function contentTokens(counter: TokenCounter, content: unknown): number {
  if (typeof content === 'string') return counter.text(content);
  if (!Array.isArray(content)) return 0;
  let tokens = 0;
  for (const part of content) {
    if (typeof part === 'string') {
      tokens += counter.text(part);
      continue;
    }
    if (typeof part !== 'object' || part === null) continue;
    const { type, text, refusal, file } = part as { type?: unknown; text?: unknown; refusal?: unknown; file?: unknown };
    if (typeof text === 'string') tokens += counter.text(text);
    else if (typeof refusal === 'string') tokens += counter.text(refusal);
    else if (type === 'image_url' || type === 'image') tokens += IMAGE_TOKENS;
    else if (type === 'file') tokens += plainTextFileTokens(counter, file);
  }
  return tokens;
}

const PLAIN_TEXT_DATA = 'data:text/plain;base64,';

function plainTextData(file: unknown): string | null {
  const data = typeof file === 'object' && file !== null ? (file as { file_data?: unknown }).file_data : undefined;
  return typeof data === 'string' && data.startsWith(PLAIN_TEXT_DATA) ? data.slice(PLAIN_TEXT_DATA.length) : null;
}

/** Whether a content part is a plain-text file, whose text the prompt count reads (see plainTextFileTokens). */
export function isPlainTextFile(part: unknown): boolean {
  return typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'file' && plainTextData((part as { file?: unknown }).file) !== null;
}

/**
 * A plain-text file part (an Anthropic document with a text source, a Gemini text/plain part) is text the model
 * reads: its decoded text is counted. Other files (a PDF) have no count here.
 */
function plainTextFileTokens(counter: TokenCounter, file: unknown): number {
  const data = plainTextData(file);
  return data === null ? 0 : counter.text(Buffer.from(data, 'base64').toString('utf8'));
}

/** An assistant's tool calls: each function's name and its JSON arguments. */
function toolCallTokens(counter: TokenCounter, toolCalls: unknown): number {
  if (!Array.isArray(toolCalls)) return 0;
  let tokens = 0;
  for (const call of toolCalls) {
    const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
    if (typeof fn?.name === 'string') tokens += counter.text(fn.name);
    if (typeof fn?.arguments === 'string') tokens += counter.text(fn.arguments);
  }
  return tokens;
}

/**
 * Tokens a chat prompt uses, OpenAI's way (the cookbook's count for the chat models): per message 3 tokens of
 * overhead, plus the role, the content (a string, or parts: text and plain-text files counted, each image a flat 765), the name and
 * 1 more when there is one, and tool calls; 3 more prime the reply. Tool definitions count as their JSON.
 * The whole prompt is one count, bounded in time as a whole (see the top of this file); pass a counter to
 * share its budget with other texts.
 */
export function countPromptTokens(messages: ChatMessage[], tools?: unknown, counter: TokenCounter = new TokenCounter()): number {
  let tokens = REPLY_PRIMING;
  for (const message of messages) {
    tokens += TOKENS_PER_MESSAGE;
    if (typeof message.role === 'string') tokens += counter.text(message.role);
    tokens += contentTokens(counter, message.content);
    if (typeof message.name === 'string') tokens += counter.text(message.name) + TOKENS_PER_NAME;
    if (message.tool_calls !== undefined) tokens += toolCallTokens(counter, message.tool_calls);
    if (typeof message.tool_call_id === 'string') tokens += counter.text(message.tool_call_id);
  }
  if (tools !== undefined && tools !== null && !(Array.isArray(tools) && tools.length === 0)) {
    tokens += counter.text(JSON.stringify(tools));
  }
  return tokens;
}
