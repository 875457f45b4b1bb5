import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/config/json-schema.js';

/** Regenerates config.schema.json from the schema the code validates with (`npm run schema`). */
writeFileSync(new URL('../config.schema.json', import.meta.url), `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
