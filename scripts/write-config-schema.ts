import { readdirSync, writeFileSync } from 'node:fs';
import { configJsonSchema, optionsJsonSchema, type PluginOptionsSchema } from '../src/config/json-schema.js';
import type { PluginDefinition } from '../src/core/plugin.js';

/**
 * Regenerates config.schema.json from the schema the code validates with (`npm run schema`), with the options
 * schema of each plugin shipped in plugins/examples/ folded in for entries whose `path` names that file.
 */
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
writeFileSync(new URL('../config.schema.json', import.meta.url), `${JSON.stringify(configJsonSchema(plugins), null, 2)}\n`);
