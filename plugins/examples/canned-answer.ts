import { randomBytes } from 'node:crypto';
import { Observable } from 'rxjs';
import { z } from 'zod';
import { definePlugin, type ChatCompletion, type ChatCompletionChunk, type ChatMessage, type CompletionUsage, type ChatContext, type ResponseEvent } from '../../src/index.js';

/**
 * Answers without the provider: when the last user message matches one of the configured patterns, the
 * plugin answers with that entry's text itself (a whole completion, or a stream of chunks when the client
 * asked for one) and never calls `next()`, so no provider is called and nothing is spent. Every other request
 * goes on unchanged. The first matching entry wins.
 */
const validPattern = (source: string): boolean => {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
};

const options = z.strictObject({
  answers: z
    .array(
      z.strictObject({
        /** A JavaScript regular expression, tested against the text of the last user message. */
        pattern: z.string().min(1).refine(validPattern, 'must be a valid regular expression'),
        case_insensitive: z.boolean().default(true),
        text: z.string(),
      }),
    )
    .min(1),
});

const ZERO_USAGE: Readonly<CompletionUsage> = Object.freeze({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

/** The text of the conversation's last user message (string content, or its text parts joined). */
function lastUserText(messages: readonly ChatMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    if (!Array.isArray(message.content)) return null;
    const texts: string[] = [];
    for (const part of message.content as unknown[]) {
      const text = (part as { type?: unknown; text?: unknown } | null)?.text;
      if ((part as { type?: unknown } | null)?.type === 'text' && typeof text === 'string') texts.push(text);
    }
    return texts.join('\n');
  }
  return null;
}

/** How many choices the client asked for (`n`), within what OpenAI accepts. */
function choiceCount(ctx: ChatContext): number {
  const n = ctx.request.n;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 128 ? n : 1;
}

function completionOf(ctx: ChatContext, id: string, created: number, text: string): ChatCompletion {
  const choices = Array.from({ length: choiceCount(ctx) }, (_, index) => ({
    index,
    message: { role: 'assistant', content: text, refusal: null },
    logprobs: null,
    finish_reason: 'stop',
  }));
  return { id, object: 'chat.completion', created, model: ctx.responseModel, choices, usage: { ...ZERO_USAGE } };
}

/** The chunks OpenAI would stream for this answer: role, the text, the finish, then usage if asked for. */
function chunksOf(ctx: ChatContext, id: string, created: number, text: string): ChatCompletionChunk[] {
  const includeUsage = ctx.request.stream_options?.include_usage === true;
  const chunk = (choices: unknown[]): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: ctx.responseModel,
    choices,
    ...(includeUsage ? { usage: null } : {}),
  });
  const each = (delta: Record<string, unknown>, finish: string | null) =>
    Array.from({ length: choiceCount(ctx) }, (_, index) => chunk([{ index, delta, logprobs: null, finish_reason: finish }]));
  const chunks = [...each({ role: 'assistant', content: '', refusal: null }, null), ...(text ? each({ content: text }, null) : []), ...each({}, 'stop')];
  if (includeUsage) chunks.push({ ...chunk([]), usage: { ...ZERO_USAGE } });
  return chunks;
}

export default definePlugin({
  name: 'canned-answer',
  options,
  // After auth (only known callers get answers) and before anything that reserves budget or picks a provider.
  placement: { after: 'auth', before: 'route' },
  create({ answers }) {
    // Compiled once per config version, not per request.
    const compiled = answers.map((entry) => ({ pattern: new RegExp(entry.pattern, entry.case_insensitive ? 'i' : ''), text: entry.text }));
    return {
      name: 'canned-answer',
      run(ctx, next) {
        if (ctx.operation !== 'chat') return next();
        const question = lastUserText(ctx.request.messages);
        const hit = question === null ? undefined : compiled.find((entry) => entry.pattern.test(question));
        if (!hit) return next();
        // Answered here: `next()` is never called, so the stages inside (route, call) and the provider never run.
        return new Observable<ResponseEvent>((subscriber) => {
          const id = `chatcmpl-${randomBytes(15).toString('hex')}`;
          const created = Math.floor(Date.now() / 1000);
          ctx.usage = { ...ZERO_USAGE };
          if (!ctx.stream) {
            subscriber.next({ kind: 'completion', completion: completionOf(ctx, id, created, hit.text) });
          } else {
            for (const chunk of chunksOf(ctx, id, created, hit.text)) {
              // The client may have gone away mid-answer: stop producing.
              if (subscriber.closed) return;
              subscriber.next({ kind: 'chunk', chunk });
            }
          }
          subscriber.complete();
        });
      },
    };
  },
});
