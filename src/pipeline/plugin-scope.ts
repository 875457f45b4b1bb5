import type { RequestContext } from '../core/context.js';
import type { Stage } from '../core/stage.js';

/** Whether the request's route, virtual key or team turns on this `listed` plugin. */
export function listedFor(ctx: RequestContext, plugin: string): boolean {
  const route = ctx.plan?.route ? ctx.config.routes.get(ctx.plan.route) : undefined;
  if (route?.plugins.includes(plugin)) return true;
  const identity = ctx.identity;
  return identity?.key.plugins?.includes(plugin) === true || identity?.team?.plugins?.includes(plugin) === true;
}

/**
 * A plugin configured with `apply: listed`: its stage runs only for requests whose route, key or team lists it,
 * and every other request passes it by (one lookup, nothing of its own: no Observable, no span). A key that
 * lists a plugin the config no longer has simply does not meet it.
 */
export function listedOnly(stage: Stage, entryName: string): Stage {
  // Routes, keys and teams list a plugin by its config entry's name, which need not be its stage's own name.
  return {
    name: stage.name,
    // Not listed: the request passes it by (no span, no stage.completed), as it does any stage with nothing to do.
    appliesTo: (ctx) => listedFor(ctx, entryName) && stage.appliesTo?.(ctx) !== false,
    run: (ctx, next) => (listedFor(ctx, entryName) ? stage.run(ctx, next) : next()),
    ...(stage.close ? { close: () => stage.close?.() } : {}),
  };
}
