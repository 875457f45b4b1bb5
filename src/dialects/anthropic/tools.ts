import { cannotTranslate, type DialectOptions } from './content.js';
import { invalidRequest } from './errors.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';

/**
 * Anthropic's client tools as OpenAI function tools. Server tools (web search, code execution, ...) run inside
 * Anthropic's API and have no counterpart elsewhere, so they are refused instead of silently vanishing (the
 * lenient read leaves them out of the canonical request and records why).
 */
export function canonicalTools(tools: unknown, options: DialectOptions): Json[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalidRequest('tools', 'Input should be a valid list');
  const out: Json[] = [];
  tools.forEach((tool: unknown, i) => {
    if (!isRecord(tool) || typeof tool.name !== 'string' || tool.name === '') throw invalidRequest(`tools.${i}.name`, 'Field required');
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      cannotTranslate(options, () => invalidRequest(`tools.${i}.type`, `The server tool '${quoteValue(tool.type)}' cannot be translated by the gateway; only client tools are supported.`));
      return;
    }
    if (!isRecord(tool.input_schema)) throw invalidRequest(`tools.${i}.input_schema`, 'Field required');
    const fn: Json = { name: tool.name };
    if (typeof tool.description === 'string') fn.description = tool.description;
    fn.parameters = tool.input_schema;
    if (tool.strict === true) fn.strict = true;
    const canonical: Json = { type: 'function', function: fn };
    if (tool.cache_control !== undefined) canonical.cache_control = tool.cache_control;
    out.push(canonical);
  });
  return out;
}

export interface ToolChoice {
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
}

/** Anthropic's tool_choice as OpenAI's: `any` is `required`, a named `tool` a named function; parallelism is a separate flag. */
export function canonicalToolChoice(choice: unknown): ToolChoice {
  if (choice === undefined || choice === null) return {};
  if (!isRecord(choice)) throw invalidRequest('tool_choice', 'Input should be a valid dictionary');
  const out: ToolChoice = {};
  switch (choice.type) {
    case 'auto':
      out.tool_choice = 'auto';
      break;
    case 'any':
      out.tool_choice = 'required';
      break;
    case 'none':
      out.tool_choice = 'none';
      break;
    case 'tool':
      if (typeof choice.name !== 'string' || choice.name === '') throw invalidRequest('tool_choice.name', 'Field required');
      out.tool_choice = { type: 'function', function: { name: choice.name } };
      break;
    default:
      throw invalidRequest('tool_choice.type', "Input should be 'auto', 'any', 'tool' or 'none'");
  }
  if (choice.disable_parallel_tool_use === true && choice.type !== 'none') out.parallel_tool_calls = false;
  return out;
}
