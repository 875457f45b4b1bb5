import type { Observable } from 'rxjs';
import { defer, finalize, throwError } from 'rxjs';
import type { RuntimeConfig } from '../core/config.js';
import type { ResponseEvent } from '../core/canonical.js';
import { GatewayError } from '../errors.js';
import { countPromptTokens } from '../governance/tokenizer.js';
import { modelAllowed } from '../governance/model-patterns.js';
import type { PeriodUsage } from '../core/identity.js';
import type { RequestContext } from '../core/context.js';
import type { Next, Stage } from '../core/stage.js';
import type { StageDeps, StageFactory } from '../pipeline/stage.js';
import { unitPrices } from '../catalog/prices.js';
import { expandTarget, routeMatcherFor, type RouteMatcher } from '../routing/route-patterns.js';
import { splitModelName } from '../routing/resolve-target.js';

/** Output tokens assumed for the reservation when the request sets no limit. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

interface Account {
  kind: 'key' | 'team';
  id: string;
  name: string;
  budget: number;
  usage: PeriodUsage;
}

/**
 * The highest price per million tokens among the places the request may go: the model itself, or every
 * target and fallback of its route, the request's own fallbacks, and routing rules' destinations. Unknown prices count as zero: such requests cost nothing (and are
 * reported as `cost.unpriced`).
 */
function worstPrices(ctx: RequestContext, matcher: RouteMatcher): { input: number; output: number; perRequest: number } {
  let routePrice = null;
  // Every place the request may end up: its route's targets and fallback chain (routes expanded), the
  // fallbacks it names itself, and where a routing rule for its model may send it.
  const models = new Set<string>();
  const seen = new Set<string>();
  const expand = (name: string, wildcard: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    const match = matcher.match(name);
    if (!match) {
      models.add(name);
      return;
    }
    routePrice ??= match.route.price;
    const star = match.wildcard || wildcard;
    for (const target of match.route.targets) models.add(expandTarget(target.model, star));
    for (const fallback of match.route.fallbacks) expand(expandTarget(fallback, star), star);
  };
  expand(ctx.request.model, '');
  for (const fallback of ctx.requestFallbacks) expand(fallback, '');
  for (const rule of ctx.config.routingRules) {
    const wanted = rule.when.model === undefined ? null : Array.isArray(rule.when.model) ? rule.when.model : [rule.when.model];
    if (!wanted || modelAllowed(wanted, ctx.request.model)) expand(rule.route_to, '');
  }
  let input = 0;
  let output = 0;
  let perRequest = 0;
  for (const name of models) {
    const parts = splitModelName(name);
    const provider = parts ? ctx.config.providers.get(parts.provider) : undefined;
    if (!parts || !provider) continue;
    const prices = unitPrices(provider, parts.model, routePrice);
    if (!prices) continue;
    input = Math.max(input, prices.input_per_mtok);
    output = Math.max(output, prices.output_per_mtok);
    perRequest = Math.max(perRequest, prices.request_usd);
  }
  return { input, output, perRequest };
}

/** The most output tokens a request may ask for: the largest value a provider's 32-bit field holds (Gemini's `maxOutputTokens` is an int32). */
export const MAX_OUTPUT_TOKENS_LIMIT = 2_147_483_647;
/** The most choices a request may ask for (OpenAI's own limit for `n`). */
export const MAX_CHOICES = 128;

/** The name a canonical field has in the client's own format, for the error's `param`. */
function clientParam(ctx: RequestContext, field: 'max_tokens' | 'max_completion_tokens' | 'n'): string {
  if (ctx.dialect !== 'gemini') return field;
  return field === 'n' ? 'generationConfig.candidateCount' : 'generationConfig.maxOutputTokens';
}

function checkCount(ctx: RequestContext, field: 'max_tokens' | 'max_completion_tokens' | 'n', min: number, max: number): void {
  const value: unknown = ctx.request[field];
  if (value === undefined || value === null) return;
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return;
  const param = clientParam(ctx, field);
  const shown = typeof value === 'number' ? String(value) : typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
  throw GatewayError.badRequest(`Invalid '${param}': expected an integer from ${min} to ${max}, got ${shown}.`, param, 'invalid_value');
}

/**
 * The numbers a reservation is made of, checked for every request (keyed or not) before anything is
 * reserved or sent: a negative, fractional, non-numeric or absurd `max_tokens` would otherwise make the
 * reservation negative (letting requests past a spent budget) or non-finite. Gemini's `candidateCount: 0` is
 * its "unset", so 0 choices pass there and count as 1.
 */
export function checkRequestNumbers(ctx: RequestContext): void {
  checkCount(ctx, 'max_tokens', 0, MAX_OUTPUT_TOKENS_LIMIT);
  checkCount(ctx, 'max_completion_tokens', 0, MAX_OUTPUT_TOKENS_LIMIT);
  checkCount(ctx, 'n', ctx.dialect === 'gemini' ? 0 : 1, MAX_CHOICES);
}

/** Output tokens the request may produce at most (its limit, or the default, times its choices); checked numbers only. */
export function requestedMaxOutput(ctx: RequestContext): number {
  const { max_completion_tokens: completion, max_tokens: legacy } = ctx.request;
  const limit = typeof completion === 'number' ? completion : typeof legacy === 'number' ? legacy : DEFAULT_MAX_OUTPUT_TOKENS;
  const choices = typeof ctx.request.n === 'number' && ctx.request.n > 1 ? ctx.request.n : 1;
  return limit * choices;
}

function budgetError(account: Account, needed: number, reserved: number): GatewayError {
  const headers: Record<string, string> = {};
  if (account.usage.period_resets_at) {
    headers['retry-after'] = String(Math.max(1, Math.ceil((Date.parse(account.usage.period_resets_at) - Date.now()) / 1000)));
  }
  const left = Math.max(0, account.budget - account.usage.spend - reserved);
  return new GatewayError({
    status: 429,
    type: 'insufficient_quota',
    code: 'budget_exceeded',
    message:
      `The budget of ${account.kind} '${account.name}' ($${account.budget}) cannot cover this request: $${left.toFixed(6)} left` +
      (reserved > 0 ? ` after $${reserved.toFixed(6)} held by requests in flight` : '') +
      `, up to $${needed.toFixed(6)} needed.` +
      (account.usage.period_resets_at ? ` The budget resets at ${account.usage.period_resets_at}.` : ''),
    headers,
  });
}

/**
 * Reserves the request's upper-bound cost (prompt tokens counted with a tokenizer at the input price, plus
 * the maximum output at the output price) on the key's and the team's budgets before the call. The cost stage
 * releases the reservation once the real cost is committed.
 */
class BudgetStage implements Stage {
  readonly name = 'budget';
  private readonly matcher: RouteMatcher;

  constructor(
    config: RuntimeConfig,
    private readonly deps: StageDeps,
  ) {
    this.matcher = routeMatcherFor(config.routes);
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    try {
      checkRequestNumbers(ctx);
    } catch (err) {
      return throwError(() => err);
    }
    const identity = ctx.identity;
    if (!identity) return next();
    const { governance, reservations, bus } = this.deps;
    const accounts: Account[] = [];
    if (identity.key.budget !== null) {
      accounts.push({ kind: 'key', id: identity.key.id, name: identity.key.name, budget: identity.key.budget, usage: governance.currentUsage(identity.key) });
    }
    if (identity.team && identity.team.budget !== null) {
      accounts.push({ kind: 'team', id: identity.team.id, name: identity.team.name, budget: identity.team.budget, usage: governance.currentUsage(identity.team) });
    }
    if (accounts.length === 0) return next();

    const prices = worstPrices(ctx, this.matcher);
    const promptTokens = countPromptTokens(ctx.request.messages, ctx.request.tools);
    const needed = (promptTokens * prices.input + requestedMaxOutput(ctx) * prices.output) / 1_000_000 + prices.perRequest;
    // Checked numbers and validated prices keep `needed` finite and at least zero; should it ever not be,
    // nothing can cover it (a NaN would otherwise pass every comparison below).
    const first = accounts[0] as Account;
    if (!Number.isFinite(needed) || needed < 0) {
      bus.emit('budget.exceeded', { requestId: ctx.id, account: first.kind, id: first.id, budget: first.budget, spend: first.usage.spend, reserved: 0, needed });
      return throwError(() => budgetError(first, Number.MAX_VALUE, 0));
    }
    for (const account of accounts) {
      const reserved = reservations.reserved(`${account.kind}:${account.id}`);
      // A spent budget refuses even requests that cost nothing, so "exhausted" means what it says.
      if (account.usage.spend + reserved + needed > account.budget || account.usage.spend >= account.budget) {
        bus.emit('budget.exceeded', { requestId: ctx.id, account: account.kind, id: account.id, budget: account.budget, spend: account.usage.spend, reserved, needed });
        return throwError(() => budgetError(account, needed, reserved));
      }
    }
    const release = reservations.reserve(
      accounts.map((account) => `${account.kind}:${account.id}`),
      needed,
    );
    const reservation = { release, settledByCost: false };
    ctx.reservation = reservation;
    // Without a cost stage (or when it was never reached) the reservation ends with the request.
    return defer(() => next()).pipe(
      finalize(() => {
        if (!reservation.settledByCost) release();
      }),
    );
  }
}

const budgetStage: StageFactory = {
  name: 'budget',
  create: (config, deps) => new BudgetStage(config, deps),
};

export default budgetStage;
