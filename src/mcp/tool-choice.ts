import { isRecord } from '../core/is-record.js';

/**
 * A client's tool choice for an agent run's later turns. A choice that forces a call (OpenAI's `required` or a named
 * function, Anthropic's `any` or `tool`, Gemini's mode `ANY`) holds for the turn the client sent; forced again after
 * tollgate ran the tools, the model would call a tool on every turn until `max_steps`, and the client would get a
 * call to a tool it never offered. After that turn the model chooses (`auto`), as agent loops do (the OpenAI Agents
 * SDK's `reset_tool_choice`). Each returns the fields to set on the request, none when nothing is forced.
 */

type Json = Record<string, unknown>;

/** The canonical (OpenAI) `tool_choice`. */
export function unforcedToolChoice(choice: unknown): Json {
  if (choice === 'required') return { tool_choice: 'auto' };
  if (!isRecord(choice)) return {};
  if (choice.type === 'function' || choice.type === 'custom') return { tool_choice: 'auto' };
  // `{ type: 'allowed_tools', allowed_tools: { mode: 'required', tools } }`: still only those tools, no longer forced.
  if (choice.type === 'allowed_tools' && isRecord(choice.allowed_tools) && choice.allowed_tools.mode === 'required') {
    return { tool_choice: { ...choice, allowed_tools: { ...choice.allowed_tools, mode: 'auto' } } };
  }
  return {};
}

/** Anthropic's `tool_choice` (its `disable_parallel_tool_use` kept). */
export function unforcedAnthropicToolChoice(choice: unknown): Json {
  if (!isRecord(choice) || (choice.type !== 'any' && choice.type !== 'tool')) return {};
  const { name: _name, ...rest } = choice;
  return { tool_choice: { ...rest, type: 'auto' } };
}

/** Gemini's `toolConfig.functionCallingConfig` (either spelling Google takes: lowerCamel or snake_case). */
export function unforcedGeminiToolConfig(request: Json): Json {
  for (const configKey of ['toolConfig', 'tool_config']) {
    const config = request[configKey];
    if (!isRecord(config)) continue;
    for (const callingKey of ['functionCallingConfig', 'function_calling_config']) {
      const calling = config[callingKey];
      if (!isRecord(calling) || typeof calling.mode !== 'string' || calling.mode.toUpperCase() !== 'ANY') continue;
      const { allowedFunctionNames: _camel, allowed_function_names: _snake, ...rest } = calling;
      return { [configKey]: { ...config, [callingKey]: { ...rest, mode: 'AUTO' } } };
    }
  }
  return {};
}

/**
 * The tool choice of a run's last turn, after tollgate ran tools (the step limit or the time budget reached): no
 * tool, so the model answers from what it has. A call it made then would go to the client, which never offered
 * an MCP tool and cannot run it. Each returns the fields to set on the request.
 */
export function noToolChoice(): Json {
  return { tool_choice: 'none' };
}

export function noAnthropicToolChoice(): Json {
  return { tool_choice: { type: 'none' } };
}

export function noGeminiToolCall(request: Json): Json {
  const key = isRecord(request.tool_config) && !isRecord(request.toolConfig) ? 'tool_config' : 'toolConfig';
  const config = isRecord(request[key]) ? (request[key] as Json) : {};
  const { functionCallingConfig: _camel, function_calling_config: _snake, ...rest } = config;
  return { [key]: { ...rest, functionCallingConfig: { mode: 'NONE' } } };
}
