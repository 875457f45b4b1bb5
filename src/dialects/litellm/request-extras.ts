import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

/**
 * The fields a LiteLLM client writes for the LiteLLM proxy itself, never for a provider: LiteLLM's own call
 * parameters (`all_litellm_params` in litellm/types/utils.py, with its per-request logging callbacks'
 * `StandardCallbackDynamicParams` and custom pricing) and the proxy's (`litellm_session_id`, `guardrails`,
 * `user_config`, `mock_testing_*`, ...). The LiteLLM proxy reads them and sends none upstream; forwarded, they make a
 * provider that refuses unknown fields (Mistral's 422 extra_forbidden, Groq's 400) fail the request, and several
 * carry the client's secrets for others (a logging tool's key, Azure AD passwords, `user_config`'s provider keys),
 * which must not reach a provider. `user` is OpenAI's own field and stays; `fallbacks` is read by the chat route (see
 * takeRequestFallbacks). LiteLLM's generic Python-only names (`id`, `client`, `roles`, ...) are left out: no HTTP
 * client sends them to LiteLLM, and a provider may read a field so named.
 */
const LITELLM_FIELDS: ReadonlySet<string> = new Set([
  // Request tracking, retries, timeouts and routing, read by LiteLLM or its proxy.
  'litellm_metadata', 'litellm_trace_id', 'litellm_session_id', 'litellm_call_id', 'litellm_request_debug', 'tags', 'spend_logs_metadata',
  'caching', 'cache', 'ttl', 'no-log', 'num_retries', 'max_retries', 'retry_policy', 'retry_strategy', 'request_timeout', 'timeout',
  'stream_timeout', 'mock_timeout', 'mock_testing_fallbacks', 'mock_testing_context_fallbacks', 'mock_testing_content_policy_fallbacks',
  'mock_testing_rate_limit_error', 'context_window_fallbacks', 'context_window_fallback_dict', 'disable_fallbacks', 'max_fallbacks',
  'fallback_depth', 'guardrails', 'drop_params', 'additional_drop_params', 'allowed_openai_params', 'prompt_id', 'prompt_variables',
  'prompt_version', 'prompt_label', 'custom_llm_provider', 'model_list', 'user_config', 'proxy_server_request', 'secret_fields',
  'preset_cache_key', 'caching_groups', 'cache_key', 'base_model', 'region_name', 'allowed_model_region', 'model_info',
  'cooldown_time', 'max_budget', 'budget_duration', 'use_in_pass_through', 'use_litellm_proxy', 'merge_reasoning_content_in_choices',
  'ensure_alternating_roles', 'user_continue_message', 'assistant_continue_message', 'supports_system_message',
  'disable_add_transform_inline_image_block', 'litellm_proxy_rate_limit_response', 'provider_specific_header', 'shared_session',
  'search_tool_name',
  // Client-side credentials and where to use them: for LiteLLM to call with, never for the provider to read.
  'api_base', 'base_url', 'api_key', 'api_version', 'extra_headers', 'headers', 'litellm_credential_name',
  'configurable_clientside_auth_params', 'azure_ad_token_provider', 'tenant_id', 'client_id', 'client_secret', 'azure_username',
  'azure_password', 'azure_scope',
  // Per-request logging callbacks (StandardCallbackDynamicParams), which carry the logging tools' keys.
  'langfuse_public_key', 'langfuse_secret', 'langfuse_secret_key', 'langfuse_host', 'langfuse_prompt_version', 'gcs_bucket_name',
  'gcs_path_service_account', 'langsmith_api_key', 'langsmith_project', 'langsmith_base_url', 'langsmith_sampling_rate',
  'humanloop_api_key', 'arize_api_key', 'arize_space_key', 'arize_space_id', 'posthog_api_key', 'posthog_api_url',
  'turn_off_message_logging', 'litellm_disabled_callbacks',
  // Custom pricing, which tollgate takes from its catalog and config only.
  'input_cost_per_token', 'output_cost_per_token', 'input_cost_per_second', 'output_cost_per_second',
]);

/** LiteLLM's `metadata` object, also as the JSON text of one (as multipart and `extra_body` callers send it). */
function metadataObject(value: unknown): Record<string, unknown> | null {
  if (isRecord(value)) return value;
  if (typeof value !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return isRecord(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * Readies a `/litellm` request body the way the LiteLLM proxy reads it, in place, and returns its `metadata` for
 * tollgate's own use (routing rules' `when.metadata`, the request log's tags):
 * - `extra_body` (LiteLLM's completion parameter, which merges into the provider request) is merged in, the
 *   request's own top-level fields winning;
 * - `metadata` is the proxy's (LiteLLM sends it to no provider: BerriAI/litellm#12999, #8209, where OpenAI
 *   refused its non-string values), so it is taken off the request;
 * - LiteLLM's other own fields are dropped;
 * - `mock_response` (LiteLLM answers with it and calls no provider) is refused, since tollgate would call the
 *   provider, and charge for it, where the client expected no call at all.
 * `fallbacks` is left for the route (chat and embeddings alike) to read, see takeRequestFallbacks.
 */
export function takeLiteLLMFields(body: Record<string, unknown>): Record<string, unknown> | null {
  const extra = body.extra_body;
  if (extra !== undefined) {
    delete body.extra_body;
    if (isRecord(extra)) for (const [field, value] of Object.entries(extra)) if (!(field in body)) body[field] = value;
  }
  if (body.mock_response !== undefined && body.mock_response !== null) {
    throw gatewayError(
      'unsupported_parameter',
      "Unsupported parameter: 'mock_response' is a LiteLLM test feature; tollgate serves no mock answers and would call the provider instead, so the request was not sent.",
      { param: 'mock_response' },
    );
  }
  if ('mock_response' in body) delete body.mock_response;
  let metadata: Record<string, unknown> | null = null;
  if ('metadata' in body) {
    metadata = metadataObject(body.metadata);
    delete body.metadata;
  }
  metadata ??= metadataObject(body.litellm_metadata);
  // The body's few fields are looked up in the long list, not the list's in the body.
  for (const field of Object.keys(body)) if (LITELLM_FIELDS.has(field)) delete body[field];
  return metadata;
}
