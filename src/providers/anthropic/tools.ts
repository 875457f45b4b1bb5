import type { GatewayError } from '../../core/errors.js';
import type { AnthropicMessage } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';
import { claudeOutputSchema } from './output-schema.js';

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
      // A function without parameters takes none; Anthropic requires an object schema all the same. A strict tool's
      // schema is held to structured outputs' subset, as a response format's is.
      input_schema: isRecord(fn.parameters) ? (fn.strict === true ? claudeOutputSchema(fn.parameters) : fn.parameters) : { type: 'object', properties: {} },
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

/** Whether a conversation holds tool_use or tool_result blocks. */
export function holdsToolBlocks(messages: AnthropicMessage[]): boolean {
  return messages.some((message) => Array.isArray(message.content) && message.content.some((block) => block.type === 'tool_use' || block.type === 'tool_result'));
}

/**
 * The tools of a request that offers none but whose history holds tool calls: Anthropic refuses such a history
 * without tools ("Requests which include `tool_use` or `tool_result` blocks must define tools"), while OpenAI takes
 * it (an agent's last turn often drops `tools`). One tool that does nothing is declared, with tool_choice `none`,
 * rather than the history's own tools, so the model is offered no tool the client did not offer.
 */
export function historyOnlyTools(): { tools: Record<string, unknown>[]; tool_choice: Record<string, unknown> } {
  return {
    tools: [
      {
        name: 'no_tools_available',
        description: 'No tools are available for this turn. Do not call this tool; answer in text.',
        input_schema: { type: 'object', properties: {} },
      },
    ],
    tool_choice: { type: 'none' },
  };
}
