import type { GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

function invalid(message: string, param: string): GatewayError {
  return gatewayError('invalid_request', `anthropic: ${message}`, { param: param });
}

/** OpenAI function tools to Anthropic tool definitions. */
export function toolsOf(tools: unknown): Record<string, unknown>[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalid('tools must be an array.', 'tools');
  return tools.map((tool) => {
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function) || typeof tool.function.name !== 'string') {
      throw invalid('only function tools with a name are supported.', 'tools');
    }
    const fn = tool.function;
    return {
      name: fn.name,
      ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
      // A function without parameters takes none; Anthropic requires an object schema all the same.
      input_schema: isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} },
      ...(fn.strict === true ? { strict: true } : {}),
      ...(tool.cache_control !== undefined ? { cache_control: tool.cache_control } : {}),
    };
  });
}

/**
 * OpenAI's tool_choice to Anthropic's: `required` is `any`, a named function is `tool`. OpenAI's
 * `parallel_tool_calls: false` lives on Anthropic's tool_choice as `disable_parallel_tool_use`.
 */
export function toolChoiceOf(choice: unknown, parallel: unknown): Record<string, unknown> | undefined {
  let mapped: Record<string, unknown> | undefined;
  if (choice === undefined || choice === null) mapped = undefined;
  else if (choice === 'none' || choice === 'auto') mapped = { type: choice };
  else if (choice === 'required') mapped = { type: 'any' };
  else if (isRecord(choice) && choice.type === 'function' && isRecord(choice.function) && typeof choice.function.name === 'string') {
    mapped = { type: 'tool', name: choice.function.name };
  } else throw invalid("tool_choice must be 'none', 'auto', 'required' or a named function.", 'tool_choice');
  if (parallel !== false) return mapped;
  if (mapped?.type === 'none') return mapped;
  return { ...(mapped ?? { type: 'auto' }), disable_parallel_tool_use: true };
}
