import { defer, finalize, type Observable, throwError } from 'rxjs';
import type { ResponseEvent } from '../core/canonical.js';
import type { GatewayError } from '../core/errors.js';
import { formatResetDuration } from '../governance/durations.js';
import type { SlidingWindowLimiter, WindowState } from '../governance/rate-limiter.js';
import { resolveModelName } from '../routing/bare-model.js';
import type { RequestContext } from '../core/context.js';
import type { Next, Stage } from '../core/stage.js';
import type { EventBus } from '../bus/bus.js';
import { definePlugin } from '../core/plugin.js';
import { BUS, LIMITER } from '../services.js';
import { gatewayError } from '../core/errors.js';
import { mediaReserveTokens, promptTokensOf } from '../governance/prompt-tokens.js';
import { checkRequestNumbers, requestedMaxOutput } from '../governance/request-numbers.js';

interface Scope {
  scope: 'key' | 'key_model' | 'team';
  bucket: string;
  limit: number;
}

/** Limiter buckets for tokens per minute: each admitted request holds its estimate there, then adds what it used. */
function tokenBuckets(ctx: RequestContext): Array<{ bucket: string; limit: number; scope: 'key' | 'team' }> {
  const out: Array<{ bucket: string; limit: number; scope: 'key' | 'team' }> = [];
  const identity = ctx.identity;
  if (!identity) return out;
  if (identity.key.tokens_per_minute) out.push({ bucket: `tpm:key:${identity.key.id}`, limit: identity.key.tokens_per_minute, scope: 'key' });
  if (identity.team?.tokens_per_minute) out.push({ bucket: `tpm:team:${identity.team.id}`, limit: identity.team.tokens_per_minute, scope: 'team' });
  return out;
}

/**
 * The tokens a request may use at most, as the budget's reservation counts them: its prompt (the same count the
 * spend stage reads, see promptTokensOf) with its non-text media, plus its output limit (`max_completion_tokens` or
 * `max_tokens`, 4096 when unset) times its choices.
 */
function estimatedTokens(ctx: RequestContext): number {
  checkRequestNumbers(ctx);
  return promptTokensOf(ctx) + mediaReserveTokens(ctx) + requestedMaxOutput(ctx);
}

function limitError(unit: 'requests' | 'tokens', scope: string, limit: number, state: WindowState): GatewayError {
  const seconds = Math.max(1, Math.ceil(state.resetMs / 1000));
  return gatewayError('rate_limit_exceeded', `Rate limit reached for ${scope}: limit ${limit} ${unit} per minute. Try again in ${formatResetDuration(state.resetMs)}.`, {
    type: unit,
    headers: {
      'retry-after': String(seconds),
      [`x-ratelimit-limit-${unit}`]: String(limit),
      [`x-ratelimit-remaining-${unit}`]: '0',
      [`x-ratelimit-reset-${unit}`]: formatResetDuration(state.resetMs),
    },
  });
}

/**
 * Requests per minute per key, per key and model, and per team; tokens per minute per key and team. Either
 * every bucket has room and all take their share, or the request is refused and none does. The tightest bucket's
 * state rides on every answer as OpenAI's `x-ratelimit-*` headers.
 *
 * Tokens are held at admission, as budgets are: a request holds its estimated tokens (see estimatedTokens) in
 * the key's and team's token buckets while it runs, so a concurrent burst cannot pass a limit that counted only
 * requests already finished. An estimate larger than a whole limit holds just the limit: such a request is
 * admitted when nothing else is in the window, never refused for ever. When the request ends (completed, failed,
 * cancelled), the hold is released and the tokens it was charged (settled by the spend stage) are added instead.
 */
class RateLimitStage implements Stage {
  readonly name = 'rate-limit';

  constructor(
    private readonly bus: EventBus,
    private readonly limiter: SlidingWindowLimiter,
  ) {}

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    const identity = ctx.identity;
    if (!identity) return next();
    const { limiter, bus } = this;
    const { key, team } = identity;
    const scopes: Scope[] = [];
    const modelLimit = modelRateLimit(key.model_rate_limits, ctx);
    if (key.rate_limit) {
      scopes.push({ scope: 'key', bucket: `rpm:key:${key.id}`, limit: key.rate_limit });
      scopes.push({ scope: 'key_model', bucket: `rpm:key:${key.id}:${ctx.request.model}`, limit: modelLimit ?? key.rate_limit });
    } else if (modelLimit) {
      scopes.push({ scope: 'key_model', bucket: `rpm:key:${key.id}:${ctx.request.model}`, limit: modelLimit });
    }
    if (team?.rate_limit) scopes.push({ scope: 'team', bucket: `rpm:team:${team.id}`, limit: team.rate_limit });

    for (const scope of scopes) {
      const state = limiter.state(scope.bucket, scope.limit);
      if (state.remaining < 1) {
        bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: scope.scope, unit: 'requests', limit: scope.limit });
        return throwError(() => limitError('requests', scope.scope === 'team' ? `team '${team?.name}'` : `key '${key.name}'`, scope.limit, state));
      }
    }
    const buckets = tokenBuckets(ctx);
    let release: (() => void) | null = null;
    if (buckets.length > 0) {
      let estimate: number;
      try {
        estimate = estimatedTokens(ctx);
      } catch (err) {
        return throwError(() => err);
      }
      const held = limiter.tryHoldAll(buckets.map((tokens) => ({ key: tokens.bucket, limit: tokens.limit, amount: Math.min(estimate, tokens.limit) })));
      if (!held.allowed) {
        const tokens = buckets[held.blocked] as (typeof buckets)[number];
        bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: tokens.scope, unit: 'tokens', limit: tokens.limit });
        const scope = tokens.scope === 'team' ? `team '${team?.name}'` : `key '${key.name}'`;
        return throwError(() => limitError('tokens', scope, tokens.limit, held.states[held.blocked] as WindowState));
      }
      release = held.release;
      setHeaders(ctx, 'tokens', held.states);
    }
    const taken: WindowState[] = [];
    for (const scope of scopes) taken.push(limiter.tryTake(scope.bucket, scope.limit).state);
    setHeaders(ctx, 'requests', taken);
    if (!release) return next();
    const releaseHold = release;
    return defer(() => next()).pipe(finalize(() => this.settleTokens(ctx, buckets, releaseHold)));
  }

  /**
   * Once the request's charge is settled (a cancelled stream settles after the client left), replaces its hold with
   * the tokens it was charged: none for a request that failed before any upstream used some.
   */
  private settleTokens(ctx: RequestContext, buckets: Array<{ bucket: string }>, release: () => void): void {
    const settle = (): void => {
      release();
      const used = ctx.spent ? ctx.spent.usage.input_tokens + ctx.spent.usage.output_tokens : 0;
      if (used > 0) for (const { bucket } of buckets) this.limiter.add(bucket, used);
    };
    if (ctx.pending.length === 0) settle();
    else void Promise.allSettled(ctx.pending).then(settle);
  }
}

/** The tightest bucket's state (least remaining) as OpenAI's `x-ratelimit-*-<unit>` headers. */
function setHeaders(ctx: RequestContext, unit: 'requests' | 'tokens', states: readonly WindowState[]): void {
  let tightest: WindowState | null = null;
  for (const state of states) if (!tightest || state.remaining < tightest.remaining) tightest = state;
  if (!tightest) return;
  ctx.responseHeaders[`x-ratelimit-limit-${unit}`] = String(tightest.limit);
  ctx.responseHeaders[`x-ratelimit-remaining-${unit}`] = String(tightest.remaining);
  // OpenAI's reset header says when the window is whole again; retry-after (on a 429) when one more fits.
  ctx.responseHeaders[`x-ratelimit-reset-${unit}`] = formatResetDuration(tightest.fullResetMs);
}

export default definePlugin({
  name: 'rate-limit',
  requires: [BUS, LIMITER],
  create: (_options, _config, services) => new RateLimitStage(services.get(BUS), services.get(LIMITER)),
});

/**
 * A key's per-model limit for the request: by the name the request routes on, or by a name in the key's list that
 * means the same model (`gpt-4o-mini` for `openai/gpt-4o-mini`, as a bare name in a request resolves).
 */
function modelRateLimit(limits: Readonly<Record<string, number>> | null | undefined, ctx: RequestContext): number | undefined {
  if (!limits) return undefined;
  const direct = limits[ctx.request.model];
  if (direct !== undefined) return direct;
  for (const name in limits) if (resolveModelName(ctx.config, name) === ctx.request.model) return limits[name];
  return undefined;
}
