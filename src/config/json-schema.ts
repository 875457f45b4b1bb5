import { z } from 'zod';
import { configFileSchema } from './schema.js';

let cached: object | null = null;

/** The published JSON Schema of the config document, generated from the schema the code validates with. */
export function configJsonSchema(): object {
  cached ??= {
    title: 'tollgate configuration',
    ...z.toJSONSchema(configFileSchema, { io: 'input' }),
  };
  return cached;
}
