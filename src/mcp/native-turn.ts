import type { CachedNative } from '../cache/cache-store.js';
import { nativeBodyOf } from '../cache/native-reshape.js';
import type { NativeRequest } from '../core/canonical.js';
import { isRecord } from '../core/is-record.js';
import { unforcedAnthropicToolChoice, unforcedGeminiToolConfig, unforcedToolChoice } from './tool-choice.js';
import { RESPONSES_FORMAT } from '../wire/openai-responses/format.js';

type Json = Record<string, unknown>;

/** A tool call the agent ran, and the text its result gave the model. */
export interface ToolTurn {
  name: string;
  result: string;
  /** The call failed or was refused: Anthropic's `is_error`, Gemini's `error` key. */
  isError?: boolean;
}

/**
 * The client's own body for an agent run's next turn, in native pass-through: the body as it went upstream, then the
 * model's turn as the upstream gave it (Anthropic's content blocks with their thinking signatures, Gemini's parts
 * with their thought signatures) and the tools' results in the format's own shape. What only the client's format
 * carries (server and built-in tools, thinking, safety settings) thus stays for every turn; Anthropic refuses a
 * tool-use turn under thinking whose signed thinking is not handed back, and a translated turn drops it. A tool
 * choice that forced the turn before no longer forces (see tool-choice.ts).
 *
 * Null when the turn cannot be continued natively (its answer was not the upstream's own, or its tool calls do not
 * match the ones run): the run then goes on from the canonical request, as for any other format.
 */
export function nativeNextTurn(native: NativeRequest, answer: CachedNative | null, turns: readonly ToolTurn[]): Json | null {
  const body = answer ? nativeBodyOf(answer) : null;
  if (!body) return null;
  if (native.format === 'anthropic') return anthropicNextTurn(native.body, body, turns);
  if (native.format === 'gemini') return geminiNextTurn(native.body, body, turns);
  if (native.format === RESPONSES_FORMAT) return responsesNextTurn(native.body, body, turns);
  return null;
}

function anthropicNextTurn(request: Json, message: Json, turns: readonly ToolTurn[]): Json | null {
  if (!Array.isArray(request.messages) || !Array.isArray(message.content)) return null;
  const calls = message.content.filter((block): block is Json => isRecord(block) && block.type === 'tool_use');
  if (calls.length !== turns.length || calls.some((call, i) => call.name !== turns[i]?.name)) return null;
  const results = calls.map((call, i) => ({ type: 'tool_result', tool_use_id: call.id, content: turns[i]?.result ?? '', ...(turns[i]?.isError ? { is_error: true } : {}) }));
  return { ...request, ...unforcedAnthropicToolChoice(request.tool_choice), messages: [...request.messages, { role: 'assistant', content: message.content }, { role: 'user', content: results }] };
}

/**
 * A function's result as Gemini's `functionResponse.response` takes it: a JSON object as it is, anything else under
 * `result`; a failed call's text under `error`, as Gemini reads errors.
 */
function functionResponse(text: string, isError = false): Json {
  if (isError) return { error: text };
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : { result: parsed };
  } catch {
    return { result: text };
  }
}

function geminiNextTurn(request: Json, response: Json, turns: readonly ToolTurn[]): Json | null {
  const candidate = Array.isArray(response.candidates) ? response.candidates[0] : undefined;
  const content = isRecord(candidate) ? candidate.content : undefined;
  if (!Array.isArray(request.contents) || !isRecord(content) || !Array.isArray(content.parts)) return null;
  const calls = content.parts.flatMap((part) => (isRecord(part) && isRecord(part.functionCall) ? [part.functionCall] : []));
  if (calls.length !== turns.length || calls.some((call, i) => call.name !== turns[i]?.name)) return null;
  const results = calls.map((call, i) => ({ functionResponse: { ...(typeof call.id === 'string' ? { id: call.id } : {}), name: call.name, response: functionResponse(turns[i]?.result ?? '', turns[i]?.isError) } }));
  return { ...request, ...unforcedGeminiToolConfig(request), contents: [...request.contents, { ...content, role: 'model' }, { role: 'user', parts: results }] };
}

/**
 * A Responses API body's next turn: the tools' results as function_call_output items. Where the provider keeps the
 * conversation (store is not false), the turn names the answer by previous_response_id (or, with a `conversation`,
 * that conversation already holds it), so what it kept (previous_response_id's own history, reasoning) stays; with
 * store: false the answer's items go back in the input, reasoning only with its encrypted content (the provider has
 * nothing to look an id up in).
 */
function responsesNextTurn(request: Json, response: Json, turns: readonly ToolTurn[]): Json | null {
  if (!Array.isArray(response.output) || typeof response.id !== 'string') return null;
  const output = response.output.filter(isRecord);
  const calls = output.filter((item) => item.type === 'function_call');
  if (calls.length !== turns.length || calls.some((call, i) => call.name !== turns[i]?.name)) return null;
  const results = calls.map((call, i) => ({ type: 'function_call_output', call_id: call.call_id, output: turns[i]?.result ?? '' }));
  // A forced choice held for the client's turn only (see tool-choice.ts).
  request = { ...request, ...unforcedToolChoice(request.tool_choice) };
  if (request.conversation !== undefined && request.conversation !== null) return { ...request, input: results };
  if (request.store !== false) return { ...request, previous_response_id: response.id, input: results };
  const input = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : Array.isArray(request.input) ? request.input : [];
  const answer = output.filter((item) => item.type !== 'reasoning' || typeof item.encrypted_content === 'string');
  return { ...request, input: [...input, ...answer, ...results] };
}
