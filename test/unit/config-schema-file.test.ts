import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../../src/config/json-schema.js';
import { examplePluginSchemas } from '../../scripts/example-plugin-schemas.js';

describe('config.schema.json', () => {
  it('is the JSON Schema generated from the schema the code validates with (run `npm run schema` after changing it)', async () => {
    const published: unknown = JSON.parse(readFileSync(new URL('../../config.schema.json', import.meta.url), 'utf8'));
    expect(published).toEqual(configJsonSchema(await examplePluginSchemas()));
  });

  it('describes providers, routes and settings', () => {
    const schema = configJsonSchema() as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties).sort()).toEqual(['alerts', 'cache', 'guardrails', 'mcp', 'plugins', 'providers', 'routes', 'routing_rules', 'settings']);
  });
});
