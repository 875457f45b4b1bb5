import { defer, Observable } from 'rxjs';
import { z } from 'zod';
import { definePlugin, type ChatCompletion, type ChatCompletionChunk, type ResponseEvent } from '../../src/index.js';

/**
 * Response side, over streams: replaces each configured word with `[redacted]` in the answer's text, streamed
 * or whole. A word may arrive split across chunks ("pass" + "word"), so each choice holds back at most the
 * longest word's length minus one characters: never the whole answer, so chunks keep flowing one for one.
 * What is held goes out when that choice finishes (its `finish_reason`) or the stream ends.
 * Words match anywhere in the text (not only whole words); only the text content is rewritten (not tool
 * call arguments or logprobs).
 */
const options = z.strictObject({
  words: z.array(z.string().min(1)).min(1),
  case_insensitive: z.boolean().default(true),
  replacement: z.string().default('[redacted]'),
});

type Choice = Record<string, unknown>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The words as one pattern. Longest first, so at any position the longest word wins ("password" over "pass"). */
function compile(words: readonly string[], caseInsensitive: boolean): RegExp {
  const sorted = [...new Set(words)].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map(escapeRegExp).join('|'), caseInsensitive ? 'gi' : 'g');
}

/** The redaction of one choice's text as it streams: what may be sent now, and the short tail held back. */
class StreamRedactor {
  private held = '';

  constructor(
    private readonly pattern: RegExp,
    private readonly replacement: string,
    /** The longest word's length minus one: a tail shorter than a word cannot hide a whole one. */
    private readonly hold: number,
  ) {}

  get pending(): boolean {
    return this.held.length > 0;
  }

  /** Takes the next piece of text; returns the redacted text that is safe to send now. */
  push(piece: string): string {
    const text = this.held + piece;
    // A match starting before `cut` lies wholly inside `text`, since no word is longer than hold + 1; so the
    // pattern's choice there is final. Only a match starting at or after `cut` might still grow.
    const cut = text.length - this.hold;
    let out = '';
    let sent = 0;
    this.pattern.lastIndex = 0;
    for (let match = this.pattern.exec(text); match !== null; match = this.pattern.exec(text)) {
      if (match.index >= cut) break;
      out += text.slice(sent, match.index) + this.replacement;
      sent = match.index + match[0].length;
    }
    let boundary = Math.max(sent, cut);
    // Never split a surrogate pair between two chunks: hold its first half back too.
    if (boundary > sent && isHighSurrogate(text.charCodeAt(boundary - 1))) boundary--;
    this.held = text.slice(boundary);
    return out + text.slice(sent, boundary);
  }

  /** The end of this choice's text: what was held, redacted. */
  flush(): string {
    const rest = this.held;
    this.held = '';
    return redactAll(rest, this.pattern, this.replacement);
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function redactAll(text: string, pattern: RegExp, replacement: string): string {
  pattern.lastIndex = 0;
  // A function, so `$&` and friends in the replacement stay literal.
  return text.replace(pattern, () => replacement);
}

export default definePlugin({
  name: 'redact-word',
  options,
  // Innermost on the way back is closest to the provider: placed before `call`, the stages above it (cost, the
  // request log, the client) only ever see the redacted text.
  placement: { before: 'call' },
  create({ words, case_insensitive, replacement }) {
    const pattern = compile(words, case_insensitive);
    const hold = Math.max(...words.map((word) => word.length)) - 1;

    function redactCompletion(completion: ChatCompletion): ChatCompletion {
      const choices = completion.choices.map((choice) => {
        if (!isRecord(choice) || !isRecord(choice.message) || typeof choice.message.content !== 'string') return choice;
        return { ...choice, message: { ...choice.message, content: redactAll(choice.message.content, pattern, replacement) } };
      });
      return { ...completion, choices };
    }

    return {
      name: 'redact-word',
      run(ctx, next) {
        // `defer`: the per-choice state belongs to one subscription, i.e. one answer.
        return defer(() => {
          const redactors = new Map<number, StreamRedactor>();
          let last: ChatCompletionChunk | null = null;

          /** A chunk carrying what every unfinished choice still holds, shaped like the stream's own chunks. */
          const flushChunk = (like: ChatCompletionChunk): ChatCompletionChunk | null => {
            const choices: Choice[] = [];
            for (const [index, redactor] of redactors) {
              if (redactor.pending) choices.push({ index, delta: { content: redactor.flush() }, logprobs: null, finish_reason: null });
            }
            redactors.clear();
            if (choices.length === 0) return null;
            return { ...like, choices, ...('usage' in like ? { usage: null } : {}) };
          };

          const redactChunk = (chunk: ChatCompletionChunk): ChatCompletionChunk => {
            const choices = chunk.choices.map((choice) => {
              if (!isRecord(choice)) return choice;
              const index = typeof choice.index === 'number' ? choice.index : 0;
              const delta = isRecord(choice.delta) ? choice.delta : {};
              const content = typeof delta.content === 'string' ? delta.content : null;
              const finished = choice.finish_reason !== null && choice.finish_reason !== undefined;
              let redactor = redactors.get(index);
              if (content === null && !(finished && redactor?.pending)) {
                if (finished) redactors.delete(index);
                return choice;
              }
              if (!redactor) {
                redactor = new StreamRedactor(pattern, replacement, hold);
                redactors.set(index, redactor);
              }
              let text = content === null ? '' : redactor.push(content);
              if (finished) {
                text += redactor.flush();
                redactors.delete(index);
              }
              return { ...choice, delta: { ...delta, content: text } };
            });
            return { ...chunk, choices };
          };

          return new Observable<ResponseEvent>((subscriber) =>
            next().subscribe({
              next(event) {
                // Every event is rebuilt without `native`: the client must get the translation of the redacted
                // answer, not the upstream's own bytes (see NativeAnswer).
                if (event.kind === 'completion') {
                  subscriber.next({ kind: 'completion', completion: redactCompletion(event.completion) });
                } else if (event.kind === 'chunk') {
                  // A chunk without choices (the usage chunk) ends the text: what is held goes out before it.
                  if (event.chunk.choices.length === 0) {
                    const flushed = flushChunk(event.chunk);
                    if (flushed) subscriber.next({ kind: 'chunk', chunk: flushed });
                  }
                  last = event.chunk;
                  subscriber.next({ kind: 'chunk', chunk: redactChunk(event.chunk) });
                } else {
                  subscriber.next(event);
                }
              },
              error(err: unknown) {
                subscriber.error(err);
              },
              complete() {
                // A stream that ended without finish_reason: send what is held rather than lose it.
                const flushed = last ? flushChunk(last) : null;
                if (flushed) subscriber.next({ kind: 'chunk', chunk: flushed });
                subscriber.complete();
              },
            }),
          );
        });
      },
    };
  },
});
