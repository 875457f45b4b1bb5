import type { ChatCompletionRequest } from '../../core/canonical.js';
import { conversationOf } from './messages.js';
import { isRecord } from '../../core/is-record.js';
import { continuesUnthoughtToolTurn, fitBudget, thinkingOf } from './thinking.js';
import { historyOnlyTools, holdsToolBlocks, toolChoiceOf, toolsOf } from './tools.js';
import { gatewayError } from '../../core/errors.js';
import { claudeOutputSchema } from './output-schema.js';
import { refuseLogprobs } from './logprobs.js';

/** Anthropic requires max_tokens; OpenAI clients often leave it out. */
export const DEFAULT_MAX_TOKENS = 4096;

/** The max_tokens a request that sets none is sent: the answer's usual room on top of the thinking budget. */
export function defaultMaxTokens(request: ChatCompletionRequest): number {
  const thinking = thinkingOf(request);
  return DEFAULT_MAX_TOKENS + (thinking?.type === 'enabled' && typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0);
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

function stopSequences(stop: unknown): string[] | undefined {
  if (stop === undefined || stop === null) return undefined;
  if (typeof stop === 'string') return [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) return stop as string[];
  throw gatewayError('invalid_request', 'anthropic: stop must be a string or an array of strings.', { param: 'stop' });
}

/**
 * `json_schema` is Anthropic's structured output format (its schema in the subset Claude takes, see claudeOutputSchema). `json_object` has no Anthropic equivalent; OpenAI
 * requires such prompts to ask for JSON themselves, so leaving it out keeps the request's meaning.
 */
function outputConfigOf(format: unknown): Record<string, unknown> | undefined {
  if (!isRecord(format) || format.type !== 'json_schema') return undefined;
  const spec = format.json_schema;
  if (!isRecord(spec) || !isRecord(spec.schema)) throw gatewayError('invalid_request', 'anthropic: response_format json_schema needs a schema.', { param: 'response_format' });
  return { format: { type: 'json_schema', schema: claudeOutputSchema(spec.schema) } };
}

/**
 * The canonical (OpenAI) request as an Anthropic Messages request body. OpenAI-only knobs without an
 * Anthropic counterpart (seed, penalties, logit_bias, store, OpenAI's metadata) are dropped; `n` above 1 and
 * `logprobs`, which would change what the answer holds, are refused.
 */
export function messagesBody(request: ChatCompletionRequest, model: string): Record<string, unknown> {
  if (request.n !== undefined && request.n !== null && request.n !== 1) {
    throw gatewayError('invalid_request', 'anthropic: only one choice per request is supported (n must be 1).', { param: 'n' });
  }
  refuseLogprobs(request);
  const { system, messages } = conversationOf(request.messages);
  const asked = positiveInt(request.max_completion_tokens) ?? positiveInt(request.max_tokens);
  const explicit = request.thinking !== undefined && request.thinking !== null;
  let thinking = thinkingOf(request);
  const maxTokens = asked ?? defaultMaxTokens(request);
  if (thinking) thinking = fitBudget(thinking, maxTokens, explicit);
  // Thinking asked for by reasoning_effort is left off for the turn after a tool call that carries none (see
  // continuesUnthoughtToolTurn): Anthropic would refuse the request; thinking set explicitly is Anthropic's to judge.
  if (thinking?.type === 'enabled' && !explicit && continuesUnthoughtToolTurn(messages)) thinking = undefined;
  const tools = toolsOf(request.tools);
  const toolChoice = tools && tools.length > 0 ? toolChoiceOf(request.tool_choice, request.parallel_tool_calls) : undefined;
  const outputConfig = outputConfigOf(request.response_format);

  const body: Record<string, unknown> = { model, max_tokens: maxTokens, messages };
  if (system !== undefined) body.system = system;
  if (typeof request.temperature === 'number') body.temperature = request.temperature;
  if (typeof request.top_p === 'number') body.top_p = request.top_p;
  if (typeof request.top_k === 'number') body.top_k = request.top_k;
  const stop = stopSequences(request.stop);
  if (stop && stop.length > 0) body.stop_sequences = stop;
  if (typeof request.user === 'string' && request.user !== '') body.metadata = { user_id: request.user };
  if (tools && tools.length > 0) body.tools = tools;
  else if (holdsToolBlocks(messages)) Object.assign(body, historyOnlyTools());
  if (toolChoice) body.tool_choice = toolChoice;
  if (thinking) body.thinking = thinking;
  if (outputConfig) body.output_config = outputConfig;
  if (request.stream === true) body.stream = true;
  return body;
}
