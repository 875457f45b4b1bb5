import { defer, type Observable } from 'rxjs';
import type { RouteRuntime, RuntimeConfig } from '../config/runtime.js';
import type { ResponseEvent } from '../dialects/openai/types.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Next, Stage, StageDeps, StageFactory } from '../pipeline/stage.js';
import type { Target } from '../providers/contract.js';
import { resolveDirectTarget } from '../routing/resolve-target.js';
import { expandTarget, RouteMatcher } from '../routing/route-patterns.js';
import { weightedPick } from '../routing/weighted-pick.js';

/** Attribute key under which the route stage leaves the route's price for the cost stage. */
export const ROUTE_PRICE = 'route.price';

/**
 * Expands a route's fallback chain into concrete targets. A fallback that names another route contributes
 * one weighted pick of that route's targets; cycles are cut. Fallbacks that cannot be served right now
 * (no key configured, say) are left out rather than failing a request whose first choice may well succeed.
 */
function fallbackTargets(ctx: RequestContext, route: RouteRuntime, wildcard: string, seen: Set<string>): Target[] {
  const out: Target[] = [];
  for (const name of route.fallbacks) {
    if (seen.has(name)) continue;
    seen.add(name);
    const chained = ctx.config.routes.get(name);
    const picked = chained ? weightedPick(chained.targets)?.model : name;
    if (picked === undefined) continue;
    const model = expandTarget(picked, wildcard);
    try {
      out.push(resolveDirectTarget(ctx.config, model, ctx.clientProviderKey));
    } catch {
      continue;
    }
    if (chained) out.push(...fallbackTargets(ctx, chained, wildcard, seen));
  }
  return out;
}

/**
 * Maps a route name (or a `<provider>/<model>` that has a route) to its targets: one weighted pick, then the
 * fallback chain. Requests for models without a route pass through untouched.
 */
class RouteStage implements Stage {
  readonly name = 'route';
  private readonly matcher: RouteMatcher;

  constructor(
    config: RuntimeConfig,
    private readonly deps: StageDeps,
  ) {
    this.matcher = new RouteMatcher(config.routes);
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    const match = this.matcher.match(ctx.request.model);
    if (!match) return next();
    const { route, wildcard } = match;
    return defer(() => {
      const picked = weightedPick(route.targets);
      if (!picked) return next();
      const primary = resolveDirectTarget(ctx.config, expandTarget(picked.model, wildcard), ctx.clientProviderKey);
      const fallbacks = fallbackTargets(ctx, route, wildcard, new Set([route.name]));
      ctx.targets = [primary, ...fallbacks];
      ctx.responseHeaders['x-tollgate-route'] = route.name;
      // The cost stage prices models the catalogue does not know at the route's price.
      if (route.price) ctx.attributes.set(ROUTE_PRICE, route.price);
      this.deps.bus.emit('route.selected', {
        requestId: ctx.id,
        route: route.name,
        target: expandTarget(picked.model, wildcard),
        fallbacks: fallbacks.map((target) => `${target.provider.name}/${target.model}`),
      });
      return next();
    });
  }
}

const routeStage: StageFactory = {
  name: 'route',
  // Without routes the stage has nothing to do and is left out of the pipeline.
  create: (config: RuntimeConfig, deps) => (config.routes.size > 0 ? new RouteStage(config, deps) : null),
};

export default routeStage;
