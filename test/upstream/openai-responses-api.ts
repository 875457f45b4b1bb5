// OpenAI's Responses API (POST /v1/responses) for the scripted OpenAI upstream: a request checked as OpenAI checks
// it (unknown top-level parameters, input items, reasoning items sent back with the encrypted content this upstream
// gave), and the answer as a Response object or the documented event stream (response.created ... response.completed,
// each event with its sequence_number), shaped like OpenAI's API reference: reasoning items with encrypted_content
// when `include` asks for it, usage with input_tokens_details.cached_tokens and output_tokens_details.reasoning_tokens,
// and fields tollgate does not read (billing, service_tier, prompt_cache_key, safety_identifier, top_logprobs). The
// answer is deterministic and derived from the request, so tests can assert what went through.
import { createHash } from 'node:crypto';
import { randomHex } from './random-ids.js';

type Json = Record<string, any>;

/** The request parameters OpenAI's Responses API takes (CreateResponse); anything else is its "Unknown parameter". */
const PARAMETERS = new Set([
  'model', 'input', 'instructions', 'tools', 'tool_choice', 'text', 'max_output_tokens', 'max_tool_calls', 'temperature', 'top_p',
  'top_logprobs', 'parallel_tool_calls', 'reasoning', 'metadata', 'user', 'safety_identifier', 'prompt_cache_key', 'prompt_cache_retention',
  'stream', 'stream_options', 'store', 'include', 'previous_response_id', 'conversation', 'background', 'truncation', 'service_tier', 'prompt',
]);

export interface Problem {
  message: string;
  param: string | null;
  code: string | null;
}

/** The encrypted content this upstream gives a reasoning item: a keyed hash, so one changed or forged is refused. */
export function encryptedReasoning(id: string): string {
  return `gAAAAA${createHash('sha256').update(`scripted-responses:${id}`).digest('base64url')}`;
}

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of an input item's content (string or parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: Json) => (typeof part?.text === 'string' ? part.text : '')).filter(Boolean).join(' ');
}

/** An id this upstream gives a Response (others, such as a test's 'resp_abc', are taken as given elsewhere). */
const OWN_RESPONSE_ID = /^resp_[0-9a-f]{48}$/;

/**
 * A problem with the request in OpenAI's words, or null. `stored`: the ids of the Responses (and their reasoning items)
 * this upstream kept (those answered without store: false); a previous_response_id of its own making, or a reasoning
 * item without its encrypted content, that is not among them is refused as OpenAI refuses one it did not keep.
 */
export function checkResponsesRequest(body: unknown, stored: ReadonlySet<string> = new Set()): Problem | null {
  if (!isRecord(body)) return { message: 'Invalid body: expected an object.', param: null, code: null };
  for (const key of Object.keys(body)) if (!PARAMETERS.has(key)) return { message: `Unknown parameter: '${key}'.`, param: key, code: 'unknown_parameter' };
  if (typeof body.model !== 'string') return { message: "Missing required parameter: 'model'.", param: 'model', code: 'missing_required_parameter' };
  if (body.input === undefined && body.previous_response_id === undefined) return { message: "Missing required parameter: 'input'.", param: 'input', code: 'missing_required_parameter' };
  if (body.tools !== undefined && (!Array.isArray(body.tools) || body.tools.some((tool: unknown) => !isRecord(tool)))) {
    return { message: "Invalid type for 'tools': expected an array of objects.", param: 'tools', code: 'invalid_type' };
  }
  const previous = body.previous_response_id;
  if (typeof previous === 'string' && OWN_RESPONSE_ID.test(previous) && !stored.has(previous)) {
    return { message: `Previous response with id '${previous}' not found.`, param: 'previous_response_id', code: 'previous_response_not_found' };
  }
  if (Array.isArray(body.input)) {
    for (const [i, item] of (body.input as unknown[]).entries()) {
      if (!isRecord(item)) return { message: `Invalid type for 'input[${i}]'.`, param: `input[${i}]`, code: 'invalid_type' };
      // A reasoning item without its encrypted content names one OpenAI kept (a Response answered without store: false).
      if (item.type === 'reasoning' && item.encrypted_content === undefined && !stored.has(String(item.id))) {
        return { message: `Item with id '${String(item.id)}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`, param: 'input', code: null };
      }
      if (item.type === 'reasoning' && item.encrypted_content !== undefined && item.encrypted_content !== encryptedReasoning(String(item.id))) {
        return { message: `The encrypted content for item ${String(item.id)} could not be verified.`, param: `input[${i}].encrypted_content`, code: 'invalid_encrypted_content' };
      }
    }
  }
  return compactionItemProblem(body.input);
}

/** The parameters OpenAI's input token count takes (TokenCountsBody); anything else is its "Unknown parameter". */
const COUNT_PARAMETERS = new Set([
  'model', 'input', 'previous_response_id', 'tools', 'text', 'reasoning', 'truncation', 'instructions', 'personality', 'conversation', 'tool_choice', 'parallel_tool_calls',
]);

/** A problem with a `POST /v1/responses/input_tokens` body in OpenAI's words, or null (`stored` as for checkResponsesRequest). */
export function checkInputTokensRequest(body: unknown, stored: ReadonlySet<string> = new Set()): Problem | null {
  if (!isRecord(body)) return { message: 'Invalid body: expected an object.', param: null, code: null };
  for (const key of Object.keys(body)) if (!COUNT_PARAMETERS.has(key)) return { message: `Unknown parameter: '${key}'.`, param: key, code: 'unknown_parameter' };
  const previous = body.previous_response_id;
  if (typeof previous === 'string' && OWN_RESPONSE_ID.test(previous) && !stored.has(previous)) {
    return { message: `Previous response with id '${previous}' not found.`, param: 'previous_response_id', code: 'previous_response_not_found' };
  }
  return null;
}

/** The input tokens of a request (the instructions and every input item's text, in words, and 10 of framing), as its Response's usage reports them. */
export function inputTokensOf(body: Json): number {
  const items: Json[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  const prompt = [body.instructions ?? '', ...items.map((item) => textOf(item.content) || (typeof item.output === 'string' ? item.output : '') || (item.arguments ?? ''))].join(' ');
  return Math.max(1, words(prompt)) + 10;
}

interface Plan {
  response: Json;
  /** The function call's arguments in the pieces they stream in. */
  argumentPieces: string[];
  /** The message text in the pieces it streams in. */
  textPieces: string[];
}

/** The source a web search (the built-in `web_search` tool) finds, cited by the answer. */
export const SEARCH_SOURCE = { url: 'https://example.org/weather', title: 'Weather today' };

/**
 * What the model answers: a function call when asked to use the tool, else an echo of the last user text (or the
 * tool's output), or the text of `pieces` (a scripted reply) in those pieces. With the built-in web_search tool it
 * searches first (a web_search_call item) and its text cites what it found (a url_citation annotation).
 */
export function planResponse(body: Json, pieces: string[] | null = null): Plan {
  const items: Json[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  const last = items.at(-1) ?? {};
  const lastUser = [...items].reverse().find((item) => (item.type ?? 'message') === 'message' && item.role === 'user');
  const userText = textOf(lastUser?.content);
  // A custom tool (freeform input, as Codex's apply_patch) is called like a function, its input the user's text.
  const tools = Array.isArray(body.tools) ? body.tools.filter((tool: Json) => tool.type === 'function' || tool.type === 'custom') : [];
  const searches = Array.isArray(body.tools) && body.tools.some((tool: Json) => tool.type === 'web_search');
  const callTool = tools.length > 0 && body.tool_choice !== 'none' && last.type !== 'function_call_output' && /use the tool/i.test(userText);
  const output: Json[] = [];
  let reasoningTokens = 0;
  if (isRecord(body.reasoning) && body.reasoning.effort !== 'none') {
    const id = `rs_${randomHex(24)}`;
    const encrypted = Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content');
    output.push({ id, type: 'reasoning', summary: [], ...(encrypted ? { encrypted_content: encryptedReasoning(id) } : {}) });
    reasoningTokens = 64;
  }
  if (searches) output.push({ id: `ws_${randomHex(24)}`, type: 'web_search_call', status: 'completed', action: { type: 'search', query: userText, sources: [{ type: 'url', url: SEARCH_SOURCE.url }] } });
  let textPieces: string[] = [];
  let argumentPieces: string[] = [];
  let status = 'completed';
  let incomplete: Json | null = null;
  if (callTool && tools[0].type === 'custom') {
    argumentPieces = [userText.slice(0, 12), userText.slice(12, 24), userText.slice(24)];
    output.push({ id: `ctc_${randomHex(24)}`, type: 'custom_tool_call', status: 'completed', call_id: `call_${randomHex(12)}`, input: userText, name: tools[0].name });
  } else if (callTool) {
    const args = JSON.stringify({ query: userText, units: 'metric' });
    argumentPieces = [args.slice(0, 6), args.slice(6, 15), args.slice(15)];
    output.push({ id: `fc_${randomHex(24)}`, type: 'function_call', status: 'completed', arguments: args, call_id: `call_${randomHex(12)}`, name: tools[0].name });
  } else {
    let text = pieces ? pieces.join('') : last.type === 'function_call_output' ? `tool said ${typeof last.output === 'string' ? last.output : textOf(last.output)}` : `echo: ${userText}`;
    const all = text.split(' ');
    if (typeof body.max_output_tokens === 'number' && all.length > body.max_output_tokens) {
      text = all.slice(0, body.max_output_tokens).join(' ');
      status = 'incomplete';
      incomplete = { reason: 'max_output_tokens' };
    }
    textPieces = pieces && status === 'completed' ? pieces : text.split(/(?<= )/);
    const annotations = searches ? [{ type: 'url_citation', start_index: 0, end_index: Math.min(5, text.length), ...SEARCH_SOURCE }] : [];
    output.push({ id: `msg_${randomHex(24)}`, type: 'message', status: status === 'completed' ? 'completed' : 'incomplete', content: [{ type: 'output_text', annotations, logprobs: [], text }], role: 'assistant' });
  }
  const inputTokens = inputTokensOf(body);
  const outputTokens = Math.max(1, words(textPieces.join('') || argumentPieces.join(''))) + reasoningTokens;
  const now = Math.floor(Date.now() / 1000);
  const response: Json = {
    id: `resp_${randomHex(24)}`,
    object: 'response',
    created_at: now,
    status,
    background: false,
    billing: { payer: 'developer' },
    completed_at: status === 'completed' ? now : null,
    error: null,
    incomplete_details: incomplete,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model: `${body.model}-2025-08-07`,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    prompt_cache_retention: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: Math.floor(inputTokens / 2) },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: reasoningTokens },
      total_tokens: inputTokens + outputTokens,
    },
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
  return { response, argumentPieces, textPieces };
}

/** The documented event stream of a planned Response: each event as an SSE frame, with its sequence_number. */
export function responseFrames({ response, argumentPieces, textPieces }: Plan): string[] {
  const frames: string[] = [];
  let sequence = 0;
  const emit = (type: string, fields: Json): void => {
    frames.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
  };
  const open = { ...response, status: 'in_progress', completed_at: null, output: [], usage: null, incomplete_details: null };
  emit('response.created', { response: open });
  emit('response.in_progress', { response: open });
  (response.output as Json[]).forEach((item, index) => {
    if (item.type === 'reasoning') {
      const { encrypted_content: _later, ...started } = item;
      emit('response.output_item.added', { output_index: index, item: started });
      emit('response.output_item.done', { output_index: index, item });
    } else if (item.type === 'function_call') {
      emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const delta of argumentPieces) emit('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta, obfuscation: randomHex(4) });
      emit('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: item.arguments });
      emit('response.output_item.done', { output_index: index, item });
    } else if (item.type === 'custom_tool_call') {
      emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', input: '' } });
      for (const delta of argumentPieces) emit('response.custom_tool_call_input.delta', { item_id: item.id, output_index: index, delta, obfuscation: randomHex(4) });
      emit('response.custom_tool_call_input.done', { item_id: item.id, output_index: index, input: item.input });
      emit('response.output_item.done', { output_index: index, item });
    } else if (item.type === 'web_search_call') {
      emit('response.output_item.added', { output_index: index, item: { id: item.id, type: item.type, status: 'in_progress' } });
      for (const step of ['in_progress', 'searching', 'completed']) emit(`response.web_search_call.${step}`, { output_index: index, item_id: item.id });
      emit('response.output_item.done', { output_index: index, item });
    } else {
      const part = item.content[0];
      emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } });
      emit('response.content_part.added', { item_id: item.id, output_index: index, content_index: 0, part: { ...part, annotations: [], text: '' } });
      textPieces.forEach((delta, at) => {
        emit('response.output_text.delta', { item_id: item.id, output_index: index, content_index: 0, delta, logprobs: [], obfuscation: randomHex(4) });
        // The citation is announced once the text it points into has streamed, as OpenAI's streams do.
        if (at === 0) part.annotations.forEach((annotation: Json, annotationIndex: number) => emit('response.output_text.annotation.added', { item_id: item.id, output_index: index, content_index: 0, annotation_index: annotationIndex, annotation }));
      });
      emit('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: part.text, logprobs: [] });
      emit('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part });
      emit('response.output_item.done', { output_index: index, item });
    }
  });
  emit(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
  return frames;
}

/** The parameters OpenAI's compaction takes (ResponseCompactParams); anything else is its "Unknown parameter". */
const COMPACT_PARAMETERS = new Set(['model', 'input', 'instructions', 'previous_response_id', 'prompt_cache_key', 'prompt_cache_options', 'prompt_cache_retention', 'service_tier']);

/** The encrypted content this upstream gives a compaction item: a keyed hash of its id, so one changed or forged is refused. */
export function encryptedCompaction(id: string): string {
  return `gAAAAA${createHash('sha256').update(`scripted-compaction:${id}`).digest('base64url')}`;
}

/**
 * A problem with a compaction item sent back in `input` (its encrypted content must be the one this upstream gave
 * it), or null; for /v1/responses and /v1/responses/compact alike.
 */
function compactionItemProblem(input: unknown): Problem | null {
  if (!Array.isArray(input)) return null;
  for (const [i, item] of input.entries()) {
    if (!isRecord(item) || item.type !== 'compaction') continue;
    if (typeof item.encrypted_content !== 'string' || item.encrypted_content !== encryptedCompaction(String(item.id))) {
      return { message: `The encrypted content for item ${String(item.id)} could not be verified.`, param: `input[${i}].encrypted_content`, code: 'invalid_encrypted_content' };
    }
  }
  return null;
}

/** A problem with a `POST /v1/responses/compact` body in OpenAI's words, or null (`stored` as for checkResponsesRequest). */
export function checkCompactRequest(body: unknown, stored: ReadonlySet<string> = new Set()): Problem | null {
  if (!isRecord(body)) return { message: 'Invalid body: expected an object.', param: null, code: null };
  for (const key of Object.keys(body)) if (!COMPACT_PARAMETERS.has(key)) return { message: `Unknown parameter: '${key}'.`, param: key, code: 'unknown_parameter' };
  if (typeof body.model !== 'string') return { message: "Missing required parameter: 'model'.", param: 'model', code: 'missing_required_parameter' };
  const previous = body.previous_response_id;
  if (typeof previous === 'string' && OWN_RESPONSE_ID.test(previous) && !stored.has(previous)) {
    return { message: `Previous response with id '${previous}' not found.`, param: 'previous_response_id', code: 'previous_response_not_found' };
  }
  return compactionItemProblem(body.input);
}

/**
 * OpenAI's answer to a compaction (CompactedResponse): the conversation's user messages as output items, then one
 * compaction item whose encrypted content stands for the rest, and the usage of the pass (the input counted as a
 * Response's would be, 20 output tokens of which 12 reasoning, cache details included).
 */
export function compactedResponse(body: Json): Json {
  const items: Json[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  const users = items.filter((item) => isRecord(item) && item.role === 'user' && (item.type === undefined || item.type === 'message'));
  const compaction = `cmp_${randomHex(24)}`;
  const inputTokens = inputTokensOf(body);
  return {
    id: `resp_${randomHex(24)}`,
    object: 'response.compaction',
    created_at: Math.floor(Date.now() / 1000),
    output: [
      ...users.map((item) => ({ id: `msg_${randomHex(24)}`, type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_text', text: textOf(item.content) }] })),
      { id: compaction, type: 'compaction', encrypted_content: encryptedCompaction(compaction), created_by: 'model' },
    ],
    usage: { input_tokens: inputTokens, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 12 }, total_tokens: inputTokens + 20 },
  };
}
