import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import { gatewayError, type GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { messagesOf, stateful, unreadable, type Untranslatable } from './input.js';
import type { ResponsesRequest } from './parse-request.js';
import { quoteValue, valueText } from '../../core/quote-input.js';

type Json = Record<string, unknown>;

/** A Responses function tool (flat: name, parameters, strict) as a chat completions one (nested under `function`). */
function toolsOf(tools: unknown, untranslatable: Untranslatable): Json[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  const out: Json[] = [];
  tools.forEach((tool: unknown, i) => {
    if (!isRecord(tool)) return;
    if (tool.type !== 'function') {
      // web_search, file_search, computer_use, code_interpreter, mcp, ...: the provider runs them. A custom tool (free-form
      // input, Codex's apply_patch with its grammar) is the client's own, but chat completions has no such tool.
      const what = tool.type === 'custom' ? `The custom tool '${quoteValue(tool.name)}' (free-form input)` : `The built-in tool '${quoteValue(tool.type)}'`;
      stateful(untranslatable, `tools[${i}]`, what);
      return;
    }
    const fn: Json = { name: tool.name };
    if (tool.description !== undefined && tool.description !== null) fn.description = tool.description;
    if (tool.parameters !== undefined && tool.parameters !== null) fn.parameters = tool.parameters;
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    out.push({ type: 'function', function: fn });
  });
  return out.length > 0 ? out : undefined;
}

/**
 * The function names an allowed_tools choice lists, when it lists functions only and has a mode chat completions
 * knows; null when it names something else (a built-in tool, an MCP server's), which only the Responses API can choose.
 */
function allowedFunctions(choice: Json): Set<string> | null {
  if (choice.mode !== 'auto' && choice.mode !== 'required') return null;
  const listed: unknown[] = Array.isArray(choice.tools) ? choice.tools : [];
  const names = new Set<string>();
  for (const tool of listed) {
    if (!isRecord(tool) || tool.type !== 'function' || typeof tool.name !== 'string') return null;
    names.add(tool.name);
  }
  return names;
}

/**
 * `tool_choice`: the modes as they are, a function by name nested as chat completions nests it, allowed_tools as its
 * mode over the tools it lists (the others are left out of `tools`, so the model is offered those alone).
 */
function toolChoiceOf(choice: unknown, request: ChatCompletionRequest, untranslatable: Untranslatable): unknown {
  if (choice === undefined || choice === null || typeof choice === 'string') return choice ?? undefined;
  if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  const allowed = isRecord(choice) && choice.type === 'allowed_tools' ? allowedFunctions(choice) : null;
  if (allowed && Array.isArray(request.tools)) {
    const tools = request.tools.filter((tool: unknown) => isRecord(tool) && isRecord(tool.function) && allowed.has(valueText(tool.function.name)));
    if (tools.length === 0) {
      unreadable(untranslatable, 'tool_choice.tools', 'names no function of tools.');
      return undefined;
    }
    request.tools = tools;
    return (choice as Json).mode;
  }
  // allowed_tools naming other tools, a built-in tool, an MCP server's or a custom tool: what only the Responses API can choose.
  if (isRecord(choice) && typeof choice.type === 'string' && choice.type !== 'function') stateful(untranslatable, 'tool_choice', `A tool_choice of type '${choice.type}'`);
  else unreadable(untranslatable, 'tool_choice', "expected 'none', 'auto', 'required' or {\"type\":\"function\",\"name\":\"...\"}.");
  return undefined;
}

/**
 * `text.format` as chat completions' `response_format` (a json_schema's fields nested under `json_schema`). What it
 * cannot read (a type it does not know, a json_schema without its name or schema) is the 400 OpenAI gives, naming the
 * field: left out, the answer would come as plain text in a format the client did not ask for.
 */
function responseFormatOf(text: unknown, untranslatable: Untranslatable): Json | undefined {
  if (!isRecord(text) || text.format === undefined || text.format === null) return undefined;
  const format = text.format;
  const refuse = (param: string, message: string): undefined => void unreadable(untranslatable, param, message);
  if (!isRecord(format)) return refuse('text.format', "expected an object such as {\"type\":\"json_schema\",\"name\":\"...\",\"schema\":{...}}.");
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type !== 'json_schema') return refuse('text.format.type', "expected 'text', 'json_schema' or 'json_object'.");
  if (typeof format.name !== 'string' || format.name === '') return refuse('text.format.name', 'a json_schema format needs a name.');
  if (!isRecord(format.schema)) return refuse('text.format.schema', 'a json_schema format needs a schema (a JSON Schema object).');
  const schema: Json = { name: format.name, schema: format.schema };
  if (format.description !== undefined) schema.description = format.description;
  if (typeof format.strict === 'boolean') schema.strict = format.strict;
  return { type: 'json_schema', json_schema: schema };
}

/** The canonical request for a Responses body, and why it is incomplete when it is. */
export interface CanonicalRead {
  request: ChatCompletionRequest;
  /**
   * Null when the canonical request says everything the body asks. Otherwise the 400 an attempt that must translate
   * gives (state kept by the provider, built-in tools): only a provider serving the Responses API takes the body.
   */
  untranslatable: GatewayError | null;
}

/** How the translation may go beyond what every provider takes. */
export interface CanonicalOptions {
  /**
   * Gemini's thought signatures, carried in reasoning items tollgate wrote, go back on their function calls
   * (`extra_content.google.thought_signature`): only when every target reads them (see keepsGeminiFields), as an
   * OpenAI-format vendor gets a message's fields as they are and may refuse one it does not know.
   */
  geminiSignatures?: boolean;
}

/**
 * A Responses body as the canonical (chat completions) request: `instructions` as a leading system message, `input`
 * as messages (see messagesOf), function tools, tool_choice, `text.format` as response_format, `max_output_tokens`
 * as max_completion_tokens, `reasoning.effort` as reasoning_effort, logprobs (include's message.output_text.logprobs,
 * top_logprobs) as logprobs and top_logprobs, and temperature, top_p, parallel_tool_calls,
 * metadata, user and stream as they are (a stream asks for usage, which the Response reports). Fields that only
 * steer OpenAI's own service (store, include, truncation, service_tier, prompt_cache_key) are left out.
 */
export function canonicalRequest(body: ResponsesRequest, model: string, previous: GatewayError | null = null, options: CanonicalOptions = {}): CanonicalRead {
  const untranslatable: Untranslatable = [];
  // A previous_response_id tollgate kept is expanded before this (see continuedRequest); one still here is the
  // provider's to find (`previous`: why a translation cannot, such as OpenAI's not found).
  if (typeof body.previous_response_id === 'string') {
    if (previous) untranslatable.push(previous);
    else stateful(untranslatable, 'previous_response_id', 'previous_response_id (a conversation the provider stored)');
  }
  if (body.conversation !== undefined && body.conversation !== null) stateful(untranslatable, 'conversation', 'A conversation (kept by the provider)');
  if (body.prompt !== undefined && body.prompt !== null) stateful(untranslatable, 'prompt', 'A prompt template (kept by the provider)');
  const messages: ChatMessage[] = [];
  if (typeof body.instructions === 'string' && body.instructions !== '') messages.push({ role: 'system', content: body.instructions });
  // A loop, not push(...): spread arguments live on the stack, and an input may hold 200 000 items.
  for (const message of messagesOf(body.input, untranslatable, options.geminiSignatures === true)) messages.push(message);
  // Without input the provider's stored state would be the whole conversation (previous_response_id, a prompt).
  if (messages.every((message) => message.role === 'system') && untranslatable.length === 0) {
    untranslatable.push(gatewayError('missing_required_parameter', "Missing required parameter: 'input'.", { param: 'input' }));
  }
  const request: ChatCompletionRequest = { model, messages };
  if (body.stream === true) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  const tools = toolsOf(body.tools, untranslatable);
  if (tools) request.tools = tools;
  const toolChoice = toolChoiceOf(body.tool_choice, request, untranslatable);
  if (toolChoice !== undefined && request.tools) request.tool_choice = toolChoice;
  if (typeof body.parallel_tool_calls === 'boolean' && request.tools) request.parallel_tool_calls = body.parallel_tool_calls;
  const responseFormat = responseFormatOf(body.text, untranslatable);
  if (responseFormat) request.response_format = responseFormat;
  if (typeof body.max_output_tokens === 'number') request.max_completion_tokens = body.max_output_tokens;
  // Log probabilities: asked for by include (and top_logprobs for the alternatives), read back onto the output_text.
  const include = Array.isArray(body.include) ? body.include : [];
  const topLogprobs = typeof body.top_logprobs === 'number' ? body.top_logprobs : null;
  if (include.includes('message.output_text.logprobs') || (topLogprobs !== null && topLogprobs > 0)) {
    request.logprobs = true;
    if (topLogprobs !== null) request.top_logprobs = topLogprobs;
  }
  for (const field of ['temperature', 'top_p'] as const) if (typeof body[field] === 'number') request[field] = body[field];
  if (isRecord(body.reasoning) && typeof body.reasoning.effort === 'string') request.reasoning_effort = body.reasoning.effort;
  if (isRecord(body.metadata)) request.metadata = body.metadata;
  if (typeof body.user === 'string') request.user = body.user;
  return { request, untranslatable: untranslatable[0] ?? null };
}
