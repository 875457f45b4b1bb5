import { Observable } from 'rxjs';
import type { ChatCompletion, ChatCompletionChunk, CompletionUsage, ResponseEvent } from '../core/canonical.js';
import { GatewayError } from '../errors.js';
import { countPromptTokens, TokenCounter } from '../governance/tokenizer.js';
import type { PeriodUsage } from '../core/identity.js';
import type { RequestLogEntry } from '../governance/types.js';
import type { RequestContext } from '../core/context.js';
import type { Next, Stage } from '../core/stage.js';
import type { StageDeps, StageFactory } from '../pipeline/stage.js';
import { costOf } from '../catalog/prices.js';
import { tokenUsageFromOpenAI, type TokenUsage } from '../core/usage.js';
import type { PriceConfig } from '../core/config.js';
import { isRecord } from '../is-record.js';
import { requestedMaxOutput } from './budget.js';
import { tokenBuckets } from './rate-limit.js';
import { ROUTE_PRICE } from './route.js';

const THRESHOLDS = [50, 80, 100] as const;

/** Text the client received, for counting completion tokens when the upstream reports no usage. */
function chunkText(chunk: ChatCompletionChunk, into: string[]): void {
  for (const choice of chunk.choices as Array<{ delta?: { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> } }>) {
    const delta = choice.delta;
    if (!delta) continue;
    if (typeof delta.content === 'string') into.push(delta.content);
    for (const call of delta.tool_calls ?? []) if (typeof call.function?.arguments === 'string') into.push(call.function.arguments);
  }
}

function completionText(completion: ChatCompletion, into: string[]): void {
  for (const choice of completion.choices as Array<{ message?: { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> } }>) {
    const message = choice.message;
    if (!message) continue;
    if (typeof message.content === 'string') into.push(message.content);
    for (const call of message.tool_calls ?? []) if (typeof call.function?.arguments === 'string') into.push(call.function.arguments);
  }
}

/**
 * Prompt tokens always plausible, whatever the request shows: a provider may bill input the request does not
 * carry (a Gemini `cachedContent` or a stored prompt referenced by id, server-side search results, tool-use
 * preambles), up to a whole context window. The largest window offered is 10M tokens (Llama 4 Scout), so only
 * counts beyond that are measured against the request. What this stops is the absurd (1e300, overflow to
 * Infinity), without under-charging a legitimate hidden prompt.
 */
const PROMPT_FLOOR = 10_000_000;
/** Tokens one non-text part (image, audio, file, video) may stand for: a long PDF or video by URL is ~1-2M. */
const MEDIA_PART_TOKENS = 2_000_000;
/** Output tokens per choice always plausible, whatever the request's limit: twice the largest output limit (with thinking) any model has. */
const OUTPUT_CEILING = 262_144;

/**
 * The most prompt tokens the request can plausibly have used. No tokenizer yields more tokens than its text
 * has UTF-8 bytes, and a UTF-16 unit is at most 3 of them: so 3 per character of every string (and key) in
 * the request, plus a floor for what the provider adds, plus a generous allowance per non-text part (whose
 * size the request does not show). Walked without recursion; only asked for counts above the floor.
 */
function promptCeiling(ctx: RequestContext): number {
  let chars = 0;
  let media = 0;
  const stack: unknown[] = [ctx.request, ctx.embeddings];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') chars += value.length;
    else if (typeof value === 'number') chars += 1;
    else if (Array.isArray(value)) for (const item of value) stack.push(item);
    else if (isRecord(value)) {
      for (const key in value) {
        chars += key.length;
        stack.push(value[key]);
      }
    }
  }
  for (const message of ctx.request.messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as unknown[]) if (isRecord(part) && part.type !== 'text') media++;
  }
  return PROMPT_FLOOR + 8 * ctx.request.messages.length + 3 * chars + MEDIA_PART_TOKENS * media;
}

function outputCeiling(ctx: RequestContext): number {
  // The budget stage has checked these numbers; without it in the pipeline they may be anything.
  const choices = typeof ctx.request.n === 'number' && ctx.request.n > 1 && ctx.request.n <= 128 ? ctx.request.n : 1;
  const requested = requestedMaxOutput(ctx);
  return Number.isFinite(requested) ? Math.max(requested, OUTPUT_CEILING * choices) : OUTPUT_CEILING * choices;
}

/** A token count as a provider may report it: an integer from 0 to what a double holds exactly. */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Whether the totals are counts (or absent) and every number in the usage (and its `*_details`) is a count. */
function countsWellFormed(usage: CompletionUsage): boolean {
  for (const total of [usage.prompt_tokens, usage.completion_tokens] as unknown[]) if (total !== undefined && total !== null && !isCount(total)) return false;
  // for-in rather than Object.entries: this runs on every answer, and allocates nothing this way.
  const fields = usage as unknown as Record<string, unknown>;
  for (const field in fields) {
    const value = fields[field];
    if (typeof value === 'number') {
      if (!isCount(value)) return false;
    } else if (isRecord(value) && field.endsWith('_details')) {
      for (const part in value) {
        const inner = value[part];
        if (typeof inner === 'number' && !isCount(inner)) return false;
      }
    }
  }
  return true;
}

export interface CheckedUsage {
  tokens: TokenUsage;
  /** Why the upstream's usage was not charged as reported, or null when it was. */
  implausible: string | null;
}

/**
 * The usage to charge for what the upstream reported. An upstream is trusted for its counts, within reason:
 * a count that is not a non-negative integer is replaced by the gateway's own count (the prompt's tokens, the
 * text the client received), and a count above what the request can plausibly have used (see
 * promptCeiling and outputCeiling) is cut to that bound. Parts (cached, reasoning, audio, image tokens) never
 * exceed their totals afterwards.
 */
export function plausibleUsage(ctx: RequestContext, usage: CompletionUsage, received: string[]): CheckedUsage {
  const tokens = tokenUsageFromOpenAI(usage);
  const reasons: string[] = [];
  if (!countsWellFormed(usage)) reasons.push('a count is not a non-negative integer');
  // A total that is not a count (or is missing) is the gateway's own count instead, as when no usage came.
  if (!isCount(usage.prompt_tokens) || !isCount(usage.completion_tokens)) {
    const counter = new TokenCounter();
    if (!isCount(usage.prompt_tokens)) tokens.input_tokens = countPromptTokens(ctx.request.messages, ctx.request.tools, counter);
    if (!isCount(usage.completion_tokens)) tokens.output_tokens = received.length > 0 ? counter.text(received.join('')) : 0;
  }
  if (tokens.input_tokens > PROMPT_FLOOR) {
    const ceiling = promptCeiling(ctx);
    if (tokens.input_tokens > ceiling) {
      reasons.push(`${tokens.input_tokens} prompt tokens for a request of at most ${ceiling}`);
      tokens.input_tokens = ceiling;
    }
  }
  const outputMax = outputCeiling(ctx);
  if (tokens.output_tokens > outputMax) {
    reasons.push(`${tokens.output_tokens} completion tokens where at most ${outputMax} can be`);
    tokens.output_tokens = outputMax;
  }
  // Parts within their (possibly cut or replaced) totals; cache reads and writes together within the prompt.
  const input = tokens.input_tokens;
  const output = tokens.output_tokens;
  tokens.cache_read_tokens = Math.min(tokens.cache_read_tokens, input);
  tokens.cache_write_tokens = Math.min(tokens.cache_write_tokens, input - tokens.cache_read_tokens);
  for (const part of ['input_audio_tokens', 'input_image_tokens'] as const) if (tokens[part] !== undefined) tokens[part] = Math.min(tokens[part], input);
  for (const part of ['output_reasoning_tokens', 'output_audio_tokens', 'output_image_tokens'] as const) {
    if (tokens[part] !== undefined) tokens[part] = Math.min(tokens[part], output);
  }
  return { tokens, implausible: reasons.length > 0 ? reasons.join('; ') : null };
}

interface Outcome {
  status: number;
  cancelled: boolean;
}

/**
 * Settles what a request really cost, however it ended: completed, failed, or cancelled by the client
 * mid-stream (then the tokens generated so far are counted). The request log entry and the key's and team's
 * spend are committed in one LMDB transaction before the answer ends; only then is the budget reservation
 * released, so no concurrent request can slip into the gap.
 */
class CostStage implements Stage {
  readonly name = 'cost';

  constructor(private readonly deps: StageDeps) {}

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    return new Observable<ResponseEvent>((subscriber) => {
      if (ctx.reservation) ctx.reservation.settledByCost = true;
      const text: string[] = [];
      let settled = false;
      const settle = (outcome: Outcome): Promise<void> => {
        if (settled) return Promise.resolve();
        settled = true;
        return this.settle(ctx, outcome, text).catch((err: unknown) => {
          this.deps.log.error({ err, requestId: ctx.id }, 'could not record the cost of a request');
        });
      };
      const inner = next().subscribe({
        next(event) {
          if (event.kind === 'chunk') chunkText(event.chunk, text);
          else if (event.kind === 'completion') completionText(event.completion, text);
          subscriber.next(event);
        },
        error(err: unknown) {
          const status = err instanceof GatewayError ? err.status : 500;
          void settle({ status, cancelled: false }).then(() => subscriber.error(err));
        },
        complete() {
          void settle({ status: 200, cancelled: false }).then(() => subscriber.complete());
        },
      });
      return () => {
        inner.unsubscribe();
        // The client left before the end: charge what was generated so far.
        if (!settled) void settle({ status: 499, cancelled: true });
      };
    });
  }

  private async settle(ctx: RequestContext, outcome: Outcome, text: string[]): Promise<void> {
    const { governance, bus, limiter } = this.deps;
    try {
      const upstream = ctx.upstream;
      const provider = upstream ? ctx.config.providers.get(upstream.provider) : undefined;
      // Tokens: the upstream's own count when it sent one; otherwise counted here.
      let tokens: TokenUsage;
      let estimated = false;
      if (ctx.usage) {
        const checked = plausibleUsage(ctx, ctx.usage, text);
        tokens = checked.tokens;
        if (checked.implausible) this.flagUsage(ctx, ctx.usage, tokens, checked.implausible);
      } else if (upstream && upstream.status > 0 && upstream.status < 400) {
        estimated = true;
        // One count for both, so they share one time budget (see governance/tokenizer.ts).
        const counter = new TokenCounter();
        tokens = {
          input_tokens: countPromptTokens(ctx.request.messages, ctx.request.tools, counter),
          output_tokens: text.length > 0 ? counter.text(text.join('')) : 0,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
        };
      } else tokens = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };

      const routePrice = (ctx.attributes.get(ROUTE_PRICE) as PriceConfig | undefined) ?? null;
      const cost = provider && upstream ? costOf(provider, upstream.upstreamModel, tokens, routePrice) : { usd: 0, priced: true, source: 'none' as const };
      if (provider && upstream && !cost.priced && tokens.input_tokens + tokens.output_tokens > 0) {
        bus.emit('cost.unpriced', { requestId: ctx.id, provider: provider.name, model: upstream.upstreamModel });
      }

      const identity = ctx.identity;
      const keyBefore = identity ? governance.currentUsage(identity.key) : null;
      const teamBefore = identity?.team ? governance.currentUsage(identity.team) : null;
      // The store assigns the log entry a time-ordered id.
      const entry: RequestLogEntry = {
        id: ctx.id,
        at: new Date().toISOString(),
        key_id: identity?.key.id ?? null,
        team_id: identity?.team?.id ?? null,
        model: ctx.request.model,
        provider: upstream?.provider ?? null,
        upstream_model: upstream?.upstreamModel ?? null,
        status: outcome.status,
        stream: ctx.stream,
        cancelled: outcome.cancelled,
        prompt_tokens: tokens.input_tokens,
        completion_tokens: tokens.output_tokens,
        cost_usd: cost.usd,
        priced: cost.priced,
        duration_ms: Math.round(performance.now() - ctx.startedAt),
      };
      // Spend must be committed before the answer ends; a log entry without spend need not hold the answer up.
      const committed = governance.recordRequest(entry);
      if (identity) await committed;
      else committed.catch((err: unknown) => this.deps.log.error({ err, requestId: ctx.id }, 'could not write the request log'));

      const used = tokens.input_tokens + tokens.output_tokens;
      if (used > 0) for (const bucket of tokenBuckets(ctx)) limiter.add(bucket.bucket, used);
      bus.emit('cost.recorded', {
        requestId: ctx.id,
        keyId: entry.key_id,
        teamId: entry.team_id,
        model: entry.model,
        provider: entry.provider,
        usd: cost.usd,
        priced: cost.priced,
        promptTokens: tokens.input_tokens,
        completionTokens: tokens.output_tokens,
        estimated,
      });
      if (identity && keyBefore && identity.key.budget) this.thresholds('key', identity.key.id, identity.key.budget, keyBefore, cost.usd);
      if (identity?.team && teamBefore && identity.team.budget) this.thresholds('team', identity.team.id, identity.team.budget, teamBefore, cost.usd);
    } finally {
      ctx.reservation?.release();
    }
  }

  /** Says that an upstream's usage was not charged as reported: a warning in the log and a `usage.implausible` event. */
  private flagUsage(ctx: RequestContext, reported: CompletionUsage, charged: TokenUsage, reason: string): void {
    const provider = ctx.upstream?.provider ?? null;
    const model = ctx.upstream?.upstreamModel ?? ctx.request.model;
    const shown = (value: unknown): number | null => (typeof value === 'number' ? value : null);
    const event = {
      requestId: ctx.id,
      provider,
      model,
      reason,
      reported: { promptTokens: shown(reported.prompt_tokens), completionTokens: shown(reported.completion_tokens) },
      charged: { promptTokens: charged.input_tokens, completionTokens: charged.output_tokens },
    };
    this.deps.log.warn(event, 'implausible usage from the upstream: charged a plausible amount instead');
    this.deps.bus.emit('usage.implausible', event);
  }

  private thresholds(account: 'key' | 'team', id: string, budget: number, before: PeriodUsage, added: number): void {
    const after = before.spend + added;
    for (const threshold of THRESHOLDS) {
      const line = (budget * threshold) / 100;
      if (before.spend < line && after >= line) this.deps.bus.emit('budget.threshold', { account, id, threshold, budget, spend: after });
    }
  }
}

const costStage: StageFactory = {
  name: 'cost',
  create: (_config, deps) => new CostStage(deps),
};

export default costStage;
