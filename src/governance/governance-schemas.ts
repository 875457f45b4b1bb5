import { z } from 'zod';
import { cachePolicySchema, guardrailsOverrideSchema, mcpPolicySchema, routeNameSchema } from '../config/schema.js';
import { checkedGuardrails } from '../config/runtime.js';
import { gatewayError, type ErrorCode } from '../core/errors.js';

/**
 * What the management API accepts for virtual keys and teams. Strict objects: an unknown or read-only field is
 * a 400 naming it, never silently dropped.
 */

const nameSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters');
const budgetSchema = z.number().min(0, 'must be a number of USD >= 0').nullable();
const periodSchema = z.enum(['daily', 'weekly', 'monthly', 'total']);
const perMinuteSchema = z.number().int('must be an integer').positive('must be > 0').nullable();
const metadataSchema = z.record(z.string(), z.unknown());
const expiresSchema = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time such as 2030-01-01T00:00:00Z' })
  .transform((value) => new Date(value).toISOString())
  .nullable();

/** `<provider>/<model>`, the model part may hold more slashes; `*` matches anything (`openai/*`, `*`). */
const MODEL_PATTERN = /^(\*|[^/\s]+\/\S+)$/;
/**
 * An entry of a key's `models`: a `<provider>/<model>` (or `*` pattern), or a route name in the config's own
 * syntax. Only the syntax is checked here; the management API checks each entry against the running config
 * (http/admin/allow-list-names.ts): a route no config has is a 400 there, a name a later config drops matches nothing.
 */
const modelPatternSchema = z
  .string()
  .refine(
    (entry) => MODEL_PATTERN.test(entry) || routeNameSchema.safeParse(entry).success,
    "must be '<provider>/<model>' ('*' patterns allowed) or a route name, e.g. 'openai/gpt-4o-mini', 'openai/*' or 'chat-default'",
  );

/**
 * Requests per minute per model: a `<provider>/<model>` (or a bare name, as it resolves) limits every call to that
 * model, however a request reaches it (see governance/model-limits.ts); a route name limits requests naming the route.
 */
const modelRateLimitsSchema = z.record(
  z
    .string()
    .min(1, 'must name a model')
    // Limits are looked up by exact name per request (and per attempt); a pattern would match nothing and limit nothing.
    .refine((name) => !name.includes('*'), "must name one model or route: '*' patterns are not supported here (list each model, e.g. 'openai/gpt-4o')"),
  z.number().int('must be an integer').positive('must be > 0'),
);

const teamRefSchema = z.string().min(1, 'must be a team id').nullable();

/** Names of plugins (configured with `apply: listed`) a key or team turns on; checked against the config by the API. */
const pluginListSchema = z.array(z.string().min(1).max(64)).max(64);

const keyFields = {
  name: nameSchema,
  budget: budgetSchema,
  budget_period: periodSchema,
  rate_limit: perMinuteSchema,
  tokens_per_minute: perMinuteSchema,
  models: z.array(modelPatternSchema),
  model_rate_limits: modelRateLimitsSchema,
  team: teamRefSchema,
  expires_at: expiresSchema,
  metadata: metadataSchema,
  disabled: z.boolean(),
  plugins: pluginListSchema,
  /** Cache overrides for the key's requests (null: none). */
  cache: cachePolicySchema.nullable(),
  /** MCP for the key's requests: servers attached, allow-list, mode, tool-call rate limit (null: none). */
  mcp: mcpPolicySchema.nullable(),
  /** Guardrail rules added or skipped for the key's requests (null: none); operator regexes checked for safety. */
  guardrails: guardrailsOverrideSchema
    .nullable()
    .superRefine((value, ctx) => {
      if (!value) return;
      try {
        checkedGuardrails(value, 'guardrails');
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['rules'], message: err instanceof Error ? err.message : String(err) });
      }
    }),
};

export const keyCreateSchema = z.strictObject({
  name: keyFields.name,
  budget: keyFields.budget.default(null),
  budget_period: keyFields.budget_period.default('total'),
  rate_limit: keyFields.rate_limit.default(null),
  tokens_per_minute: keyFields.tokens_per_minute.default(null),
  models: keyFields.models.default([]),
  model_rate_limits: keyFields.model_rate_limits.default({}),
  team: keyFields.team.default(null),
  expires_at: keyFields.expires_at.default(null),
  metadata: keyFields.metadata.default({}),
  disabled: keyFields.disabled.default(false),
  plugins: keyFields.plugins.default([]),
  cache: keyFields.cache.default(null),
  guardrails: keyFields.guardrails.default(null),
  mcp: keyFields.mcp.default(null),
});

export const keyPatchSchema = z.strictObject({
  name: keyFields.name.optional(),
  budget: keyFields.budget.optional(),
  budget_period: keyFields.budget_period.optional(),
  rate_limit: keyFields.rate_limit.optional(),
  tokens_per_minute: keyFields.tokens_per_minute.optional(),
  models: keyFields.models.optional(),
  // null clears every per-model limit.
  model_rate_limits: keyFields.model_rate_limits
    .nullable()
    .transform((value) => value ?? {})
    .optional(),
  team: keyFields.team.optional(),
  expires_at: keyFields.expires_at.optional(),
  metadata: keyFields.metadata.optional(),
  disabled: keyFields.disabled.optional(),
  plugins: keyFields.plugins.optional(),
  cache: keyFields.cache.optional(),
  guardrails: keyFields.guardrails.optional(),
  mcp: keyFields.mcp.optional(),
});

export const teamCreateSchema = z.strictObject({
  name: nameSchema,
  budget: budgetSchema.default(null),
  budget_period: periodSchema.default('total'),
  rate_limit: perMinuteSchema.default(null),
  tokens_per_minute: perMinuteSchema.default(null),
  metadata: metadataSchema.default({}),
  plugins: pluginListSchema.default([]),
  cache: keyFields.cache.default(null),
  guardrails: keyFields.guardrails.default(null),
  mcp: keyFields.mcp.default(null),
});

export const teamPatchSchema = z.strictObject({
  name: nameSchema.optional(),
  budget: budgetSchema.optional(),
  budget_period: periodSchema.optional(),
  rate_limit: perMinuteSchema.optional(),
  tokens_per_minute: perMinuteSchema.optional(),
  metadata: metadataSchema.optional(),
  plugins: pluginListSchema.optional(),
  cache: keyFields.cache.optional(),
  guardrails: keyFields.guardrails.optional(),
  mcp: keyFields.mcp.optional(),
});

export type KeyCreateInput = z.output<typeof keyCreateSchema>;
export type KeyPatch = z.output<typeof keyPatchSchema>;
export type TeamCreateInput = z.output<typeof teamCreateSchema>;
export type TeamPatch = z.output<typeof teamPatchSchema>;

/** Fields the API shows but nobody writes. */
export const KEY_READ_ONLY_FIELDS = [
  'id',
  'key',
  'key_prefix',
  'key_hash',
  'spend',
  'requests',
  'period_start',
  'period_resets_at',
  'total_spend',
  'total_requests',
  'last_used_at',
  'created_at',
  'updated_at',
];
export const TEAM_READ_ONLY_FIELDS = ['id', 'spend', 'requests', 'period_start', 'period_resets_at', 'created_at', 'updated_at'];

function describe(issue: z.core.$ZodIssue, field: string | null): string {
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
  // A record's key refused by its own check (model_rate_limits' names): that check's message says why, zod's does not.
  const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  return `${field ?? '(body)'}: ${message}`;
}

/**
 * Parses a body with `schema`; a failure is a 400 `invalid_request_error` whose `param` names the first
 * offending field (`models.0`, `budget`, or the unknown field itself), as the config API does.
 */
export function validateBody<T>(schema: z.ZodType<T>, body: unknown, readOnly: readonly string[] = []): T {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw gatewayError('invalid_json', 'The request body must be a JSON object.');
  }
  const present = readOnly.find((field) => Object.hasOwn(body, field));
  if (present !== undefined) throw gatewayError('read_only_field', `'${present}' is read-only.`, { param: present });
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw gatewayError('invalid_value', 'Invalid request body.');
  const path = issue.path.map(String).join('.');
  const field = issue.code === 'unrecognized_keys' ? (issue.keys[0] ?? null) : path || null;
  const details = result.error.issues
    .slice(0, 5)
    .map((each) => describe(each, each.code === 'unrecognized_keys' ? null : each.path.map(String).join('.') || null))
    .join('; ');
  return fail(`Invalid request: ${details}.`, field, issue.code === 'unrecognized_keys' ? 'unknown_field' : 'invalid_value');
}

function fail(message: string, param: string | null, code: ErrorCode): never {
  throw gatewayError(code, message, { param });
}
