import { defer, finalize, from, mergeMap, type Observable, throwError } from 'rxjs';
import type { ResponseEvent } from '../core/canonical.js';
import type { SlidingWindowLimiter, WindowState } from '../governance/rate-limiter.js';
import type { Identity, RequestContext } from '../core/context.js';
import type { Next, Stage } from '../core/stage.js';
import type { EventBus } from '../bus/bus.js';
import { definePlugin } from '../core/plugin.js';
import { BUS, LIMITER } from '../services.js';
import { keyModelBucket, ModelLimitGate, modelLimitsOf, rateLimitError, writeLimitHeaders } from '../governance/model-limits.js';
import { ATTEMPT_GATE } from '../routing/attempt-plan.js';
import { mediaReserveTokens, promptTokensOf } from '../governance/prompt-tokens.js';
import { checkRequestNumbers } from '../governance/request-numbers.js';
import { clientOutputLimit, reservedOutputTokens, targetsOf } from '../governance/output-reserve.js';
import type { RuntimeConfig } from '../core/config.js';
import type { Target } from '../core/provider.js';
import { buildCandidateGroups } from '../routing/candidate-groups.js';
import { routeMatcherFor, type RouteMatcher } from '../routing/route-patterns.js';

interface Scope {
  scope: 'key' | 'key_model' | 'team';
  bucket: string;
  limit: number;
}

interface TokenBucket {
  bucket: string;
  limit: number;
  scope: 'key' | 'team';
}

/** Limiter buckets for tokens per minute: each admitted request holds its estimate there, then adds what it used. */
function tokenBuckets(ctx: RequestContext): TokenBucket[] {
  const out: TokenBucket[] = [];
  const identity = ctx.identity;
  if (!identity) return out;
  if (identity.key.tokens_per_minute) out.push({ bucket: `tpm:key:${identity.key.id}`, limit: identity.key.tokens_per_minute, scope: 'key' });
  if (identity.team?.tokens_per_minute) out.push({ bucket: `tpm:team:${identity.team.id}`, limit: identity.team.tokens_per_minute, scope: 'team' });
  return out;
}

/**
 * The targets a request can reach, for its output bound: its plan's when the route stage has run (a pipeline may put
 * this stage after it), else those of the model it names and of every routing rule's destination (a rule may send it
 * there), the widest the route stage can choose from. A name no provider serves reaches nothing (the route stage
 * refuses it).
 */
function reachableTargets(ctx: RequestContext, matcher: RouteMatcher, remembered: Map<string, Target[]>): Target[] {
  if (ctx.plan) return targetsOf(ctx.plan.groups);
  // The same model name reaches the same targets under one config (this stage is made per config version), unless
  // the request brings its own fallbacks or provider key: worked out once per name, not on every request.
  const plain = ctx.requestFallbacks.length === 0 && ctx.clientProviderKey === null;
  const known = plain ? remembered.get(ctx.request.model) : undefined;
  if (known) return known;
  const targets = targetsByName(ctx, matcher);
  if (plain && remembered.size < MAX_REMEMBERED_MODELS) remembered.set(ctx.request.model, targets);
  return targets;
}

/** Names a client may send (any): past this many, a model's targets are worked out each time. */
const MAX_REMEMBERED_MODELS = 1_000;

function targetsByName(ctx: RequestContext, matcher: RouteMatcher): Target[] {
  const names = [ctx.request.model, ...ctx.config.routingRules.map((rule) => rule.route_to)];
  const targets: Target[] = [];
  for (const name of names) {
    try {
      targets.push(...targetsOf(buildCandidateGroups(ctx.config, name, matcher.match(name), ctx.clientProviderKey, ctx.requestFallbacks)));
    } catch {
      // Not a model or route this gateway serves: nothing reachable by that name.
    }
  }
  return targets;
}

/**
 * The tokens a request may use at most, as the budget's reservation counts them: its prompt (the same count the
 * spend stage reads, see promptTokensOf) with its non-text media, plus the output it can really take (its own limit
 * times its choices, else its models' output limits: see reservedOutputTokens).
 */
function estimatedTokens(ctx: RequestContext, matcher: RouteMatcher, remembered: Map<string, Target[]>): number | Promise<number> {
  checkRequestNumbers(ctx);
  const prompt = promptTokensOf(ctx) + mediaReserveTokens(ctx);
  // The targets matter only when the request sets no limit of its own.
  const output = reservedOutputTokens(ctx, clientOutputLimit(ctx) === null ? reachableTargets(ctx, matcher, remembered) : []);
  return typeof output === 'number' ? prompt + output : output.then((tokens) => prompt + tokens);
}

/**
 * Requests per minute per key, per key and model, and per team; tokens per minute per key and team. Either
 * every bucket has room and all take their share, or the request is refused and none does. The tightest bucket's
 * state rides on every answer as OpenAI's `x-ratelimit-*` headers. A key's per-model limits (`model_rate_limits`)
 * also hold for every model the request reaches: this stage leaves a ModelLimitGate on the request, which the call
 * stage's plan consults per attempt (a target over its model's limit is passed over; none left: 429).
 *
 * Tokens are held at admission, as budgets are: a request holds its estimated tokens (see estimatedTokens) in
 * the key's and team's token buckets while it runs, so a concurrent burst cannot pass a limit that counted only
 * requests already finished. An estimate larger than a whole limit holds just the limit: such a request is
 * admitted when nothing else is in the window, never refused for ever. When the request ends (completed, failed,
 * cancelled), the hold is released and the tokens it was charged (settled by the spend stage) are added instead.
 */
class RateLimitStage implements Stage {
  readonly name = 'rate-limit';
  /** Routes by name, to find the targets a request can reach before the route stage plans it (see reachableTargets). */
  private readonly matcher: RouteMatcher;
  /** The targets each model name reaches (see reachableTargets). */
  private readonly reachable = new Map<string, Target[]>();

  constructor(
    private readonly bus: EventBus,
    private readonly limiter: SlidingWindowLimiter,
    config: RuntimeConfig,
  ) {
    this.matcher = routeMatcherFor(config.routes);
  }

  /** Limits are a virtual key's and its team's: an anonymous request has none. */
  appliesTo(ctx: RequestContext): boolean {
    return ctx.identity !== null;
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    const identity = ctx.identity;
    if (!identity) return next();
    const buckets = tokenBuckets(ctx);
    let estimate: number | Promise<number> = 0;
    if (buckets.length > 0) {
      try {
        estimate = estimatedTokens(ctx, this.matcher, this.reachable);
      } catch (err) {
        return throwError(() => err);
      }
    }
    if (typeof estimate === 'number') return this.admit(ctx, next, identity, buckets, estimate);
    // Every window is checked and taken in one synchronous step once the estimate is known, so concurrent requests
    // cannot both pass a check made before either took its share.
    const known = estimate;
    return defer(() => from(known)).pipe(mergeMap((tokens) => this.admit(ctx, next, identity, buckets, tokens)));
  }

  /** Checks and takes every window (requests, and `estimate` tokens in `buckets`), then runs the rest of the pipeline. */
  private admit(ctx: RequestContext, next: Next, identity: Identity, buckets: TokenBucket[], estimate: number): Observable<ResponseEvent> {
    const { limiter, bus } = this;
    const { key, team } = identity;
    const scopes: Scope[] = [];
    // Per-model limits are also held per upstream attempt (ModelLimitGate): a route's targets, fallbacks and a routing
    // rule's destination count as they are called. The model a request names is counted here, at once, as before,
    // unless the request brings fallbacks of its own: then it is counted only if called, so a request whose model is
    // over its limit goes on to its fallbacks.
    const models = modelLimitsOf(ctx.config, key.model_rate_limits);
    // The name as written (a route's name too), else a bare name resolving to the requested model.
    const modelLimit = key.model_rate_limits?.[ctx.request.model] ?? models?.get(ctx.request.model);
    const perAttempt = models !== null && ctx.requestFallbacks.length > 0 && models.has(ctx.request.model);
    if (key.rate_limit) scopes.push({ scope: 'key', bucket: `rpm:key:${key.id}`, limit: key.rate_limit });
    if (!perAttempt && (key.rate_limit || modelLimit)) {
      scopes.push({ scope: 'key_model', bucket: keyModelBucket(key.id, ctx.request.model), limit: modelLimit ?? (key.rate_limit as number) });
    }
    if (team?.rate_limit) scopes.push({ scope: 'team', bucket: `rpm:team:${team.id}`, limit: team.rate_limit });

    const blocking = longestBlock(limiter, scopes);
    if (blocking) return this.refuseRequests(ctx, identity, blocking, buckets, estimate);
    let release: (() => void) | null = null;
    if (buckets.length > 0) {
      const held = limiter.tryHoldAll(buckets.map((tokens) => ({ key: tokens.bucket, limit: tokens.limit, amount: Math.min(estimate, tokens.limit) })));
      if (!held.allowed) {
        // Of the token windows without room (the key's, the team's), the one that frees last: a retry is refused until
        // both have room, so its wait is the one retry-after must tell, as for the request windows (longestBlock).
        const blocked = slowestTokenBlock(held.states, held.blocked);
        return this.refuseTokens(ctx, identity, buckets[blocked] as TokenBucket, held.states[blocked] as WindowState);
      }
      release = held.release;
      setHeaders(ctx, 'tokens', held.states);
    }
    // One instant for every window: taken one by one, a clock tick between two takes left the key+model window a
    // millisecond younger than the key's, and the next refusal then named it instead of the key.
    setHeaders(ctx, 'requests', limiter.tryTakeAll(scopes.map((scope) => ({ key: scope.bucket, limit: scope.limit }))).states);
    if (models !== null) {
      const counted = perAttempt || !(key.rate_limit || modelLimit) ? null : ctx.request.model;
      const refused = (limit: number): void =>
        bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: 'key_model', unit: 'requests', limit });
      ctx.extensions.set(ATTEMPT_GATE, new ModelLimitGate(limiter, key, models, ctx.responseHeaders, refused, counted));
    }
    if (!release) return next();
    const releaseHold = release;
    return defer(() => next()).pipe(finalize(() => this.settleTokens(ctx, buckets, releaseHold)));
  }

  /**
   * The 429 of a request a request window refuses. Its token windows are read too, holding nothing: when one of them
   * would refuse it as well and makes room later than the request window, a client retrying as told would be refused
   * again by it, so that token window is the limit the refusal names (its wait in retry-after, its headers, message
   * and event). On a tie, the request window.
   */
  private refuseRequests(ctx: RequestContext, identity: Identity, blocking: { scope: Scope; state: WindowState }, buckets: TokenBucket[], estimate: number): Observable<never> {
    if (buckets.length > 0) {
      const states = this.limiter.holdStates(buckets.map((tokens) => ({ key: tokens.bucket, limit: tokens.limit, amount: Math.min(estimate, tokens.limit) })));
      const slowest = slowestTokenBlock(states, 0);
      const state = states[slowest] as WindowState;
      if (state.resetMs > blocking.state.resetMs) return this.refuseTokens(ctx, identity, buckets[slowest] as TokenBucket, state);
    }
    const { key, team } = identity;
    const { scope, state } = blocking;
    this.bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: scope.scope, unit: 'requests', limit: scope.limit });
    return throwError(() => rateLimitError('requests', scope.scope === 'team' ? `team '${team?.name}'` : `key '${key.name}'`, scope.limit, state));
  }

  /** The 429 of a request refused by the token window `tokens` (the key's or the team's), whose state is `state`. */
  private refuseTokens(ctx: RequestContext, identity: Identity, tokens: TokenBucket, state: WindowState): Observable<never> {
    const { key, team } = identity;
    this.bus.emit('ratelimit.exceeded', { requestId: ctx.id, keyId: key.id, teamId: team?.id ?? null, scope: tokens.scope, unit: 'tokens', limit: tokens.limit });
    const scope = tokens.scope === 'team' ? `team '${team?.name}'` : `key '${key.name}'`;
    return throwError(() => rateLimitError('tokens', scope, tokens.limit, state));
  }

  /**
   * Once the request's charge is settled (a cancelled stream settles after the client left), replaces its hold with
   * the tokens it was charged: none for a request that failed before any upstream used some.
   */
  private settleTokens(ctx: RequestContext, buckets: Array<{ bucket: string }>, release: () => void): void {
    const settle = (): void => {
      release();
      // An answer from the response cache used no upstream's tokens (its usage is the stored answer's).
      const used = ctx.spent && !ctx.spent.cached ? ctx.spent.usage.input_tokens + ctx.spent.usage.output_tokens : 0;
      if (used > 0) for (const { bucket } of buckets) this.limiter.add(bucket, used);
    };
    if (ctx.pending.length === 0) settle();
    else void Promise.allSettled(ctx.pending).then(settle);
  }
}

/**
 * Of the request windows that are full, the one that frees last: a retry is refused until every one of them has
 * room, so its wait is the one retry-after must tell (the first full one may free long before another).
 */
function longestBlock(limiter: SlidingWindowLimiter, scopes: readonly Scope[]): { scope: Scope; state: WindowState } | null {
  let longest: { scope: Scope; state: WindowState } | null = null;
  const states = limiter.states(scopes.map((scope) => ({ key: scope.bucket, limit: scope.limit })));
  for (let i = 0; i < scopes.length; i++) {
    const state = states[i] as WindowState;
    // A tie goes to the first (broadest) scope: the key before its key+model window that counts the same requests.
    if (state.remaining < 1 && (!longest || state.resetMs > longest.state.resetMs)) longest = { scope: scopes[i] as Scope, state };
  }
  return longest;
}

/**
 * Of a request's token windows (a refused hold's, or as holdStates reads them), the index of the one whose room comes
 * last (a window with room has a wait of 0); `first` (the first that did not fit) on a tie.
 */
function slowestTokenBlock(states: readonly WindowState[], first: number): number {
  let slowest = first;
  for (let i = 0; i < states.length; i++) if ((states[i] as WindowState).resetMs > (states[slowest] as WindowState).resetMs) slowest = i;
  return slowest;
}

/** The tightest bucket's state (least remaining) as OpenAI's `x-ratelimit-*-<unit>` headers. */
function setHeaders(ctx: RequestContext, unit: 'requests' | 'tokens', states: readonly WindowState[]): void {
  let tightest: WindowState | null = null;
  for (const state of states) if (!tightest || state.remaining < tightest.remaining) tightest = state;
  if (!tightest) return;
  // OpenAI's reset header says when the window is whole again; retry-after (on a 429) when one more fits.
  writeLimitHeaders(ctx.responseHeaders, unit, tightest);
}


export default definePlugin({
  name: 'rate-limit',
  requires: [BUS, LIMITER],
  create: (_options, config, services) => new RateLimitStage(services.get(BUS), services.get(LIMITER), config),
});

