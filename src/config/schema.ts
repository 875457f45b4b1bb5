import { isIP } from 'node:net';
import { quoteInput } from '../core/quote-input.js';
import { didYouMean } from '../core/did-you-mean.js';
import { z } from 'zod';
import type { AlertsConfig, CacheConfig, CachePolicyConfig, ClientIpHeader, PluginEntryConfig, PriceConfig, RoutingPolicyConfig, RoutingRuleConfig } from '../core/config.js';
import { NEVER_FORWARDED } from '../providers/forward-headers.js';
import { isLoopbackAddress } from './address.js';
import { guardrailRuleBase, guardrailRuleSchema } from '../guardrails/rules.js';

/** setTimeout's largest delay (2^31-1 ms, about 24.8 days); a larger one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;
/** The largest weight a target or key may carry, so a route's weights always sum to a finite number. */
export const MAX_WEIGHT = 1_000_000;
/** A duration in milliseconds that a timer can hold. */
const ms = () => z.number().int().max(MAX_TIMER_MS, `at most ${MAX_TIMER_MS} ms (about 24.8 days)`);
const weight = () => z.number().positive().max(MAX_WEIGHT, `at most ${MAX_WEIGHT}`);
/** A count (attempts, calls, failures): a whole number well inside what arithmetic on it keeps exact. */
const count = () => z.number().int().positive().max(1_000_000);
/** A byte limit on what is read from an upstream: at least 1 KiB, at most 2 GiB. */
const maxResponseBytes = () => z.number().int().min(1024, 'at least 1024 bytes').max(2_147_483_648, 'at most 2147483648 bytes (2 GiB)').optional();

/** Characters Node refuses in a header value (CR, LF, NUL, other controls, anything above U+00FF). */
const ILLEGAL_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** An HTTP header name: an RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export function hasIllegalHeaderChars(value: string): boolean {
  return ILLEGAL_HEADER_VALUE.test(value);
}
const headerValue = z.string().refine((value) => !hasIllegalHeaderChars(value), {
  message: 'holds a character not allowed in an HTTP header (CR, LF, NUL, another control character or one above U+00FF)',
});
/**
 * A key is sent in a header, so the same characters are refused; a service-account JSON (for `vertex`) is
 * read, not sent, and may span lines.
 */
/** What a blank key gets: sent, it is an empty credential every request fails on, upstream, with a 401. */
const BLANK_KEY = 'is blank; write the key, or (in the config file) an env:NAME or file:/path reference, or leave the field out';

const keyValue = z
  .string()
  .min(1, BLANK_KEY)
  .refine((value) => value.trim() !== '', BLANK_KEY)
  .refine((value) => value.trimStart().startsWith('{') || !hasIllegalHeaderChars(value), {
    message: 'holds a character not allowed in an HTTP header (CR, LF, NUL, another control character or one above U+00FF)',
  });

/** A URL's hostname that names this machine: `localhost`, or a loopback address (IPv6 in brackets). */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || (isIP(host) !== 0 && isLoopbackAddress(host));
}

/**
 * The one schema for the config file (and, later, the management API). Field names are snake_case as
 * operators write them in YAML. `z.toJSONSchema(configFileSchema)` gives the published JSON Schema.
 */
const timeoutsSchema = z.strictObject({
  first_byte_ms: ms().positive().optional().describe("Time allowed until a streamed answer's (or an embeddings answer's) response headers arrive. A whole (non-streamed) chat answer's headers come only after its whole generation, so total_ms alone bounds it."),
  total_ms: ms().positive().optional().describe('Time allowed for the whole upstream exchange, streams included.'),
  idle_ms: ms()
    .positive()
    .optional()
    .describe('Longest silence allowed inside a response body (between stream chunks) before the upstream counts as stalled.'),
});

export const providerKeySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).optional().describe('Stable key id; assigned when absent.'),
  value: keyValue.describe('The key, or a reference: `env:NAME` or `file:/path` (in the config file only, not through the API).'),
  weight: weight().default(1),
  models: z.array(z.string().min(1)).optional().describe('Models this key may serve; all when absent.'),
  disabled: z.boolean().optional().describe('Out of rotation: kept and shown, but no request uses it (default false).'),
});

/** USD per million tokens, as providers publish prices. */
export const priceSchema = z.strictObject({
  input_per_mtok: z.number().nonnegative().max(1_000_000),
  output_per_mtok: z.number().nonnegative().max(1_000_000),
  cached_input_per_mtok: z.number().nonnegative().max(1_000_000).optional().describe('Cache reads; defaults to the input price.'),
  cache_write_per_mtok: z.number().nonnegative().max(1_000_000).optional().describe('Cache writes; defaults to the input price.'),
  cache_write_1h_per_mtok: z
    .number()
    .nonnegative()
    .max(1_000_000)
    .optional()
    .describe("Writes to Anthropic's 1-hour cache (usage.cache_creation.ephemeral_1h_input_tokens); defaults to the cache-write price."),
  web_search_per_1k: z
    .number()
    .nonnegative()
    .max(1_000_000)
    .optional()
    .describe('USD per 1,000 web searches the provider ran and reported (Anthropic server_tool_use.web_search_requests, Perplexity num_search_queries); unset: searches cost nothing.'),
});

/** An https URL, or http on a loopback host (a local stand-in for tests and development). */
const secureUrl = () =>
  z.url({ protocol: /^https?$/ }).refine((value) => new URL(value).protocol === 'https:' || isLoopbackHost(new URL(value).hostname), {
    message: 'must be an https URL (http only for a loopback host)',
  });

/**
 * Microsoft Entra ID for Azure OpenAI and Azure AI Foundry: the method is named, never guessed from the environment.
 * Fields left out are read from the variables Azure's own SDKs read (AZURE_TENANT_ID, AZURE_CLIENT_ID, ...).
 */
export const entraAuthSchema = z
  .strictObject({
    type: z.literal('entra'),
    credential: z
      .enum(['client_secret', 'client_certificate', 'workload_identity', 'managed_identity'])
      .describe('`client_secret`: an app registration\'s secret; `client_certificate`: its certificate (a PEM file with the key); `workload_identity`: AKS workload identity (a federated token file); `managed_identity`: the host\'s managed identity (IMDS, or App Service\'s IDENTITY_ENDPOINT).'),
    tenant_id: z.string().regex(/^[A-Za-z0-9.-]{1,100}$/, 'a tenant id (GUID) or domain').optional().describe('Directory (tenant) id; default AZURE_TENANT_ID.'),
    client_id: z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'an application (client) id').optional().describe('Application (client) id; default AZURE_CLIENT_ID. For managed_identity: a user-assigned identity (else the system-assigned one).'),
    resource_id: z
      .string()
      .regex(/^\/subscriptions\/[^/?#\s]+\/resourcegroups\/[^/?#\s]+\/providers\/microsoft\.managedidentity\/userassignedidentities\/[^/?#\s]+$/i, 'a user-assigned identity\'s resource id (/subscriptions/.../providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>)')
      .optional()
      .describe('For managed_identity: a user-assigned identity named by its Azure resource id, instead of client_id.'),
    object_id: z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'an object (principal) id').optional().describe('For managed_identity: a user-assigned identity named by its object (principal) id, instead of client_id.'),
    client_secret: keyValue.optional().describe('For client_secret: the secret, or `env:NAME` / `file:/path` (in the config file only); default AZURE_CLIENT_SECRET. Masked like api_key.'),
    certificate_file: z.string().min(1).max(1000).optional().describe('For client_certificate: a PEM file holding the RSA private key and its certificate, read at each token fetch (so a renewed one is used); default AZURE_CLIENT_CERTIFICATE_PATH.'),
    federated_token_file: z.string().min(1).max(1000).optional().describe('For workload_identity: the projected token file, re-read at each token fetch; default AZURE_FEDERATED_TOKEN_FILE.'),
    authority_host: secureUrl().optional().describe('The Entra authority for a sovereign cloud (e.g. https://login.microsoftonline.us); default AZURE_AUTHORITY_HOST, else the cloud of a base_url on .azure.us (https://login.microsoftonline.us) or .azure.cn (https://login.chinacloudapi.cn), else https://login.microsoftonline.com.'),
    scope: z.string().min(1).max(300).optional().describe('The token scope; default that cloud\'s: https://cognitiveservices.azure.us/.default for a base_url or authority in Azure Government, .azure.cn in Azure China, else https://cognitiveservices.azure.com/.default.'),
  });

/**
 * AWS's default credential chain for Bedrock, asked for by name (a Bedrock provider without any key uses it anyway):
 * environment, SSO, ~/.aws config and credentials, credential_process, web identity (IRSA), container endpoint (ECS,
 * EKS Pod Identity), EC2 instance metadata. A profile is a name, never a secret.
 */
export const awsAuthSchema = z.strictObject({
  type: z.literal('aws'),
  profile: z
    .string()
    .regex(/^[^\s[\]#;]{1,128}$/, 'a profile name of ~/.aws/config (no spaces, brackets, # or ;)')
    .optional()
    .describe('A profile of ~/.aws/config (SSO, credential_process, role_arn with source_profile or credential_source); default AWS_PROFILE, else the chain without a profile.'),
});

export const providerSchema = z.strictObject({
  type: z.string().min(1).optional().describe('Vendor / wire format, e.g. `openai`, `groq`; defaults to the provider name.'),
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  api_key: keyValue.optional().describe('Shorthand for a single key; same forms as keys[].value.'),
  keys: z.array(providerKeySchema).optional(),
  headers: z
    .record(z.string().regex(HEADER_NAME, 'is not a valid HTTP header name'), headerValue)
    .optional()
    .describe('Extra headers sent upstream on every request; a value may be `env:NAME` or `file:/path` (in the config file only, not through the API).'),
  timeouts: timeoutsSchema.optional(),
  max_response_bytes: maxResponseBytes().describe('This provider\'s own `settings.max_response_bytes`.'),
  models: z.array(z.string().min(1)).optional().describe('Models to list in /v1/models besides the catalogue.'),
  region: z.string().min(1).optional().describe('Cloud region: AWS region for `bedrock`, location for `vertex` (e.g. `us-central1`).'),
  project: z.string().min(1).optional().describe('Google Cloud project for `vertex`. When not set: GOOGLE_CLOUD_PROJECT, then GCLOUD_PROJECT (for the provider named `vertex`), else the credential\'s `project_id` or `quota_project_id`, else the metadata server\'s `project-id`.'),
  claude_models: z
    .array(z.string().min(1))
    .optional()
    .describe(
      'For `bedrock`: model ids or ARNs that serve Claude without naming it (application inference profiles, provisioned throughput), called as Claude as `anthropic.claude-…` ids are: an Anthropic client\'s own body through InvokeModel, Claude\'s reasoning settings through Converse.',
    ),
  api_version: z
    .string()
    .min(1)
    .optional()
    .describe('API version (the `api-version` query parameter) for `azure`, kept as written; none calls Azure OpenAI\'s v1 API (`/openai/v1/`). For `azure-ai`, default `2024-05-01-preview`.'),
  extra_parameters: z
    .enum(['drop', 'pass-through', 'error'])
    .optional()
    .describe('For `azure-ai`: what the model inference API does with request fields outside its spec (its `extra-parameters` header): `drop` them (default), `pass-through` them to the model (a model\'s own options, such as Mistral\'s `safe_prompt`), or refuse the request (`error`).'),
  token_url: secureUrl()
    .optional()
    .describe('OAuth token endpoint for `vertex` (https; http only on a loopback host); defaults to the service account\'s `token_uri`.'),
  auth: z
    .discriminatedUnion('type', [entraAuthSchema, awsAuthSchema])
    .optional()
    .describe(
      'Instead of an API key. For `azure` and `azure-ai`, Microsoft Entra ID: `{type: entra, credential: client_secret | client_certificate | workload_identity | managed_identity, ...}`. For `bedrock`, AWS\'s default credential chain (an IAM role): `{type: aws, profile?: name}`.',
    ),
  prices: z
    .record(z.string().min(1), priceSchema)
    .optional()
    .describe('Prices by model name, overriding the catalogue; the entry "*" prices every model the catalogue does not know.'),
});

const modelRef = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]*\/.+/, 'expected "<provider>/<model>"');

export const retrySchema = z.strictObject({
  max_attempts: z
    .number()
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe('Upstream calls per request, all targets and fallbacks together. Default: 3, or the number of targets and fallbacks when larger.'),
  initial_delay_ms: ms().nonnegative().optional().describe('Backoff base before calling a target again (default 100); grows x2 per retry, with full jitter.'),
  max_delay_ms: ms().nonnegative().optional().describe('Longest backoff between retries (default 5000); an upstream retry-after is honoured beyond it up to the deadline.'),
  deadline_ms: ms().positive().optional().describe('No new attempt starts after this long since the first upstream attempt began (default 60000).'),
});

export const breakerSchema = z.strictObject({
  enabled: z.boolean().optional().describe('Circuit breakers on this route\'s targets (default true).'),
  consecutive_failures: count().optional().describe('Failures in a row that open the breaker (default 5).'),
  failure_rate: z.number().gt(0).max(1).optional().describe('Share of failed calls in the window that opens the breaker (default 0.5).'),
  window_ms: ms().positive().optional().describe('Window for the failure rate (default 30000).'),
  min_requests: count().optional().describe('Calls in the window before the failure rate counts (default 10).'),
  cooldown_ms: ms().positive().optional().describe('How long an open breaker waits before trial calls (default 30000).'),
  half_open_requests: count().optional().describe('Trial calls let through at once when half-open (default 1).'),
});

export const routingPolicySchema = z.strictObject({
  retry: retrySchema.optional(),
  breaker: breakerSchema.optional(),
  adaptive: z.boolean().optional().describe('Scale target weights by observed success, latency and capacity (default true).'),
  fallback_on_client_errors: z
    .boolean()
    .optional()
    .describe('Also move to the next target on non-retryable upstream 4xx (bad request, auth); by default they go straight back to the client.'),
});

const cacheModeSchema = z
  .enum(['off', 'shadow', 'on'])
  .describe('`off`: no caching; `shadow`: look up and record what would have hit, but answer from the provider; `on`: answer hits from the cache.');
const cacheScopeSchema = z
  .enum(['team', 'key', 'global'])
  .describe('Whose requests share answers: the same team (default; keys without a team share with nobody else), the same key, or everyone. Always also separated by model or route, system prompt and tools.');
const cacheThresholdSchema = z
  .number()
  .min(0.5)
  .max(1)
  .describe('Cosine similarity at or above which a stored question counts as the same one (it must also pass the lexical check: no differing entity, number or negation).');

/** The cache fields a route, a virtual key or a team may override. */
export const cachePolicySchema = z.strictObject({
  mode: cacheModeSchema.optional(),
  ttl_seconds: z.number().int().positive().max(31_536_000).optional().describe('How long an answer stays served (default 3600).'),
  scope: cacheScopeSchema.optional(),
  cache_sampled: z
    .boolean()
    .optional()
    .describe('Also cache requests with temperature > 0 or top_p < 1 (default false: such a client asked for varied answers). Requests with n > 1 are never cached.'),
  semantic: z
    .strictObject({
      enabled: z.boolean().optional().describe('Look up paraphrases too, not only the exact same request (default true).'),
      threshold: cacheThresholdSchema.optional(),
    })
    .optional(),
});

export const cacheSchema = z.strictObject({
  ...cachePolicySchema.shape,
  max_entries: z.number().int().positive().max(10_000_000).optional().describe('Most answers kept; the least recently used go first (default 100000).'),
  max_bytes: z
    .number()
    .int()
    .min(1_048_576)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('Most bytes the stored answers (and their indexes) may take in the data directory; the least recently used go first past it (default: no limit but max_entries; at least 1 MiB).'),
  semantic: z
    .strictObject({
      enabled: z.boolean().optional().describe('Look up paraphrases too, not only the exact same request (default true).'),
      threshold: cacheThresholdSchema.optional(),
      embedder: z
        .string()
        .regex(/^(use-lite|onnx:[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)?|[a-z0-9][a-z0-9_-]*\/[^\s]{1,200})$/, 'use-lite, onnx:<model folder> or <provider>/<embeddings model>')
        .optional()
        .describe(
          'The sentence embedder: `use-lite` (Universal Sentence Encoder lite, built in, the default), `onnx:<model>` (an ONNX sentence model such as all-MiniLM-L6-v2 placed in `models_dir/<model>/`, run locally), or `<provider>/<model>` (a provider\'s embeddings endpoint, called through tollgate\'s routing). Changing it starts a new semantic index; the default threshold is calibrated for use-lite.',
        ),
      models_dir: z.string().min(1).max(1000).optional().describe('Folder of ONNX sentence models for `onnx:<model>` (default `<data_dir>/models`).'),
    })
    .optional(),
});

/**
 * Whether a name can key a section of the config: not a member every plain object has (`constructor`, `toString`),
 * which a lookup by name would find when the entry is absent, nor one a merge patch drops (`prototype`).
 */
function notObjectMember(name: string): boolean {
  return !(name in Object.prototype) && name !== 'prototype';
}
const RESERVED_NAME = 'this name is reserved (every JavaScript object has a property of that name); choose another';

const mcpServerNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/, 'letters, digits and `-` (no `_`: tool names are `<server>__<tool>`), at most 63')
  .refine(notObjectMember, RESERVED_NAME);

const maxAnswerBytes = z
  .number()
  .int()
  .min(1024)
  .max(1_073_741_824)
  .optional()
  .describe('The most of one answer of the server tollgate reads; a tool call answered with more fails with a tool error, the rest unread (default mcp.max_answer_bytes).');

export const mcpServerSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('stdio'),
    command: z.string().min(1).max(1000).describe('The program tollgate starts and speaks MCP with over stdin/stdout.'),
    args: z.array(z.string().max(4000)).max(100).optional(),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(10_000)).optional().describe('Extra environment variables; values may be `env:NAME` or `file:/path` in the config file.'),
    cwd: z.string().min(1).max(1000).optional(),
    disabled: z.boolean().optional(),
    max_answer_bytes: maxAnswerBytes,
  }),
  z.strictObject({
    type: z.literal('http'),
    url: z.url({ protocol: /^https?$/ }).describe('The server\'s streamable HTTP endpoint.'),
    headers: z
      .record(z.string().regex(HEADER_NAME, 'is not a valid HTTP header name'), headerValue)
      .optional()
      .describe('Sent with every request to the server; a value may be `env:NAME` or `file:/path` in the config file, masked in API answers.'),
    token: z.string().min(1).max(10_000).optional().describe('Sent as `Authorization: Bearer <token>`; `env:NAME` or `file:/path` in the config file, masked in API answers.'),
    disabled: z.boolean().optional(),
    max_answer_bytes: maxAnswerBytes,
  }),
]);

/** MCP for a route's, a team's or a key's requests. */
export const mcpPolicySchema = z.strictObject({
  servers: z.array(mcpServerNameSchema).max(50).optional().describe('Servers whose tools are added to every request (besides those a request names in `x-tollgate-mcp`).'),
  allow: z
    .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,62}(__([A-Za-z0-9_.-]{1,128}|\*))?$/, '`server`, `server__tool` or `server__*`'))
    .max(500)
    .optional()
    .describe('The servers and tools these requests may use (`server`, `server__tool`, `server__*`); every server when absent.'),
  mode: z.enum(['client', 'auto']).optional().describe('`client` (default): tool calls go back to the client; `auto`: tollgate runs MCP tool calls and calls the model again.'),
  tool_calls_per_minute: count().optional().describe('Most MCP tool calls per minute (keys and teams).'),
});

export const mcpSchema = z.strictObject({
  servers: z.record(mcpServerNameSchema, mcpServerSchema).optional().describe('MCP servers by name.'),
  call_timeout_ms: ms().positive().optional().describe('Longest a tool call may take; past it the model gets a tool error (default 30000).'),
  max_result_bytes: z.number().int().positive().max(16_777_216).optional().describe('A tool result is cut to this many bytes (default 65536).'),
  max_answer_bytes: maxAnswerBytes.describe('The most of one answer of an MCP server tollgate reads, for servers without their own (default 10485760); a tool call answered with more fails.'),
  agent: z
    .strictObject({
      max_steps: z.number().int().positive().max(50).optional().describe('Most model turns in agent mode (default 5).'),
      time_budget_ms: ms().positive().optional().describe('Longest an agent-mode request may run its turns and tools (default 120000).'),
    })
    .optional(),
});

/** A moderation check delegated to a model through tollgate's own routing (a small chat model and a classification prompt). */
const moderationRuleSchema = z.strictObject({
  ...guardrailRuleBase,
  kind: z.literal('moderation'),
  action: z.enum(['block', 'flag']).describe('`block` refuses the request or withholds the answer; `flag` only reports it.'),
  applies_to: z.enum(['input', 'output', 'both']).optional().describe('Which side to check (default input). On a stream, output moderation holds the answer until it is checked.'),
  model: z.string().min(1).max(300).describe('The route or `<provider>/<model>` that classifies, called through tollgate like any request.'),
  categories: z.array(z.string().min(1).max(100)).min(1).max(30).optional().describe('What counts as unsafe, named to the classifier (default: hate, harassment, violence, self-harm, sexual content involving minors, illegal activity).'),
  timeout_ms: ms().positive().optional().describe('Longest wait for the classifier (default 5000).'),
  on_error: z.enum(['allow', 'block']).optional().describe('When the classifier fails or times out: `allow` (fail open, the default) or `block` (fail closed).'),
  max_chars: z.number().int().positive().max(200_000).optional().describe('Of the text, at most this many characters are sent to the classifier (default 8000, the end kept).'),
});

/** An answer to a request whose `response_format` asks for a JSON schema must be JSON valid against it. */
const jsonSchemaRuleSchema = z.strictObject({
  ...guardrailRuleBase,
  kind: z.literal('json_schema'),
  action: z.enum(['block', 'flag']).describe('`block` withholds an invalid answer (content_filter, or an error by setting); `flag` only reports it.'),
  applies_to: z.literal('output').optional().describe('Always the answer.'),
});

export const guardrailConfigRuleSchema = z.discriminatedUnion('kind', [...guardrailRuleSchema.options, moderationRuleSchema, jsonSchemaRuleSchema]);

const guardrailRuleList = z
  .array(guardrailConfigRuleSchema)
  .max(200)
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    rules.forEach((rule, index) => {
      if (seen.has(rule.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate rule name ${JSON.stringify(rule.name)}` });
      seen.add(rule.name);
    });
  });

const outputBlockSchema = z
  .enum(['content_filter', 'error'])
  .describe('A blocked answer ends with `finish_reason: content_filter` and its text withheld (default), or fails with a `guardrail_blocked` error.');

/** What a route, a virtual key or a team changes of the guardrails above it. */
export const guardrailsOverrideSchema = z.strictObject({
  rules: guardrailRuleList.optional().describe('Rules added for these requests, after those above.'),
  skip: z.array(z.string().min(1).max(100)).max(200).optional().describe('Names of rules from above (top level, route, team) not applied to these requests.'),
  output_block: outputBlockSchema.optional(),
});

export const guardrailsSchema = z.strictObject({
  rules: guardrailRuleList.optional().describe('Rules every request is checked with, in order.'),
  output_block: outputBlockSchema.optional(),
  look_behind_chars: z
    .number()
    .int()
    .min(16)
    .max(16_384)
    .optional()
    .describe('Characters a stream holds back so a match split across chunks is caught whole (default: what the rules need, at most 256).'),
});

export const routeSchema = z.strictObject({
  targets: z
    .array(z.strictObject({ model: modelRef, weight: weight().default(1) }))
    .min(1)
    .describe('Weighted targets; one is picked per request in proportion to its weight.'),
  fallbacks: z
    .array(z.string().min(1))
    .default([])
    .describe('Tried in order when the picked target fails: `<provider>/<model>` names or other route names.'),
  price: priceSchema.optional().describe('Price of requests made through this route when the catalogue does not know the model.'),
  plugins: z
    .array(z.string().min(1).max(64))
    .max(64)
    .optional()
    .describe('Plugins (configured with `apply: listed`) that run for requests this route serves, besides those that apply to all.'),
  cache: cachePolicySchema.optional().describe('Cache settings for requests this route serves, over the top-level `cache`.'),
  guardrails: guardrailsOverrideSchema.optional().describe('Guardrail rules added or skipped for requests this route serves.'),
  mcp: mcpPolicySchema.optional().describe('MCP tools for requests this route serves.'),
  ...routingPolicySchema.shape,
});

const percent = z.number().min(0).max(100);

export const routingRuleSchema = z.strictObject({
  // Sent in the x-tollgate-routing-rule header of each answer the rule routes: a name Node refuses there made each a 500.
  name: z
    .string()
    .min(1)
    .max(100)
    .refine((value) => !hasIllegalHeaderChars(value), {
      message: 'is sent in the x-tollgate-routing-rule header and holds a character not allowed in an HTTP header (CR, LF, NUL, another control character or one above U+00FF)',
    })
    .optional(),
  when: z
    .strictObject({
      operation: z
        .enum(['chat', 'embeddings'])
        .optional()
        .describe("The kind of request the rule is for: 'chat' (the default, so a rule without it leaves embeddings alone) or 'embeddings'."),
      model: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional().describe('Requested model names; `*` patterns allowed.'),
      key: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional().describe('Virtual key ids or names.'),
      team: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional().describe('Team ids or names.'),
      metadata: z
        .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
        .optional()
        .describe('Every entry must equal the request\'s `metadata` (or, failing that, the key\'s metadata).'),
      estimated_tokens_gte: z.number().int().nonnegative().optional().describe('Prompt tokens (counted by tokenizer) at least this.'),
      estimated_tokens_lt: z.number().int().positive().optional().describe('Prompt tokens below this.'),
      key_budget_used_pct_gte: percent.optional().describe("The key's budget used in this period, in percent, at least this."),
      team_budget_used_pct_gte: percent.optional().describe("The team's budget used in this period, in percent, at least this."),
      target_rps_gte: z
        .strictObject({ target: modelRef, rps: z.number().nonnegative() })
        .optional()
        .describe('A target (`<provider>/<model>`) currently serves at least this many requests per second (10 s average).'),
    })
    .describe('All conditions must hold; an empty `when` always matches.'),
  route_to: z.string().min(1).describe('The route name or `<provider>/<model>` the request goes to instead.'),
});

/** How outbound calls leave the machine; the operator's (config file) alone, since it reroutes every call and reads a file. */
const networkSchema = z.strictObject({
  proxy: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .optional()
    .describe(
      'Proxy for every outbound HTTP(S) call (providers, the OTLP collector, alert webhooks, MCP servers), e.g. http://proxy.internal:3128; tunnelled with HTTP CONNECT. Overrides HTTPS_PROXY and HTTP_PROXY. A `user:password@` in it is sent as Proxy-Authorization.',
    ),
  no_proxy: z
    .array(z.string().regex(/^(\*|\.?[A-Za-z0-9_[\]:.-]{1,253})$/, 'a host name, `.domain` (the domain and its subdomains), an IP address, `host:port`, or `*`'))
    .max(256)
    .optional()
    .describe('Destinations reached without the proxy: host names, `.domain` suffixes, IP addresses, `host:port`, or `*` for all. Overrides NO_PROXY.'),
  ca_file: z
    .string()
    .min(1)
    .max(4096)
    .optional()
    .describe(
      'A PEM file of CA certificates trusted for outbound TLS besides the default roots (and NODE_EXTRA_CA_CERTS): a private CA of upstreams, the collector, the proxy or the SMTP relay. Read when the config is applied.',
    ),
});

/** The operator log's levels (pino's), for `settings.log_level` and `LOG_LEVEL`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** The headers a trusted proxy may name the client in (`settings.client_ip_header`), lower-case as Node.js gives them. */
export const CLIENT_IP_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'] as const satisfies ReadonlyArray<ClientIpHeader>;

export const settingsSchema = z.strictObject({
  host: z.string().min(1).optional(),
  port: z.number().int().min(0).max(65535).optional(),
  data_dir: z.string().min(1).optional(),
  max_body_bytes: z.number().int().positive().max(MAX_TIMER_MS).optional().describe('Largest accepted request body.'),
  upstream_timeouts: timeoutsSchema.optional(),
  max_response_bytes: maxResponseBytes().describe(
    'Largest upstream answer tollgate reads: a whole non-streamed body, or one event of a stream (default 33554432, 32 MiB). Past it the request fails with 502 and the upstream connection is closed.',
  ),
  shutdown_grace_ms: ms().nonnegative().optional().describe('How long in-flight requests may run after SIGTERM.'),
  stream_keepalive_ms: ms()
    .nonnegative()
    .optional()
    .describe(
      'While a streamed answer is silent this long (a reasoning model thinking), a keep-alive goes to the client so reverse proxies and load balancers do not cut it as idle: `event: ping` on /anthropic, an SSE comment (`: keep-alive`) on the other routes. 0 turns it off (default 15000).',
    ),
  request_timeout_ms: ms()
    .positive()
    .optional()
    .describe('How long a client may take to send a whole request, headers and body; past it the answer is 408 and the connection closes. Answers, streamed or not, are not limited by it. Applied at start only (default 60000).'),
  headers_timeout_ms: ms()
    .positive()
    .optional()
    .describe('How long a client may take to send the request headers (at most `request_timeout_ms`); past it the answer is 408 and the connection closes. Applied at start only (default 30000).'),
  log_level: z.enum(LOG_LEVELS).optional(),
  log_retention_days: z.number().int().positive().max(36_500).optional().describe('How long request-log entries are kept, in days (default 30); older ones are deleted by a sweep every few minutes. Spend totals are kept regardless.'),
  log_max_entries: z.number().int().positive().max(1_000_000_000).optional().describe('Most request-log entries kept; the oldest beyond it are deleted by the same sweep (default: no limit).'),
  log_max_bytes: z.number().int().min(65_536).max(Number.MAX_SAFE_INTEGER).optional().describe('Most bytes the request log takes in the store (its entries, kept bodies and indexes); the oldest beyond it are deleted by the same sweep (default: no limit).'),
  response_retention_days: z.number().int().positive().max(36_500).optional().describe('How long the Responses API answers tollgate keeps (store not false, for previous_response_id and GET /v1/responses/{id}) are kept, in days (default 30, as OpenAI keeps them); a sweep every few minutes deletes older ones.'),
  response_max_entries: z.number().int().positive().max(1_000_000_000).optional().describe('Most Responses API answers kept (default 100000); those closest to expiry beyond it are deleted by the same sweep.'),
  response_max_bytes: z.number().int().min(1_048_576, 'at least 1048576 bytes (1 MiB)').max(Number.MAX_SAFE_INTEGER).optional().describe('Most bytes the stored Responses API answers take in the store (default 1073741824, 1 GiB); once they take more, a sweep in the background deletes the oldest (those closest to expiry) until they fit.'),
  require_virtual_key: z.boolean().optional().describe('Refuse requests without a virtual key (401).'),
  anonymous_access: z
    .enum(['loopback', 'any'])
    .optional()
    .describe(
      'Who may call models without a virtual key (with the operator\'s provider keys): `loopback` (default) serves only clients on this machine and answers others 401; `any` serves everyone who can reach the port.',
    ),
  trusted_proxies: z
    .array(z.union([z.ipv4(), z.ipv6()]))
    .max(64)
    .optional()
    .describe(
      'Addresses of reverse proxies whose X-Forwarded-For names the real client. Without it the socket peer is the client, so behind a proxy on this host every client counts as local.',
    ),
  client_ip_header: z
    .enum(CLIENT_IP_HEADERS)
    .optional()
    .describe(
      'The one header the trusted proxies set to name the client (as nginx\'s `real_ip_header`): `x-forwarded-for`, `forwarded` (RFC 7239) or `x-real-ip`. Then only it is read and the others, which such a proxy passes through from the client, are ignored. Default: each is read, and a client counts as local only if every one present names a local address.',
    ),
  forward_headers: z
    .array(
      z
        .string()
        .regex(/^[a-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'header names are lower-case tokens (letters, digits, - and the other HTTP token characters)')
        .refine((name) => !NEVER_FORWARDED.has(name), 'this header is never forwarded (a credential, or one that describes this hop only)'),
    )
    .max(64)
    .optional()
    .describe(
      'Client request headers forwarded to every provider, beyond those forwarded to their own vendor (OpenAI-Organization, OpenAI-Project, OpenAI-Beta, Idempotency-Key to OpenAI; anthropic-version, anthropic-beta from /anthropic to Anthropic). Credentials and hop-by-hop headers are never forwarded.',
    ),
  upstream_rate_limit_headers: z
    .boolean()
    .optional()
    .describe(
      "Pass the provider's rate-limit headers to clients (default true): OpenAI's `x-ratelimit-*` on the OpenAI-format routes, Anthropic's `anthropic-ratelimit-*` on /anthropic, each translated into the route's style when the provider writes the other. A virtual key's own limits go out instead of the provider's of the same unit. False keeps the provider account's limits to the operator.",
    ),
  routing: routingPolicySchema.optional().describe('Defaults for every route and for direct `<provider>/<model>` requests.'),
  metrics: z
    .strictObject({
      enabled: z.boolean().optional().describe('Serve Prometheus metrics at GET /metrics (default true).'),
      bearer_token: z
        .string()
        .min(1)
        .max(1000)
        .optional()
        .describe('Require `Authorization: Bearer <token>` on /metrics; `env:NAME` or `file:/path` in the config file. Default: TOLLGATE_METRICS_TOKEN, else open like other exporters.'),
    })
    .optional(),
  tracing: z
    .strictObject({
      enabled: z
        .boolean()
        .optional()
        .describe('false turns tracing off whatever endpoint the config file or the environment names (default true: on whenever an endpoint is set).'),
      endpoint: z
        .url({ protocol: /^https?$/ })
        .optional()
        .describe('OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces). Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces; tracing is off when none is set.'),
      headers: z.record(z.string().min(1).max(100), z.string().max(4000)).optional().describe('Headers sent with every export (e.g. a collector token); a value may be `env:NAME` or `file:/path` in the config file. Default: OTEL_EXPORTER_OTLP_HEADERS.'),
      service_name: z.string().min(1).max(200).optional().describe('`service.name` of the spans (default OTEL_SERVICE_NAME, else tollgate).'),
      sample_ratio: z.number().min(0).max(1).optional().describe('Share of new traces sampled, 0 to 1 (default OTEL_TRACES_SAMPLER_ARG, else 1). A sampled incoming traceparent is always followed.'),
      protocol: z
        .enum(['http/protobuf', 'http/json'])
        .optional()
        .describe('OTLP encoding (default OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf).'),
      compression: z
        .enum(['none', 'gzip'])
        .optional()
        .describe('gzip compresses every export (Content-Encoding: gzip), for a collector across a network that bills or limits bytes (default OTEL_EXPORTER_OTLP_TRACES_COMPRESSION or OTEL_EXPORTER_OTLP_COMPRESSION, else none).'),
    })
    .optional(),
  log_bodies: z
    .strictObject({
      enabled: z.boolean().optional().describe('Keep request and response bodies in the request log (default false).'),
      max_bytes: z.number().int().min(256).max(1_048_576).optional().describe('Each body is cut to this many bytes (default 16384).'),
      redact: z
        .array(z.string().min(1).max(500))
        .max(64)
        .optional()
        .describe('Regular expressions whose matches are replaced by [REDACTED] in kept bodies, besides the built-in ones (API keys, bearer tokens, virtual keys).'),
    })
    .optional(),
  network: networkSchema
    .optional()
    .describe('Outbound proxy and extra trusted CAs; config file only (the API refuses it). Defaults: HTTPS_PROXY, HTTP_PROXY, NO_PROXY (or their lower-case forms). Applied live: the next outbound call uses them.'),
});

export const providerNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'provider names are lower-case letters, digits, - and _')
  .refine(notObjectMember, RESERVED_NAME);

export const routeNameSchema = z
  .string()
  .regex(/^(?=[^*]*\*?[^*]*$)[A-Za-z0-9*][A-Za-z0-9._:/*-]{0,199}$/, 'route names are letters, digits, . _ : / - and at most one * (a pattern)')
  .refine(notObjectMember, RESERVED_NAME);

/** A plugin's name: its stage name in the pipeline, used by placements and in errors. */
export const pluginNameSchema = z
  .string()
  .max(64)
  .regex(/^[a-z][a-z0-9-]*$/, 'plugin names are lower-case letters, digits and -, starting with a letter');

const pluginPlacementSchema = z.strictObject({
  after: z.string().min(1).max(64).optional().describe('The stage or plugin this one runs after (request side).'),
  before: z.string().min(1).max(64).optional().describe('The stage or plugin this one runs before (request side).'),
});

export const pluginEntrySchema = z
  .strictObject({
    name: pluginNameSchema.describe('The plugin\'s name in the pipeline (placements and errors use it).'),
    path: z
      .string()
      .min(1)
      .max(1000)
      .optional()
      .describe('A TypeScript or JavaScript file, or a folder with an index file, relative to the config file\'s folder (the working directory without one).'),
    package: z
      .string()
      .max(214)
      .regex(/^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/, 'an npm package name')
      .optional()
      .describe('An npm package, resolved from the config file\'s folder, then the working directory.'),
    options: z.unknown().optional().describe('Options for the plugin, validated by its own schema.'),
    placement: pluginPlacementSchema
      .optional()
      .describe('Where the plugin goes: after and/or before a stage (auth, rate-limit, route, spend, call) or another plugin. Default: the plugin\'s own, else just before call.'),
    optional: z.boolean().optional().describe('When the plugin fails or times out, skip it (reported) instead of failing the request.'),
    apply: z
      .enum(['all', 'listed'])
      .optional()
      .describe('`all` (default): every request; `listed`: only requests whose route, virtual key or team lists the plugin in its `plugins`.'),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .max(MAX_TIMER_MS)
      .optional()
      .describe('The longest the plugin may take before it calls the next stage or answers; none by default.'),
    init_timeout_ms: z
      .number()
      .int()
      .positive()
      .max(MAX_TIMER_MS)
      .optional()
      .describe('The longest loading the plugin and its init may take before the config change (or the start) naming it is refused (default 30000).'),
  })
  .refine((entry) => (entry.path === undefined) !== (entry.package === undefined), { message: 'give exactly one of path and package' });

export const pluginsSchema = z
  .array(pluginEntrySchema)
  .max(64)
  .refine((entries) => new Set(entries.map((entry) => entry.name)).size === entries.length, { message: 'plugin names must be unique' });

const alertRetrySchema = z.strictObject({
  max_attempts: z.number().int().min(1).max(50).optional().describe('Delivery attempts per notification, the first included (default 8).'),
  initial_delay_ms: ms().positive().optional().describe('Wait before the first retry (default 1000); doubles after each failed attempt.'),
  max_delay_ms: ms().positive().optional().describe('Longest wait between two attempts (default 300000, five minutes).'),
});

/** An incoming-webhook URL is the credential itself: checked as a URL once read, so a reference may stand for it. */
const secretUrl = (service: string) =>
  z
    .string()
    .min(1)
    .max(4096)
    .regex(/^\S+$/, 'holds whitespace')
    .describe(`The ${service} incoming-webhook URL. It is a credential: shown masked, stored sealed; \`env:NAME\` or \`file:/path\` in the config file.`);
const channelTimeout = () => ms().positive().optional().describe('Time allowed for one delivery attempt (default 10000).');
/** An address, bare or with a display name: `ops@example.com`, `Tollgate <alerts@example.com>`. */
const EMAIL_ADDRESS = /^(?:[^\s@<>"]+@[^\s@<>"]+|[^<>\r\n"]*<[^\s@<>"]+@[^\s@<>"]+>|"[^"\r\n]*"\s*<[^\s@<>"]+@[^\s@<>"]+>)$/;
const emailAddress = () => z.string().max(320).regex(EMAIL_ADDRESS, 'is not an email address (`name@example.com` or `Name <name@example.com>`)');

export const webhookChannelSchema = z.strictObject({
  type: z.literal('webhook'),
  url: z.url({ protocol: /^https?$/ }).describe('Where the alert is POSTed as JSON.'),
  secret: z
    .string()
    .min(1)
    .max(1000)
    .optional()
    .describe('Signs every delivery: `x-tollgate-signature: v1=<hex HMAC-SHA256 of timestamp + "." + body>`. `env:NAME` or `file:/path` in the config file.'),
  headers: z
    .record(z.string().regex(HEADER_NAME, 'is not a valid HTTP header name'), headerValue)
    .optional()
    .describe('Extra headers sent with every delivery (an authorization header, say; a value may be `env:NAME` or `file:/path` in the config file); `content-type`, `user-agent` and the `x-tollgate-*` headers are tollgate\'s own, in any spelling.'),
  timeout_ms: channelTimeout(),
  retry: alertRetrySchema.optional(),
});

const chatChannel = <T extends 'slack' | 'teams' | 'discord'>(type: T, service: string) =>
  z.strictObject({ type: z.literal(type), url: secretUrl(service), timeout_ms: channelTimeout(), retry: alertRetrySchema.optional() });

export const slackChannelSchema = chatChannel('slack', 'Slack');
export const teamsChannelSchema = chatChannel('teams', 'Microsoft Teams (Workflows or connector)');
export const discordChannelSchema = chatChannel('discord', 'Discord');

export const pagerDutyChannelSchema = z.strictObject({
  type: z.literal('pagerduty'),
  routing_key: z
    .string()
    .min(1)
    .max(4096)
    .describe('The Events API v2 integration\'s routing key. Shown masked, stored sealed; `env:NAME` or `file:/path` in the config file.'),
  url: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('The events endpoint (default `https://events.pagerduty.com/v2/enqueue`; `https://events.eu.pagerduty.com/v2/enqueue` for the EU service region).'),
  source: z.string().min(1).max(255).optional().describe('The event\'s `source`: where the problem is (default this machine\'s host name).'),
  timeout_ms: channelTimeout(),
  retry: alertRetrySchema.optional(),
});

export const emailChannelSchema = z.strictObject({
  type: z.literal('email'),
  host: z.string().min(1).max(255).regex(/^[A-Za-z0-9.:[\]_-]+$/, 'is not a host name or address').describe('The SMTP server.'),
  port: z.number().int().min(1).max(65_535).optional().describe('Default 465 with `secure`, else 587.'),
  secure: z.boolean().optional().describe('Implicit TLS from the first byte, as on port 465 (default false).'),
  starttls: z
    .enum(['required', 'opportunistic', 'off'])
    .optional()
    .describe('Without `secure`: `required` (default) refuses a server that does not upgrade with STARTTLS; `opportunistic` upgrades when offered; `off` never does.'),
  username: z.string().min(1).max(1000).optional().describe('SMTP AUTH user; with `password`.'),
  password: z
    .string()
    .min(1)
    .max(4096)
    .optional()
    .describe('SMTP AUTH password. Shown masked, stored sealed; `env:NAME` or `file:/path` in the config file.'),
  from: emailAddress().describe('The sender: `alerts@example.com` or `Tollgate <alerts@example.com>`.'),
  to: z.array(emailAddress()).min(1).max(50).describe('The recipients.'),
  subject_prefix: z.string().max(100).regex(/^[^\r\n]*$/, 'holds a line break').optional().describe('Starts every subject (default `[tollgate]`).'),
  tls_reject_unauthorized: z.boolean().optional().describe('Refuse a server certificate that does not verify (default true).'),
  timeout_ms: ms().positive().optional().describe('Time allowed for each step of one delivery attempt: connecting, the greeting, every answer (default 10000).'),
  retry: alertRetrySchema.optional(),
});

export const alertChannelSchema = z.discriminatedUnion('type', [
  webhookChannelSchema,
  slackChannelSchema,
  teamsChannelSchema,
  discordChannelSchema,
  pagerDutyChannelSchema,
  emailChannelSchema,
]);

const alertRuleBase = {
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, 'letters, digits, `_`, `.` and `-`, at most 100').describe('Unique among the rules; the `rule` of every notification.'),
  severity: z.enum(['info', 'warning', 'critical']).optional().describe('Passed to the channels (default `warning`).'),
  cooldown_ms: ms().nonnegative().optional().describe('After a firing notification, the same rule and subject fire again only this long later (default 600000, ten minutes).'),
  channels: z.array(z.string().min(1)).min(1).optional().describe('Channel names to deliver to; every channel when absent.'),
};
const alertProviders = z.array(z.string().min(1)).min(1).optional().describe('Only these providers; all when absent.');
const alertRoutes = z.array(z.string().min(1)).min(1).optional().describe('Only these routes (or direct model names); all when absent.');
const alertWindow = ms().positive().optional();
const alertMinRequests = count().optional();

export const alertRuleSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    ...alertRuleBase,
    kind: z.literal('budget'),
    thresholds: z
      .array(z.union([z.literal(50), z.literal(80), z.literal(100)]))
      .min(1)
      .optional()
      .describe('Which budget crossings alert, in percent of the budget: 50, 80, 100 (default all three).'),
    account: z.enum(['key', 'team']).optional().describe('Only key budgets or only team budgets; both when absent.'),
  }),
  z.strictObject({ ...alertRuleBase, kind: z.literal('breaker_opened'), providers: alertProviders }),
  z.strictObject({
    ...alertRuleBase,
    kind: z.literal('error_rate'),
    // Below 100: the rule fires when the rate is over its threshold, and no rate is over 100% (such a rule never fired).
    threshold_pct: z.number().min(0).lt(100, 'must be below 100 (the rule fires when the rate is over it)').describe('Fires when more than this percent of a provider\'s (or model\'s) upstream attempts in the window failed (0 to under 100).'),
    window_ms: alertWindow.describe('The window (default 300000, five minutes).'),
    min_requests: alertMinRequests.describe('Attempts in the window before the rate counts (default 10).'),
    providers: alertProviders,
    per: z.enum(['provider', 'model']).optional().describe('One alert per provider (default), or per target model `<provider>/<model>`.'),
  }),
  ...(['latency_p95', 'ttft_p95'] as const).map((kind) =>
    z.strictObject({
      ...alertRuleBase,
      kind: z.literal(kind),
      threshold_ms: z
        .number()
        .positive()
        .max(MAX_TIMER_MS)
        .describe(
          kind === 'latency_p95'
            ? 'Fires when the p95 duration of a provider\'s answered requests is over this.'
            : 'Fires when the p95 time to first token of a provider\'s streamed answers is over this.',
        ),
      window_ms: alertWindow.describe('The window the p95 is taken over (default 300000, five minutes).'),
      for_ms: ms().nonnegative().optional().describe('How long the p95 must stay over the threshold before the alert fires (default 60000).'),
      min_requests: alertMinRequests.describe('Answers in the window before the p95 counts (default 10).'),
      providers: alertProviders,
    }),
  ),
  z.strictObject({
    ...alertRuleBase,
    kind: z.literal('fallbacks_exhausted'),
    min_count: count().optional().describe('Fires when at least this many requests to a route failed after every target was tried, within the window (default 1).'),
    window_ms: alertWindow.describe('The window (default 300000, five minutes); the alert resolves when a whole window passes under min_count.'),
    routes: alertRoutes,
  }),
  z.strictObject({
    ...alertRuleBase,
    kind: z.literal('server_errors'),
    threshold_pct: z.number().min(0).lt(100, 'must be below 100 (the rule fires when the rate is over it)').describe('Fires when more than this percent of a route\'s requests in the window ended with a 5xx status (0 to under 100).'),
    window_ms: alertWindow.describe('The window (default 300000, five minutes).'),
    min_requests: alertMinRequests.describe('Requests in the window before the rate counts (default 10).'),
    routes: alertRoutes,
  }),
]);

export const alertsSchema = z.strictObject({
  channels: z
    .record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, `_` and `-`, at most 64').refine(notObjectMember, RESERVED_NAME), alertChannelSchema)
    .optional()
    .describe('Where notifications go, by name.'),
  rules: z
    .array(alertRuleSchema)
    .max(200)
    .refine((rules) => new Set(rules.map((rule) => rule.name)).size === rules.length, { message: 'rule names must be unique' })
    .optional(),
  max_queue: z.number().int().positive().max(1_000_000).optional().describe('Most notifications waiting for delivery (default 10000); past it a new one is recorded as failed.'),
});

/**
 * A whole config document, as the file holds it and as the API layer stores it. Later sections (virtual
 * keys, cache, alerts, guardrails, plugins) are added here as siblings.
 */
export const configFileSchema = z.strictObject({
  settings: settingsSchema.optional(),
  providers: z.record(providerNameSchema, providerSchema).optional(),
  routes: z.record(routeNameSchema, routeSchema).optional(),
  routing_rules: z
    .array(routingRuleSchema)
    .optional()
    .describe('Usage-based routing: the first rule whose conditions hold sends the request to its `route_to`.'),
  plugins: pluginsSchema
    .optional()
    .describe('Custom pipeline plugins, in order (see plugins/README.md). The API\'s list replaces the file\'s as a whole.'),
  cache: cacheSchema.optional().describe('The response cache (exact and semantic); off by default. Routes, virtual keys and teams may override it.'),
  mcp: mcpSchema.optional().describe('MCP servers whose tools models can use, and tollgate serves at /mcp.'),
  guardrails: guardrailsSchema
    .optional()
    .describe('Guardrails: rules that detect and block, redact or flag unsafe input and output, streams included. Routes, virtual keys and teams add and skip rules.'),
  alerts: alertsSchema
    .optional()
    .describe('Alert rules over gateway events, and the channels they are delivered to (signed webhooks, Slack, Microsoft Teams, Discord, PagerDuty, email). The API\'s section replaces the file\'s as a whole.'),
});

export type ConfigFile = z.infer<typeof configFileSchema>;
export type ConfigDocument = ConfigFile;
/** A document as written, before the schema fills in defaults (what embedders and tests pass). */
export type ConfigInput = z.input<typeof configFileSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type ProviderKeyConfig = z.infer<typeof providerKeySchema>;
export type RouteConfig = z.infer<typeof routeSchema>;

/** Renders the first schema violations as one readable line naming the fields. */
export function describeIssues(error: z.ZodError, schema?: z.ZodType): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      // A key of any size may come from an API body (a provider named with 100,000 characters): path and message
      // are quoted bounded, so the error does not echo the input whole.
      const path = issue.path.map((segment) => quoteInput(String(segment), 100)).join('.') || '(root)';
      return `${path}: ${quoteInput(issueMessage(issue, schema))}`;
    })
    .join('; ');
}

/**
 * An issue's message, and for a key the schema does not know, the known key it most likely meant
 * (`Unrecognized key: "tragets"; did you mean "targets"?`), looked up in `schema` at the issue's path.
 */
export function issueMessage(issue: z.core.$ZodIssue, schema?: z.ZodType): string {
  if (issue.code !== 'unrecognized_keys' || schema === undefined) return issue.message;
  const known = new Set(objectKeysAt(schema, issue.path, 0));
  const hints = issue.keys.flatMap((key) => {
    const meant = didYouMean(key, known);
    return meant === null ? [] : [{ key, meant }];
  });
  if (hints.length === 0) return issue.message;
  if (issue.keys.length === 1) return `${issue.message}; did you mean "${hints[0]?.meant}"?`;
  return `${issue.message}; did you mean ${hints.map((hint) => `"${hint.meant}" for "${hint.key}"`).join(', ')}?`;
}

/** What a schema's internals look like to `objectKeysAt` (zod 4's definitions, the fields it reads). */
interface WalkedDef {
  type: string;
  shape?: Record<string, z.core.$ZodType>;
  catchall?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  element?: z.core.$ZodType;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  out?: z.core.$ZodType;
  left?: z.core.$ZodType;
  right?: z.core.$ZodType;
  options?: readonly z.core.$ZodType[];
  getter?: () => z.core.$ZodType;
}

/** The keys of every object schema found at `path` (all of a union's options), for suggesting a mistyped key. */
function objectKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[], depth: number): string[] {
  if (depth > 64) return [];
  const def = schema._zod.def as unknown as WalkedDef;
  const [head, ...rest] = path;
  const walk = (next: z.core.$ZodType | undefined, along: readonly PropertyKey[]): string[] => (next ? objectKeysAt(next, along, depth + 1) : []);
  switch (def.type) {
    case 'object':
      if (head === undefined) return Object.keys(def.shape ?? {});
      return walk(def.shape?.[String(head)] ?? def.catchall, rest);
    case 'record':
      return head === undefined ? [] : walk(def.valueType, rest);
    case 'array':
      return head === undefined ? [] : walk(def.element, rest);
    case 'union':
      return (def.options ?? []).flatMap((option) => walk(option, path));
    case 'intersection':
      return [...walk(def.left, path), ...walk(def.right, path)];
    case 'pipe':
      return [...walk(def.in, path), ...walk(def.out, path)];
    case 'lazy':
      return walk(def.getter?.(), path);
    default:
      return def.innerType ? walk(def.innerType, path) : [];
  }
}

/**
 * The shapes in src/core/config.ts are written by hand (core imports nothing of the project); these lines make the
 * compiler check that each schema produces exactly its core shape, so the two cannot drift apart.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
function agrees<T extends true>(): T | undefined {
  return undefined;
}
agrees<Same<z.infer<typeof priceSchema>, PriceConfig>>();
agrees<Same<z.infer<typeof routingPolicySchema>, RoutingPolicyConfig>>();
agrees<Same<z.infer<typeof routingRuleSchema>, RoutingRuleConfig>>();
agrees<Same<z.infer<typeof pluginEntrySchema>, PluginEntryConfig>>();
agrees<Same<z.infer<typeof cachePolicySchema>, CachePolicyConfig>>();
agrees<Same<z.infer<typeof cacheSchema>, CacheConfig>>();
agrees<Same<z.infer<typeof alertsSchema>, AlertsConfig>>();
