import { readdirSync } from 'node:fs';
import { optionsJsonSchema, type PluginOptionsSchema } from '../src/config/json-schema.js';
import type { PluginDefinition } from '../src/core/plugin.js';

/**
 * The options schema of each plugin shipped in plugins/examples/, matched to config entries whose `path` names
 * that file: what `npm run schema` folds into config.schema.json (and what its test regenerates to compare).
 */
export async function examplePluginSchemas(): Promise<PluginOptionsSchema[]> {
  const folder = new URL('../plugins/examples/', import.meta.url);
  const plugins: PluginOptionsSchema[] = [];
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.ts')).sort()) {
    const module = (await import(new URL(file, folder).href)) as { default?: PluginDefinition };
    const options = module.default?.options;
    if (!options) continue;
    const stem = file.replace(/\.ts$/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    plugins.push({
      match: { properties: { path: { type: 'string', pattern: `(^|/)plugins/examples/${stem}(\\.ts|\\.js)?$` } }, required: ['path'] },
      options: optionsJsonSchema(options as never),
    });
  }
  return plugins;
}
