import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/config/json-schema.js';
import { examplePluginSchemas } from './example-plugin-schemas.js';

/**
 * Regenerates config.schema.json from the schema the code validates with (`npm run schema`), with the options
 * schema of each plugin shipped in plugins/examples/ folded in for entries whose `path` names that file.
 */
writeFileSync(new URL('../config.schema.json', import.meta.url), `${JSON.stringify(configJsonSchema(await examplePluginSchemas()), null, 2)}\n`);
