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

interface Scope {
  scope: 'key' | 'key_model' | 'team';
  bucket: string;
  limit: number;
}

/** Limiter buckets for tokens per minute; each request's settled tokens are added to them on its way back. */
function tokenBuckets(ctx: RequestContext): Array<{ bucket: string; limit: number; scope: 'key' | 'team' }> {
  const out: Array<{ bucket: string; limit: number; scope: 'key' | 'team' }> = [];
  const identity = ctx.identity;
  if (!identity) return out;
  if (identity.key.tokens_per_minute) out.push({ bucket: `tpm:key:${identity.key.id}`, limit: identity.key.tokens_per_minute, scope: 'key' });
  if (identity.team?.tokens_per_minute) out.push({ bucket: `tpm:team:${identity.team.id}`, limit: identity.team.tokens_per_minute, scope: 'team' });
  return out;
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
 * every bucket has room and all take one, or the request is refused and none does. The tightest bucket's
 * state rides on every answer as OpenAI's `x-ratelimit-*` headers. On the way back, the tokens the request was
 * charged (settled by the spend stage, also for failed and cancelled requests) are added to the token buckets.
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

    let tightest: { limit: number; state: WindowState } | null = null;
    for (const scope of scopes) {
      const state = limiter.state(scope.bucket, scope.limit);
      if (state.remaining < 1) {
        bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: scope.scope, unit: 'requests', limit: scope.limit });
        return throwError(() => limitError('requests', scope.scope === 'team' ? `team '${team?.name}'` : `key '${key.name}'`, scope.limit, state));
      }
    }
    for (const tokens of tokenBuckets(ctx)) {
      const state = limiter.state(tokens.bucket, tokens.limit);
      if (state.remaining < 1) {
        bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: tokens.scope, unit: 'tokens', limit: tokens.limit });
        return throwError(() => limitError('tokens', tokens.scope === 'team' ? `team '${team?.name}'` : `key '${key.name}'`, tokens.limit, state));
      }
      ctx.responseHeaders['x-ratelimit-limit-tokens'] = String(tokens.limit);
      ctx.responseHeaders['x-ratelimit-remaining-tokens'] = String(state.remaining);
      ctx.responseHeaders['x-ratelimit-reset-tokens'] = formatResetDuration(state.fullResetMs);
    }
    for (const scope of scopes) {
      const { state } = limiter.tryTake(scope.bucket, scope.limit);
      if (!tightest || state.remaining < tightest.state.remaining) tightest = { limit: scope.limit, state };
    }
    if (tightest) {
      ctx.responseHeaders['x-ratelimit-limit-requests'] = String(tightest.limit);
      ctx.responseHeaders['x-ratelimit-remaining-requests'] = String(tightest.state.remaining);
      // OpenAI's reset header says when the window is whole again; retry-after (on a 429) when one more fits.
      ctx.responseHeaders['x-ratelimit-reset-requests'] = formatResetDuration(tightest.state.fullResetMs);
    }
    const buckets = tokenBuckets(ctx);
    if (buckets.length === 0) return next();
    return defer(() => next()).pipe(finalize(() => this.addTokens(ctx, buckets)));
  }

  /** Adds the request's charged tokens once settled (a cancelled stream settles after the client left). */
  private addTokens(ctx: RequestContext, buckets: Array<{ bucket: string }>): void {
    const add = (): void => {
      const used = ctx.spent ? ctx.spent.usage.input_tokens + ctx.spent.usage.output_tokens : 0;
      if (used > 0) for (const { bucket } of buckets) this.limiter.add(bucket, used);
    };
    if (ctx.pending.length === 0) add();
    else void Promise.allSettled(ctx.pending).then(add);
  }
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
