import { z } from 'zod';
import { configFileSchema } from './schema.js';

/** A plugin's options schema and which entries of `plugins` it applies to (a JSON Schema the entry must match). */
export interface PluginOptionsSchema {
  /** e.g. `{ properties: { name: { const: 'redact-word' } }, required: ['name'] }`. */
  match: object;
  /** The plugin's `options` zod schema, as JSON Schema. */
  options: object;
}

let cached: Record<string, unknown> | null = null;

function baseSchema(): Record<string, unknown> {
  cached ??= {
    title: 'tollgate configuration',
    ...(z.toJSONSchema(configFileSchema, { io: 'input' }) as Record<string, unknown>),
  };
  return cached;
}

/** A zod schema (the plugin's `options`) as JSON Schema, describing what the config may write. */
export function optionsJsonSchema(options: z.ZodType): object {
  const { $schema: _drop, ...schema } = z.toJSONSchema(options, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return schema;
}

/**
 * The published JSON Schema of the config document, generated from the schema the code validates with, with each
 * known plugin's options schema folded in: an entry of `plugins` that matches a plugin (by path, or by name for
 * the plugins a running gateway has loaded) must have options that plugin accepts, so an editor checks them too.
 */
export function configJsonSchema(plugins: readonly PluginOptionsSchema[] = []): object {
  const base = baseSchema();
  if (plugins.length === 0) return base;
  const schema = structuredClone(base) as { properties: { plugins: { items: Record<string, unknown> } } };
  schema.properties.plugins.items.allOf = plugins.map((plugin) => ({ if: plugin.match, then: { properties: { options: plugin.options } } }));
  return schema;
}
