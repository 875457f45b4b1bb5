import type { ChatCompletionRequest } from '../../core/canonical.js';
import { cannotTranslate, type DialectOptions } from './content.js';
import { invalidRequest } from './errors.js';
import { canonicalMessages } from './messages.js';
import type { MessagesRequest } from './parse-request.js';
import { isRecord } from '../../core/is-record.js';
import { canonicalThinking } from './thinking.js';
import { canonicalToolChoice, canonicalTools } from './tools.js';

/**
 * Anthropic's structured output as OpenAI's response_format: `output_config.format` (json_schema), or the deprecated
 * top-level `output_format` that older SDKs and raw clients still send (Anthropic takes either), so neither is lost.
 */
function responseFormat(request: MessagesRequest): Record<string, unknown> | undefined {
  const config = request.output_config;
  const [format, where] = isRecord(config) && isRecord(config.format) ? [config.format, 'output_config.format'] : [request.output_format, 'output_format'];
  if (!isRecord(format) || format.type !== 'json_schema') return undefined;
  if (!isRecord(format.schema)) throw invalidRequest(`${where}.schema`, 'Field required');
  return { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
}

/**
 * An Anthropic Messages request as the canonical (OpenAI chat-completions) request for `model`, the name the
 * pipeline routes on. `top_k` has no OpenAI counterpart: it rides on the request for the formats that take it and
 * is left out for the others (markers.ts); Anthropic-only fields that the request may not carry to the target
 * (service_tier, container, context_management) are left out. The MCP connector (`mcp_servers`) gives the model
 * tools Anthropic's API runs, so, like server tools, it cannot be translated.
 * A stream always asks for usage, which the route needs for Anthropic's message_delta.
 */
export function canonicalRequest(request: MessagesRequest, model: string, options: DialectOptions): ChatCompletionRequest {
  const out: ChatCompletionRequest = { model, messages: canonicalMessages(request.system, request.messages, options) };
  // OpenAI's current name for the limit: its reasoning models (o-series, gpt-5), the ones a thinking budget is
  // meant for, refuse the deprecated max_tokens; vendors that know only max_tokens get it renamed by their quirks.
  if (typeof request.max_tokens === 'number') out.max_completion_tokens = request.max_tokens;
  if (typeof request.temperature === 'number') out.temperature = request.temperature;
  if (typeof request.top_p === 'number') out.top_p = request.top_p;
  if (typeof request.top_k === 'number') out.top_k = request.top_k;
  const stops = request.stop_sequences;
  if (Array.isArray(stops) && stops.length > 0) out.stop = stops;
  const metadata = request.metadata;
  if (isRecord(metadata) && typeof metadata.user_id === 'string' && metadata.user_id !== '') out.user = metadata.user_id;
  const tools = canonicalTools(request.tools, options);
  // OpenAI refuses tool_choice and parallel_tool_calls without tools, so they travel only with tools; they are
  // checked whenever tools were sent, also when the lenient read left every one of them out (server tools).
  const choice = tools ? canonicalToolChoice(request.tool_choice) : {};
  if (tools && tools.length > 0) Object.assign(out, { tools }, choice);
  if (Array.isArray(request.mcp_servers) && request.mcp_servers.length > 0) {
    cannotTranslate(options, () => invalidRequest('mcp_servers', "The MCP connector (mcp_servers) runs inside Anthropic's API and cannot be translated by the gateway."));
  }
  Object.assign(out, canonicalThinking(request.thinking, request.output_config));
  const format = responseFormat(request);
  if (format) out.response_format = format;
  if (request.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}
