import { z } from 'zod';

/**
 * The one schema for the config file (and, later, the management API). Field names are snake_case as
 * operators write them in YAML. `z.toJSONSchema(configFileSchema)` gives the published JSON Schema.
 */
const timeoutsSchema = z.strictObject({
  first_byte_ms: z.number().int().positive().optional().describe('Time allowed until upstream response headers arrive.'),
  total_ms: z.number().int().positive().optional().describe('Time allowed for the whole upstream exchange, streams included.'),
});

export const providerKeySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).optional().describe('Stable key id; assigned when absent.'),
  value: z.string().min(1).describe('The key, or a reference: `env:NAME` or `file:/path`.'),
  weight: z.number().positive().default(1),
  models: z.array(z.string().min(1)).optional().describe('Models this key may serve; all when absent.'),
});

/** USD per million tokens, as providers publish prices. */
export const priceSchema = z.strictObject({
  input_per_mtok: z.number().nonnegative(),
  output_per_mtok: z.number().nonnegative(),
  cached_input_per_mtok: z.number().nonnegative().optional().describe('Cache reads; defaults to the input price.'),
  cache_write_per_mtok: z.number().nonnegative().optional().describe('Cache writes; defaults to the input price.'),
});

export const providerSchema = z.strictObject({
  type: z.string().min(1).optional().describe('Vendor / wire format, e.g. `openai`, `groq`; defaults to the provider name.'),
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  api_key: z.string().min(1).optional().describe('Shorthand for a single key; same forms as keys[].value.'),
  keys: z.array(providerKeySchema).optional(),
  headers: z.record(z.string(), z.string()).optional().describe('Extra headers sent upstream on every request.'),
  timeouts: timeoutsSchema.optional(),
  models: z.array(z.string().min(1)).optional().describe('Models to list in /v1/models besides the catalogue.'),
  prices: z
    .record(z.string().min(1), priceSchema)
    .optional()
    .describe('Prices by model name, overriding the catalogue; the entry "*" prices every model the catalogue does not know.'),
});

const modelRef = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]*\/.+/, 'expected "<provider>/<model>"');

export const routeSchema = z.strictObject({
  targets: z
    .array(z.strictObject({ model: modelRef, weight: z.number().positive().default(1) }))
    .min(1)
    .describe('Weighted targets; one is picked per request in proportion to its weight.'),
  fallbacks: z
    .array(z.string().min(1))
    .default([])
    .describe('Tried in order when the picked target fails: `<provider>/<model>` names or other route names.'),
  price: priceSchema.optional().describe('Price of requests made through this route when the catalogue does not know the model.'),
});

export const settingsSchema = z.strictObject({
  host: z.string().min(1).optional(),
  port: z.number().int().min(0).max(65535).optional(),
  data_dir: z.string().min(1).optional(),
  max_body_bytes: z.number().int().positive().optional().describe('Largest accepted request body.'),
  upstream_timeouts: timeoutsSchema.optional(),
  shutdown_grace_ms: z.number().int().nonnegative().optional().describe('How long in-flight requests may run after SIGTERM.'),
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  log_retention_days: z.number().int().positive().optional().describe('How long request logs are kept.'),
  require_virtual_key: z.boolean().optional().describe('Refuse requests without a virtual key (401).'),
});

export const providerNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'provider names are lower-case letters, digits, - and _');

export const routeNameSchema = z
  .string()
  .regex(/^(?=[^*]*\*?[^*]*$)[A-Za-z0-9*][A-Za-z0-9._:/*-]{0,199}$/, 'route names are letters, digits, . _ : / - and at most one * (a pattern)');

/**
 * A whole config document, as the file holds it and as the API layer stores it. Later sections (virtual
 * keys, cache, alerts, guardrails, plugins) are added here as siblings.
 */
export const configFileSchema = z.strictObject({
  settings: settingsSchema.optional(),
  providers: z.record(providerNameSchema, providerSchema).optional(),
  routes: z.record(routeNameSchema, routeSchema).optional(),
});

export type ConfigFile = z.infer<typeof configFileSchema>;
export type ConfigDocument = ConfigFile;
/** A document as written, before the schema fills in defaults (what embedders and tests pass). */
export type ConfigInput = z.input<typeof configFileSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type ProviderKeyConfig = z.infer<typeof providerKeySchema>;
export type RouteConfig = z.infer<typeof routeSchema>;
export type PriceConfig = z.infer<typeof priceSchema>;

/** Renders the first schema violations as one readable line naming the fields. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = issue.path.map(String).join('.') || '(root)';
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
