import type { RuntimeConfig } from '../core/config.js';
import type { GatewayError } from '../core/errors.js';
import type { Candidate } from '../core/plan.js';
import { gatewayError } from '../core/errors.js';
import type { AttemptGate } from '../routing/attempt-plan.js';
import { isBareName, lookupBareModel, resolveModelName } from '../routing/bare-model.js';
import { isRouteName } from '../routing/route-patterns.js';
import { quoteInput } from '../core/quote-input.js';
import { isRecord } from '../core/is-record.js';
import { formatResetDuration } from '../core/durations.js';
import type { SlidingWindowLimiter, WindowState } from './rate-limiter.js';

/** The 429 for a request over a limit, with `retry-after` and OpenAI's `x-ratelimit-*-<unit>` headers of that window. */
export function rateLimitError(unit: 'requests' | 'tokens', scope: string, limit: number, state: WindowState): GatewayError {
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
 * The header names of each unit, written out: names built per call (`x-ratelimit-limit-${unit}`) were new strings that
 * every keyed request's headers object had to hash and look up as property names, about 0.4 µs a request of the six
 * (bench/limit-headers.ts).
 */
const LIMIT_HEADERS = {
  requests: { limit: 'x-ratelimit-limit-requests', remaining: 'x-ratelimit-remaining-requests', reset: 'x-ratelimit-reset-requests' },
  tokens: { limit: 'x-ratelimit-limit-tokens', remaining: 'x-ratelimit-remaining-tokens', reset: 'x-ratelimit-reset-tokens' },
} as const;

/** Writes a window's state as OpenAI's `x-ratelimit-*-<unit>` headers (the reset one says when it is whole again). */
export function writeLimitHeaders(headers: Record<string, string>, unit: 'requests' | 'tokens', state: WindowState): void {
  const names = LIMIT_HEADERS[unit];
  headers[names.limit] = String(state.limit);
  headers[names.remaining] = String(state.remaining);
  headers[names.reset] = formatResetDuration(state.fullResetMs);
}

/** The limiter bucket of a key's requests to one model (or to a name it asked for): shared by admission and attempts. */
export function keyModelBucket(keyId: string, name: string): string {
  return `rpm:key:${keyId}:${name}`;
}

/**
 * Why a `model_rate_limits` name would limit nothing in `config`, or null when it names something a request can
 * reach: a route, a `<provider>/<model>` of a configured provider, or a bare name exactly one configured provider
 * serves (as a request's bare name resolves). A typo in the provider (`opnai/gpt-4o`) is the usual case.
 */
function unmatchedLimitName(config: RuntimeConfig, name: string): string | null {
  if (isRouteName(config.routes, name) || !isBareName(config, name)) return null;
  const found = lookupBareModel(config, name);
  if (found.kind === 'one') return null;
  if (found.kind === 'several') return `'${quoteInput(name)}' is served by more than one configured provider (${found.names.join(', ')}): name the one you mean as '<provider>/<model>'`;
  const slash = name.indexOf('/');
  const providers = `known providers: ${[...config.providers.keys()].join(', ') || 'none'}`;
  if (slash > 0) return `'${quoteInput(name)}' names no configured provider '${quoteInput(name.slice(0, slash))}' (${providers})`;
  return `'${quoteInput(name)}' is no route and no configured provider serves it: name it as '<provider>/<model>' (${providers})`;
}

/**
 * A key's `model_rate_limits` as written to the management API, checked against the running config: a name that
 * would limit nothing is a 400 naming it, not a limit silently never applied. Like `plugins`, checked when written;
 * a provider the config later drops leaves its limits matching nothing.
 */
export function checkModelLimitNames(body: unknown, config: RuntimeConfig): void {
  if (!isRecord(body) || !isRecord(body.model_rate_limits)) return;
  for (const name of Object.keys(body.model_rate_limits)) {
    // Patterns get the schema's own message.
    if (name.includes('*')) continue;
    const problem = unmatchedLimitName(config, name);
    if (problem !== null) {
      throw gatewayError('invalid_value', `Invalid 'model_rate_limits': ${problem}.`, { param: `model_rate_limits.${quoteInput(name, 60)}` });
    }
  }
}

/**
 * A key's per-model limits by the `<provider>/<model>` they apply to (a bare name as it resolves, as in a request;
 * a name written as `<provider>/<model>` wins over a bare one meaning the same model). Entries naming a route are
 * left out: they limit requests that name the route, at admission. Null when the key has none, so a key without
 * per-model limits costs one loop over an empty object.
 */
export function modelLimitsOf(config: RuntimeConfig, limits: Readonly<Record<string, number>> | null | undefined): ReadonlyMap<string, number> | null {
  if (!limits) return null;
  let out: Map<string, number> | null = null;
  for (const name in limits) {
    if (config.routes.has(name)) continue;
    const limit = limits[name] as number;
    const model = resolveModelName(config, name);
    out ??= new Map();
    if (model === name || !out.has(model)) out.set(model, limit);
  }
  return out;
}

/**
 * A key's per-model limits held per upstream attempt: a candidate whose model (`<provider>/<model>`, its label) has
 * a limit is called only while that model's window has room, and counts there once per request, when the plan
 * hands out the request's first attempt on it (a retry of it, or another provider key serving the same model,
 * counts no more). A model the rate-limit stage already counted at admission (the model a direct call names) is
 * not counted again. When the request ends without any attempt because of these limits, `refusal` is the 429 of
 * the refused model whose window makes room soonest.
 */
export class ModelLimitGate implements AttemptGate {
  private readonly counted = new Set<string>();
  private refused: { model: string; limit: number; state: WindowState } | null = null;

  constructor(
    private readonly limiter: SlidingWindowLimiter,
    private readonly key: { id: string; name: string },
    private readonly limits: ReadonlyMap<string, number>,
    /** The answer's headers: an attempt's window, when tighter than what they say, replaces it there. */
    private readonly headers: Record<string, string>,
    /** Told when the request is refused, with the limit (to emit `ratelimit.exceeded`). */
    private readonly onRefused: (limit: number) => void,
    countedAtAdmission: string | null,
  ) {
    if (countedAtAdmission !== null) this.counted.add(countedAtAdmission);
  }

  allows(candidate: Candidate): boolean {
    const model = candidate.label;
    const limit = this.limits.get(model);
    if (limit === undefined || this.counted.has(model)) return true;
    const state = this.limiter.state(keyModelBucket(this.key.id, model), limit);
    if (state.remaining >= 1) return true;
    if (!this.refused || state.resetMs < this.refused.state.resetMs) this.refused = { model, limit, state };
    return false;
  }

  attempted(candidate: Candidate): void {
    const model = candidate.label;
    const limit = this.limits.get(model);
    if (limit === undefined || this.counted.has(model)) return;
    this.counted.add(model);
    const { state } = this.limiter.tryTake(keyModelBucket(this.key.id, model), limit);
    const shown = this.headers['x-ratelimit-remaining-requests'];
    if (shown === undefined || state.remaining < Number(shown)) writeLimitHeaders(this.headers, 'requests', state);
  }

  refusal(): GatewayError | null {
    const refused = this.refused;
    if (!refused) return null;
    this.onRefused(refused.limit);
    return rateLimitError('requests', `key '${this.key.name}' on model '${refused.model}'`, refused.limit, refused.state);
  }
}
