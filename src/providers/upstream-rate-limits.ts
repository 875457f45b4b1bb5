import type { IncomingHttpHeaders } from 'node:http';
import type { RequestContext } from '../core/context.js';
import { anthropicLimitsAsOpenAI, openAILimitsAsAnthropic } from '../core/upstream-limit-headers.js';

/**
 * The provider's rate-limit headers on the client's answer: what an OpenAI or Anthropic SDK user reads to pace
 * themselves (`x-ratelimit-remaining-tokens`, `anthropic-ratelimit-requests-remaining`) reaches them as the
 * provider wrote it when the client's route speaks the provider's format, and in the route's own style when it does
 * not (an Anthropic upstream behind `/v1`: its `anthropic-ratelimit-*` as OpenAI's `x-ratelimit-*`, its RFC 3339
 * reset as OpenAI's duration). A limit of the gateway's own (a key's or team's, set by the rate-limit stage) goes out
 * instead of the provider's of the same unit: the client meets it first (core/upstream-limit-headers.ts). As LiteLLM's
 * proxy does, except that its rule is all or nothing; here a key limiting requests still lets the provider's token
 * headers through.
 */

/** The names a route's clients read, by the style of the route. */
type Style = 'openai' | 'anthropic';

const STYLES: Readonly<Record<string, Style>> = { openai: 'openai', 'openai-responses': 'openai', litellm: 'openai', anthropic: 'anthropic' };

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * A value passed on as it came: printable ASCII and short, as every provider's are. Anything else (a control
 * character Node would refuse to send, which would fail the answer; a value meant to bloat it) is left out.
 */
const PASSABLE = /^[\x20-\x7e]{1,200}$/;

const OPENAI_PREFIX = 'x-ratelimit-';
const ANTHROPIC_PREFIX = 'anthropic-ratelimit-';

/** Every header of the upstream's whose name starts with `prefix`, as it came (its own groups: a vendor's `-day` limits too). */
function verbatim(headers: IncomingHttpHeaders, prefix: string, out: Array<[string, string]>): void {
  for (const name in headers) {
    if (!name.startsWith(prefix)) continue;
    const value = one(headers, name);
    if (value !== undefined && PASSABLE.test(value)) out.push([name, value]);
  }
}

/** The upstream's rate-limit headers in `style`, as [name, value] pairs (empty when it sent none). */
export function upstreamRateLimits(headers: IncomingHttpHeaders, style: Style, now: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let openAI = false;
  let anthropic = false;
  for (const name in headers) {
    if (name.startsWith(OPENAI_PREFIX)) openAI = true;
    else if (name.startsWith(ANTHROPIC_PREFIX)) anthropic = true;
  }
  // The route's own style passes whole, as the provider wrote it (Azure OpenAI's remaining counts without limits,
  // Cerebras' and Groq's daily groups, Anthropic's input and output groups).
  if (openAI && style === 'openai') verbatim(headers, OPENAI_PREFIX, out);
  else if (anthropic && style === 'anthropic') verbatim(headers, ANTHROPIC_PREFIX, out);
  else {
    // The other style's requests and tokens, translated (see core/upstream-limit-headers.ts).
    const read = (name: string): string | undefined => {
      const value = one(headers, name);
      return value !== undefined && PASSABLE.test(value) ? value : undefined;
    };
    if (openAI) out.push(...openAILimitsAsAnthropic(read, now));
    else if (anthropic) out.push(...anthropicLimitsAsOpenAI(read, now));
  }
  return out;
}

/**
 * An attempt's rate-limit headers in the route's style (see the top of this file), or null when the setting keeps them
 * to the operator, the route has no such headers, or the upstream sent none. The call stage keeps a successful
 * answer's for the request's answer, and puts an error answer's on its error (core/upstream-limit-headers.ts).
 */
export function upstreamLimitPairs(ctx: RequestContext, headers: IncomingHttpHeaders): Array<[string, string]> | null {
  if (!ctx.config.settings.upstreamRateLimitHeaders) return null;
  const style = STYLES[ctx.dialect];
  if (style === undefined) return null;
  const pairs = upstreamRateLimits(headers, style, Date.now());
  return pairs.length === 0 ? null : pairs;
}
