import { defer, type Observable } from 'rxjs';
import type { RuntimeConfig } from '../core/config.js';
import { headerSafeName } from '../core/header-value.js';
import type { ResponseEvent } from '../core/canonical.js';
import { promptTokensOf } from '../governance/prompt-tokens.js';
import { requestMetadata, type RequestContext } from '../core/context.js';
import type { Next, Stage } from '../core/stage.js';
import { definePlugin } from '../core/plugin.js';
import type { EventBus } from '../bus/bus.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import type { HealthRegistry } from '../routing/health-registry.js';
import { BUS, GOVERNANCE, HEALTH } from '../services.js';
import { buildCandidateGroups, checkRequestFallbacks } from '../routing/candidate-groups.js';
import { routeMatcherFor, type RouteMatcher } from '../routing/route-patterns.js';
import { firstMatchingRule, type RuleFacts } from '../routing/routing-rules.js';

function usedPercent(spend: number, budget: number | null): number | null {
  if (budget === null) return null;
  return budget <= 0 ? 100 : (spend / budget) * 100;
}

/**
 * Decides where a request goes: usage-based routing rules first (they may send it to another route or
 * model), then the route its model names (weighted targets and a fallback chain), or the model itself. Leaves
 * the plan on the context: the candidates, the routing policy, the route and its price, for the spend stage
 * (which reserves for what the plan can reach) and the call stage (which follows it).
 */
class RouteStage implements Stage {
  readonly name = 'route';
  private readonly matcher: RouteMatcher;

  constructor(
    private readonly config: RuntimeConfig,
    private readonly deps: { bus: EventBus; governance: GovernanceStore; health: HealthRegistry },
  ) {
    this.matcher = routeMatcherFor(config.routes);
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    return defer(() => {
      checkRequestFallbacks(ctx.config, this.matcher, ctx.requestFallbacks);
      let model = ctx.request.model;
      if (this.config.routingRules.length > 0) {
        const applied = firstMatchingRule(this.config.routingRules, this.facts(ctx));
        // A rule that sends the request where it already goes decides too, but redirects nothing.
        if (applied && applied.rule.route_to !== model) {
          this.deps.bus.emit('routing_rule.applied', { requestId: ctx.id, rule: applied.name, from: model, to: applied.rule.route_to });
          ctx.responseHeaders['x-tollgate-routing-rule'] = applied.name;
          model = applied.rule.route_to;
        }
      }
      const match = this.matcher.match(model);
      const groups = buildCandidateGroups(ctx.config, model, match, ctx.clientProviderKey, ctx.requestFallbacks);
      ctx.plan = { groups, policy: match?.route.policy ?? ctx.config.settings.routing, route: match?.route.name ?? null, price: match?.route.price ?? null };
      if (match) ctx.responseHeaders['x-tollgate-route'] = headerSafeName(match.route.name);
      if (this.deps.bus.hasListeners('route.selected')) {
        this.deps.bus.emit('route.selected', {
          requestId: ctx.id,
          route: match?.route.name ?? model,
          target: groups[0]?.name ?? model,
          fallbacks: groups.slice(1).map((group) => group.name),
        });
      }
      return next();
    });
  }

  private facts(ctx: RequestContext): RuleFacts {
    const identity = ctx.identity;
    const { governance, health } = this.deps;
    let tokens: number | null = null;
    return {
      operation: ctx.operation,
      model: ctx.request.model,
      key: identity ? { id: identity.key.id, name: identity.key.name, metadata: identity.key.metadata } : null,
      team: identity?.team ? { id: identity.team.id, name: identity.team.name } : null,
      metadata: requestMetadata(ctx),
      estimatedTokens: () => (tokens ??= promptTokensOf(ctx)),
      keyBudgetUsedPct: () => (identity ? usedPercent(governance.currentUsage(identity.key).spend, identity.key.budget) : null),
      teamBudgetUsedPct: () => (identity?.team ? usedPercent(governance.currentUsage(identity.team).spend, identity.team.budget) : null),
      targetRps: (label) => health.rps(label),
    };
  }
}

export default definePlugin({
  name: 'route',
  requires: [BUS, GOVERNANCE, HEALTH],
  create: (_options, config, services) =>
    new RouteStage(config, { bus: services.get(BUS), governance: services.get(GOVERNANCE), health: services.get(HEALTH) }),
});
