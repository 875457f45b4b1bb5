import type { PluginPlacement } from '../core/plugin.js';

export interface PlacedPlugin {
  name: string;
  placement: PluginPlacement;
  /** Where the placement came from, for errors: `plugins.2.placement` or the plugin's own default. */
  where: string;
}

export class PlacementError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The request-order stage list with the plugins inserted: each goes right after its `after` stage, else right
 * before its `before` stage, else just before `call` (or last). Plugins may be placed relative to each other
 * in any listing order; two placed at the same spot keep their listing order. Names that are neither a stage
 * nor a plugin, a plugin placed relative to itself, a cycle, an `after` that does not come before the `before`,
 * and a place after `call` (no request reaches it) are refused.
 */
export function placePlugins(stages: readonly string[], plugins: readonly PlacedPlugin[]): string[] {
  const order = [...stages];
  const known = new Set([...stages, ...plugins.map((plugin) => plugin.name)]);
  for (const { name, placement, where } of plugins) {
    for (const side of ['after', 'before'] as const) {
      const target = placement[side];
      if (target === undefined) continue;
      if (target === name) throw new PlacementError(`${where}.${side}`, `plugin "${name}" cannot be placed relative to itself`);
      if (!known.has(target)) {
        throw new PlacementError(`${where}.${side}`, `"${target}" is neither a pipeline stage (${stages.join(', ')}) nor a configured plugin`);
      }
    }
  }
  const waiting = [...plugins];
  // Several plugins after the same stage keep their listing order: each goes after the last one placed there.
  const lastAfter = new Map<string, string>();
  // Insert the plugins whose anchors are in place, round after round: one that names a later-listed plugin waits for it.
  while (waiting.length > 0) {
    const before = waiting.length;
    for (let i = 0; i < waiting.length; ) {
      const plugin = waiting[i]!;
      const { after, before: ahead } = plugin.placement;
      const anchored = (after === undefined || order.includes(after)) && (ahead === undefined || order.includes(ahead));
      if (!anchored) {
        i++;
        continue;
      }
      const call = order.indexOf('call');
      let at: number;
      if (after !== undefined) {
        at = order.indexOf(lastAfter.get(after) ?? after) + 1;
        lastAfter.set(after, plugin.name);
        if (ahead !== undefined && order.indexOf(ahead) < at) {
          throw new PlacementError(`${plugin.where}.before`, `plugin "${plugin.name}": "${after}" does not come before "${ahead}"`);
        }
      } else if (ahead !== undefined) {
        at = order.indexOf(ahead);
      } else {
        at = call === -1 ? order.length : call;
      }
      // `call` answers and never calls next(): a stage behind it would be accepted and then never run.
      if (call !== -1 && at > call) {
        const side = after !== undefined ? 'after' : 'before';
        throw new PlacementError(`${plugin.where}.${side}`, `plugin "${plugin.name}" would run after "call", which answers and never calls the next stage; place it before "call"`);
      }
      order.splice(at, 0, plugin.name);
      waiting.splice(i, 1);
    }
    if (waiting.length === before) {
      const stuck = waiting[0]!;
      throw new PlacementError(stuck.where, `plugins ${waiting.map((p) => `"${p.name}"`).join(', ')} are placed relative to each other in a cycle`);
    }
  }
  return order;
}
