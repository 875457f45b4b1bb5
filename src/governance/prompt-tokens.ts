import { embeddingInputs } from '../core/canonical.js';
import type { RequestContext } from '../core/context.js';
import { countPromptTokens, TokenCounter } from '../tokens/tokenizer.js';

/**
 * The prompt tokens of a request, counted by the gateway's tokenizer, whatever it asks for: a chat's messages and
 * tools, or an embeddings request's texts (token arrays count their length). Budgets, routing rules and charging
 * without upstream usage read this one count.
 */
export function promptTokensOf(ctx: RequestContext, counter?: TokenCounter): number {
  if (ctx.operation === 'chat') return countPromptTokens(ctx.request.messages, ctx.request.tools, counter);
  const { texts, tokens } = embeddingInputs(ctx.request);
  let total = tokens;
  if (texts.length > 0) total += (counter ?? new TokenCounter()).text(texts.join('\n'));
  return total;
}
