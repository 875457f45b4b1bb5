import { Observable } from 'rxjs';
import type { ChatCompletion, ChatCompletionChunk, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError } from '../errors.js';
import { countPromptTokens, countTextTokens } from '../governance/tokenizer.js';
import type { PeriodUsage, RequestLogEntry } from '../governance/types.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Next, Stage, StageDeps, StageFactory } from '../pipeline/stage.js';
import { costOf, tokenUsageFromOpenAI, type TokenUsage } from '../providers/catalog/prices.js';
import type { PriceConfig } from '../config/schema.js';
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
      if (ctx.usage) tokens = tokenUsageFromOpenAI(ctx.usage);
      else if (upstream && upstream.status > 0 && upstream.status < 400) {
        estimated = true;
        tokens = {
          input_tokens: countPromptTokens(ctx.request.messages, ctx.request.tools),
          output_tokens: text.length > 0 ? countTextTokens(text.join('')) : 0,
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
      const entry: Omit<RequestLogEntry, 'id'> = {
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
