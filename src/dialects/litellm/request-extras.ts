import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

/**
 * The fields a LiteLLM client writes for the LiteLLM proxy itself, never for a provider: LiteLLM's own call
 * parameters (`all_litellm_params` in litellm/types/utils.py) and the proxy's (`litellm_session_id`,
 * `guardrails`, `spend_logs_metadata`, ...). The LiteLLM proxy reads them and sends none upstream; forwarded,
 * they make a provider that refuses unknown fields (Mistral's 422 extra_forbidden, Groq's 400) fail the request.
 * `user` is OpenAI's own field and stays; `fallbacks` is read by the chat route (see takeRequestFallbacks).
 */
const LITELLM_FIELDS: readonly string[] = [
  'litellm_metadata', 'litellm_trace_id', 'litellm_session_id', 'litellm_call_id', 'tags', 'spend_logs_metadata',
  'caching', 'cache', 'ttl', 'no-log', 'num_retries', 'max_retries', 'retry_policy', 'request_timeout', 'timeout',
  'stream_timeout', 'mock_timeout', 'mock_testing_fallbacks', 'context_window_fallbacks', 'context_window_fallback_dict',
  'disable_fallbacks', 'max_fallbacks', 'guardrails', 'drop_params', 'prompt_id', 'prompt_variables', 'custom_llm_provider',
  'api_base', 'base_url', 'api_key', 'api_version', 'extra_headers', 'headers', 'input_cost_per_token',
  'output_cost_per_token', 'model_list', 'proxy_server_request', 'preset_cache_key', 'base_model', 'region_name',
];

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
  for (const field of LITELLM_FIELDS) if (field in body) delete body[field];
  return metadata;
}
