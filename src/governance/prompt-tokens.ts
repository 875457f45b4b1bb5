import { embeddingInputs } from '../core/canonical.js';
import type { RequestContext } from '../core/context.js';
import { countPromptTokens, isPlainTextFile, TokenCounter } from '../tokens/tokenizer.js';

/** A request's prompt count, with what it was counted from: the count holds while the request still holds those. */
interface Counted {
  messages: unknown;
  length: number;
  tools: unknown;
  tokens: number;
}

const counted = new WeakMap<RequestContext, Counted>();

/**
 * The prompt tokens of a request, counted by the gateway's tokenizer, whatever it asks for: a chat's messages and
 * tools, or an embeddings request's texts (token arrays count their length). Token rate limits, routing rules,
 * budgets and charging without upstream usage read this one count: it is counted once per request and kept while
 * the request's messages, tools (or embeddings input) are the same arrays. Stages that change a prompt replace
 * those arrays (guardrails' redaction copies the messages, MCP's agent turns append to a copy), and it is counted
 * again.
 */
export function promptTokensOf(ctx: RequestContext, counter?: TokenCounter): number {
  const messages = ctx.operation === 'chat' ? ctx.request.messages : ctx.request.input;
  const length = Array.isArray(messages) ? messages.length : -1;
  const tools = ctx.operation === 'chat' ? ctx.request.tools : undefined;
  const known = counted.get(ctx);
  if (known && known.messages === messages && known.length === length && known.tools === tools) return known.tokens;
  const tokens = countPrompt(ctx, counter);
  counted.set(ctx, { messages, length, tools, tokens });
  return tokens;
}

function countPrompt(ctx: RequestContext, counter?: TokenCounter): number {
  if (ctx.operation === 'chat') return countPromptTokens(ctx.request.messages, ctx.request.tools, counter);
  // Each input is embedded (and counted by its provider) on its own: counted one by one, as the adapters count
  // an input whose provider reports no count, not joined (a separator would add a token between each two).
  const { texts, tokens } = embeddingInputs(ctx.request);
  let total = tokens;
  if (texts.length > 0) {
    const count = counter ?? new TokenCounter();
    for (const text of texts) total += count.text(text);
  }
  return total;
}

/**
 * Tokens to reserve for a chat's parts that are neither text nor an image (files other than plain text, audio,
 * video), which the tokenizer cannot count and the provider bills by their content: an inline part as a quarter of its data's
 * characters (every tokenizer yields fewer tokens than a file has bytes, and base64 carries 3 bytes in 4
 * characters), a part given by reference (a URL, a file id) as REFERENCED_MEDIA_TOKENS. Only the budget's
 * reservation adds this: a charge without the upstream's usage counts what the tokenizer can.
 */
export function mediaReserveTokens(ctx: RequestContext): number {
  if (ctx.operation !== 'chat') return 0;
  let tokens = 0;
  for (const message of ctx.request.messages) {
    const content = (message as { content?: unknown }).content;
    if (!Array.isArray(content)) continue;
    for (const part of content as unknown[]) {
      if (typeof part !== 'object' || part === null) continue;
      const type = (part as { type?: unknown }).type;
      // Text, images and plain-text files are in the prompt count already.
      if (type === 'text' || type === 'image_url' || type === 'image' || typeof (part as { text?: unknown }).text === 'string' || isPlainTextFile(part)) continue;
      const data = longestString(part, 0);
      tokens += data > INLINE_DATA_CHARS ? Math.ceil(data / 4) : REFERENCED_MEDIA_TOKENS;
    }
  }
  return tokens;
}

/** A part whose longest string is longer than this carries its data inline (else it names it: a URL, a file id). */
const INLINE_DATA_CHARS = 2_048;
/** A file, audio or video named by reference: about a 30-page PDF, or a few minutes of audio. */
const REFERENCED_MEDIA_TOKENS = 50_000;

/** The length of the longest string in a part (its base64 data), looked for a few levels down. */
function longestString(value: unknown, depth: number): number {
  if (typeof value === 'string') return value.length;
  if (typeof value !== 'object' || value === null || depth > 4) return 0;
  let longest = 0;
  for (const item of Object.values(value)) longest = Math.max(longest, longestString(item, depth + 1));
  return longest;
}
