import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configJsonSchema, optionsJsonSchema } from '../../src/config/json-schema.js';

/** The published schema with one plugin whose key has a form of its own, as an editor checks a config file with it. */
function validator() {
  const options = optionsJsonSchema(z.strictObject({ api_key: z.string().startsWith('mod-'), region: z.enum(['eu', 'us']).optional(), retries: z.number().int().optional() }));
  const schema = configJsonSchema([{ match: { properties: { name: { const: 'moderation' } }, required: ['name'] }, options }]);
  return new Ajv2020({ strict: false }).compile(schema);
}

const config = (options: Record<string, unknown>) => ({ plugins: [{ name: 'moderation', path: 'moderation.mjs', options }] });

describe('plugin options in the published JSON Schema', () => {
  it('accepts an env: or file: reference where a string with a form of its own is expected, as the gateway does', () => {
    const validate = validator();
    expect(validate(config({ api_key: 'mod-literal' }))).toBe(true);
    expect(validate(config({ api_key: 'env:MODERATION_API_KEY' }))).toBe(true);
    expect(validate(config({ api_key: 'file:/run/secrets/moderation' }))).toBe(true);
    expect(validate(config({ api_key: 'not-a-key' }))).toBe(false);
    expect(validate(config({ api_key: 'mod-x', region: 'mars' }))).toBe(false);
    expect(validate(config({ api_key: 'mod-x', retries: 'env:RETRIES' }))).toBe(false);
  });
});
