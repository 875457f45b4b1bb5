import type { RouteRuntime } from '../core/config.js';

export interface RouteMatch {
  route: RouteRuntime;
  /** What the pattern's `*` stood for; substituted into targets written with `*`. Empty for exact names. */
  wildcard: string;
}

interface CompiledPattern {
  route: RouteRuntime;
  regex: RegExp;
  specificity: number;
}

function escape(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Finds the route for a requested model: an exact route name first, then the most specific pattern (a name
 * with one `*`, e.g. `openai/*` or `*-mini`). Compiled once per config version.
 */
export class RouteMatcher {
  private readonly patterns: CompiledPattern[];

  constructor(private readonly routes: ReadonlyMap<string, RouteRuntime>) {
    this.patterns = [...routes.values()]
      .filter((route) => route.name.includes('*'))
      .map((route) => ({
        route,
        regex: new RegExp(`^${route.name.split('*').map(escape).join('(.*)')}$`),
        specificity: route.name.replace('*', '').length,
      }))
      .sort((a, b) => b.specificity - a.specificity);
  }

  match(model: string): RouteMatch | null {
    const exact = this.routes.get(model);
    if (exact) return { route: exact, wildcard: '' };
    for (const pattern of this.patterns) {
      const found = pattern.regex.exec(model);
      if (found) return { route: pattern.route, wildcard: found[1] ?? '' };
    }
    return null;
  }
}

/** A target written with `*` takes what the request's model had there: `azure/*` for `openai/gpt-4o` is `azure/gpt-4o`. */
export function expandTarget(model: string, wildcard: string): string {
  return model.includes('*') ? model.replace('*', wildcard) : model;
}

/** Route matchers per config version: a config is immutable, so one compile serves all its requests. */
const matchers = new WeakMap<ReadonlyMap<string, RouteRuntime>, RouteMatcher>();

export function routeMatcherFor(routes: ReadonlyMap<string, RouteRuntime>): RouteMatcher {
  let matcher = matchers.get(routes);
  if (!matcher) {
    matcher = new RouteMatcher(routes);
    matchers.set(routes, matcher);
  }
  return matcher;
}

/** Whether a configured route (its exact name or a `*` pattern) serves this name. */
export function isRouteName(routes: ReadonlyMap<string, RouteRuntime>, name: string): boolean {
  return routes.size > 0 && routeMatcherFor(routes).match(name) !== null;
}
