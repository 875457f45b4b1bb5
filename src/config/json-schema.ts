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

/** What the config file may write in place of any string of a plugin's options (see plugin-options.ts). */
const REFERENCE = { type: 'string', pattern: '^(env|file):.', description: 'An env:NAME or file:/path reference (in the config file), read when the config is applied.' };

/**
 * Whether a string schema has a form a reference may not meet as written, though the value it reads may: a pattern, a
 * format, a length (`env:X` is at least 5 characters, so a shorter minimum says nothing).
 */
function hasForm(node: Record<string, unknown>): boolean {
  return 'pattern' in node || 'format' in node || 'maxLength' in node || (typeof node.minLength === 'number' && node.minLength > 5);
}

/**
 * The schema with each string of a form of its own (a pattern, a format, a length) also taking an `env:`/`file:`
 * reference: the gateway reads those before the plugin's schema sees them, so an editor must not flag them.
 */
function allowingReferences(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(allowingReferences);
  if (typeof node !== 'object' || node === null) return node;
  const out = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, allowingReferences(value)]));
  return out.type === 'string' && hasForm(out) ? { anyOf: [out, REFERENCE] } : out;
}

/** A zod schema (the plugin's `options`) as JSON Schema, describing what the config may write. */
export function optionsJsonSchema(options: z.ZodType): object {
  const { $schema: _drop, ...schema } = z.toJSONSchema(options, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return allowingReferences(schema) as object;
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
