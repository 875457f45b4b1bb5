import type { PluginDefinition } from '../core/plugin.js';
import type { PipelineDefinition } from './definition.js';
import type { StageRegistry } from './runner.js';
import { BUILT_IN_STAGES } from './built-in-stages.js';

const STAGE_NAME = /^[a-z][a-z0-9-]*$/;

function isPluginDefinition(value: unknown): value is PluginDefinition {
  const candidate = value as Partial<PluginDefinition> | null;
  return typeof candidate?.name === 'string' && typeof candidate.create === 'function';
}

/**
 * Finds each built-in stage a pipeline names: stage `foo` is the default export of `src/stages/foo.ts`, declared
 * with `definePlugin` like any user's plugin, and listed in src/pipeline/built-in-stages.ts.
 */
export async function loadStageRegistry(definition: PipelineDefinition): Promise<StageRegistry> {
  const registry = new Map<string, PluginDefinition>();
  for (const name of definition.stages) {
    if (registry.has(name)) continue;
    if (!STAGE_NAME.test(name)) throw new Error(`pipeline "${definition.name}": invalid stage name "${name}"`);
    const load = Object.hasOwn(BUILT_IN_STAGES, name) ? BUILT_IN_STAGES[name] : undefined;
    if (!load) throw new Error(`pipeline "${definition.name}": no built-in stage "${name}" (src/pipeline/built-in-stages.ts lists ${Object.keys(BUILT_IN_STAGES).join(', ')})`);
    let module: { default?: unknown };
    try {
      module = await load();
    } catch (err) {
      throw new Error(`pipeline "${definition.name}": cannot load stage "${name}" (src/stages/${name}.ts): ${(err as Error).message}`);
    }
    if (!isPluginDefinition(module.default) || module.default.name !== name) {
      throw new Error(`pipeline "${definition.name}": src/stages/${name}.ts must default-export definePlugin({ name: "${name}", ... })`);
    }
    registry.set(name, module.default);
  }
  return registry;
}
