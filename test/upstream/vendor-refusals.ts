// What some OpenAI-compatible vendors refuse that OpenAI takes, in their own words, so a gateway that sends it
// gets the vendor's 400, and what they do not read (vendorView). Used by the scripted OpenAI upstream when
// started with `vendor`.

type Json = Record<string, unknown>;

export type Vendor = 'xai' | 'openai' | 'deepseek' | 'mistral' | 'together' | 'moonshot';

export interface Refusal {
  status: number;
  body: string;
}

/** Model-name prefixes of the Grok models that take `reasoning_effort` (docs.x.ai/docs/guides/reasoning). */
const XAI_EFFORT_MODELS: Record<string, string[]> = {
  'grok-3-mini': ['low', 'high'],
  'grok-4.3': ['none', 'low', 'medium', 'high'],
  'grok-4.5': ['low', 'medium', 'high'],
};

/** Grok models that reason: they refuse presence_penalty, frequency_penalty and stop. */
function xaiReasons(model: string): boolean {
  return model.startsWith('grok-3-mini') || (model.startsWith('grok-4') && !model.includes('non-reasoning'));
}

function xai(body: Json): Refusal | null {
  const model = typeof body.model === 'string' ? body.model : '';
  const refuse = (parameter: string): Refusal => ({
    status: 400,
    body: JSON.stringify({ code: 'Client specified an invalid argument', error: `Model ${model} does not support parameter ${parameter}.` }),
  });
  if (body.reasoning_effort !== undefined && body.reasoning_effort !== null) {
    const prefix = Object.keys(XAI_EFFORT_MODELS).find((p) => model.startsWith(p));
    if (!prefix) return refuse('reasoningEffort');
    if (!XAI_EFFORT_MODELS[prefix]?.includes(String(body.reasoning_effort))) {
      return { status: 400, body: JSON.stringify({ code: 'Client specified an invalid argument', error: `Invalid reasoning effort ${JSON.stringify(body.reasoning_effort)} for model ${model}.` }) };
    }
  }
  if (xaiReasons(model)) {
    for (const [field, name] of [['presence_penalty', 'presencePenalty'], ['frequency_penalty', 'frequencyPenalty'], ['stop', 'stop']] as const) {
      if (body[field] !== undefined && body[field] !== null) return refuse(name);
    }
  }
  return null;
}

/** OpenAI's chat models (not its reasoning models) refuse reasoning_effort. */
const OPENAI_CHAT_MODELS = ['gpt-4', 'gpt-3.5', 'chatgpt', 'o1-mini', 'o1-preview', 'gpt-5-chat'];

/** Output limits of some of OpenAI's chat models (platform.openai.com/docs/models), their dated snapshots alike. */
const OPENAI_OUTPUT_LIMITS: Record<string, number> = { 'gpt-4o': 16384, 'gpt-4o-mini': 16384, 'gpt-4.1': 32768, 'gpt-4.1-mini': 32768, 'gpt-4-turbo': 4096 };

/** OpenAI's 400 for a limit above the model's output limit, in its words. */
function openaiTooLarge(body: Json, model: string): Refusal | null {
  const limit = Object.entries(OPENAI_OUTPUT_LIMITS).find(([id]) => model === id || model.startsWith(`${id}-20`))?.[1];
  if (limit === undefined) return null;
  for (const param of ['max_completion_tokens', 'max_tokens']) {
    const value = body[param];
    if (typeof value !== 'number' || value <= limit) continue;
    const message = `${param} is too large: ${value}. This model supports at most ${limit} completion tokens, whereas you provided ${value}.`;
    return { status: 400, body: JSON.stringify({ error: { message, type: 'invalid_request_error', param, code: 'invalid_value' } }) };
  }
  return null;
}

function openai(body: Json): Refusal | null {
  const model = typeof body.model === 'string' ? body.model : '';
  const tooLarge = openaiTooLarge(body, model);
  if (tooLarge) return tooLarge;
  if (body.reasoning_effort === undefined || body.reasoning_effort === null || !OPENAI_CHAT_MODELS.some((prefix) => model.startsWith(prefix))) return null;
  return {
    status: 400,
    body: JSON.stringify({ error: { message: "Unsupported parameter: 'reasoning_effort' is not supported with this model.", type: 'invalid_request_error', param: 'reasoning_effort', code: 'unsupported_parameter' } }),
  };
}

/**
 * DeepSeek's thinking mode (its models' default): an assistant turn with tool calls must carry its
 * reasoning_content in later requests (api-docs.deepseek.com/guides/thinking_mode#tool-calls).
 */
/** Output limits of DeepSeek's models (api-docs.deepseek.com/quick_start/pricing): deepseek-chat answers at most 8K. */
const DEEPSEEK_OUTPUT_LIMITS: Record<string, number> = { 'deepseek-chat': 8192 };

function deepseek(body: Json): Refusal | null {
  const limit = DEEPSEEK_OUTPUT_LIMITS[typeof body.model === 'string' ? body.model : ''];
  if (limit !== undefined && typeof body.max_tokens === 'number' && body.max_tokens > limit) {
    const message = `Invalid max_tokens value, the valid range of max_tokens is [1, ${limit}]`;
    return { status: 400, body: JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' } }) };
  }
  const thinkingOff = (body.thinking as Json | undefined)?.type === 'disabled';
  if (thinkingOff || !Array.isArray(body.messages)) return null;
  const index = (body.messages as Json[]).findIndex((message) => message.role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0 && typeof message.reasoning_content !== 'string');
  if (index === -1) return null;
  return {
    status: 400,
    body: JSON.stringify({
      error: {
        message: `Missing reasoning_content field in the assistant message at message index ${index}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls`,
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      },
    }),
  };
}

/**
 * Moonshot's Kimi models that think (kimi-k2.5 and kimi-k2.6 by default, kimi-k2-thinking always) want an assistant
 * turn's reasoning back with its tool calls (platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model), and
 * k2.5/k2.6 take an empty reasoning_content as missing: a single space passes (continuedev/continue#11600,
 * theopenco/llmgateway#2093, earendil-works/pi#4178, all checked against api.moonshot.ai).
 */
function moonshot(body: Json): Refusal | null {
  const model = typeof body.model === 'string' ? body.model : '';
  const emptyIsMissing = model.startsWith('kimi-k2.5') || model.startsWith('kimi-k2.6');
  const thinks = model.startsWith('kimi-k2-thinking') || (emptyIsMissing && (body.thinking as Json | undefined)?.type !== 'disabled');
  if (!thinks || !Array.isArray(body.messages)) return null;
  const index = (body.messages as Json[]).findIndex(
    (message) =>
      message.role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0 &&
      (typeof message.reasoning_content !== 'string' || (emptyIsMissing && message.reasoning_content === '')),
  );
  if (index === -1) return null;
  return {
    status: 400,
    body: JSON.stringify({ error: { message: `thinking is enabled but reasoning_content is missing in assistant tool call message at index ${index}`, type: 'invalid_request_error' } }),
  };
}

/**
 * The fields of Mistral's chat completion request (ChatCompletionRequest in mistralai/client-ts; `prompt_cache_key`,
 * which raises the chance of a prompt cache hit, from docs.mistral.ai's "Prompt caching"). Its API refuses
 * any other with a 422 whose `message` is not a string but pydantic's `{"detail": [...]}` list, beside OpenAI's
 * other fields at the top level: `{"object":"error","message":{"detail":[...]},"type":...,"param":null,"code":null}`.
 */
const MISTRAL_FIELDS = new Set([
  'model', 'temperature', 'top_p', 'max_tokens', 'stream', 'stop', 'random_seed', 'metadata', 'messages', 'response_format', 'tools',
  'tool_choice', 'presence_penalty', 'frequency_penalty', 'n', 'prediction', 'parallel_tool_calls', 'reasoning_effort', 'prompt_mode',
  'guardrails', 'safe_prompt', 'prompt_cache_key',
]);

/**
 * Fields of an assistant message Mistral refuses though OpenAI-compatible servers send them back: the reasoning other
 * vendors answer with (Mistral's own thinking travels in `content` as a ThinkChunk), 422 with
 * loc ["body","messages",N,"assistant","reasoning_content"] (seen by charmbracelet/crush#1590).
 */
const MISTRAL_REFUSED_ASSISTANT_FIELDS = ['reasoning_content', 'reasoning'];

/** Mistral's tool call ids: nine letters and digits, the ids it answers with and the only ones it takes back. */
export const MISTRAL_TOOL_CALL_ID = /^[a-zA-Z0-9]{9}$/;

/** The first tool call id in the history Mistral does not take (an assistant's call or a tool message's answer). */
function mistralBadToolCallId(messages: unknown[]): string | null {
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const { tool_call_id: answered, tool_calls: calls } = message as Json;
    const ids = [answered, ...(Array.isArray(calls) ? calls.map((call) => (call as Json | null)?.id) : [])];
    const bad = ids.find((id) => typeof id === 'string' && !MISTRAL_TOOL_CALL_ID.test(id));
    if (typeof bad === 'string') return bad;
  }
  return null;
}

function mistral(body: Json): Refusal | null {
  const extra: Array<{ loc: Array<string | number>; input: unknown }> = Object.keys(body)
    .filter((field) => !MISTRAL_FIELDS.has(field))
    .map((field) => ({ loc: ['body', field], input: body[field] }));
  if (Array.isArray(body.messages)) {
    (body.messages as unknown[]).forEach((message, index) => {
      if (typeof message !== 'object' || message === null || (message as Json).role !== 'assistant') return;
      for (const field of MISTRAL_REFUSED_ASSISTANT_FIELDS) {
        if (field in (message as Json)) extra.push({ loc: ['body', 'messages', index, 'assistant', field], input: (message as Json)[field] });
      }
    });
  }
  if (extra.length === 0) {
    // After the schema: an id of another format fails the request (seen by langchain-ai/langchain#24668, openclaw#57672).
    const badId = Array.isArray(body.messages) ? mistralBadToolCallId(body.messages) : null;
    if (badId === null) return null;
    return { status: 400, body: JSON.stringify({ object: 'error', message: `Tool call id was ${badId} but must be a-z, A-Z, 0-9, with a length of 9.`, type: 'invalid_function_call', param: null, code: '3280' }) };
  }
  const detail = extra.map(({ loc, input }) => ({ type: 'extra_forbidden', loc, msg: 'Extra inputs are not permitted', input, url: 'https://errors.pydantic.dev/2.10/v/extra_forbidden' }));
  return { status: 422, body: JSON.stringify({ object: 'error', message: { detail }, type: 'invalid_request_error', param: null, code: null }) };
}

/**
 * Mistral's embeddings request (docs.mistral.ai/api/endpoint/embeddings, EmbeddingRequest in mistralai/client-ts): the
 * vector size is `output_dimension` (OpenAI's `dimensions` is not in it), and, as on chat, any field outside the
 * schema is refused with extra_forbidden (measured against the live API: `dimensions` is refused so).
 */
const MISTRAL_EMBEDDING_FIELDS = new Set(['model', 'metadata', 'input', 'output_dimension', 'output_dtype', 'encoding_format']);

/** The vendor's refusal of this embeddings request, or null when it takes it. */
export function vendorEmbeddingsRefusal(vendor: Vendor, body: unknown): Refusal | null {
  if (vendor !== 'mistral' || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const extra = Object.keys(body).filter((field) => !MISTRAL_EMBEDDING_FIELDS.has(field));
  if (extra.length === 0) return null;
  const detail = extra.map((field) => ({ type: 'extra_forbidden', loc: ['body', field], msg: 'Extra inputs are not permitted', input: (body as Json)[field], url: 'https://errors.pydantic.dev/2.10/v/extra_forbidden' }));
  return { status: 422, body: JSON.stringify({ object: 'error', message: { detail }, type: 'invalid_request_error', param: null, code: null }) };
}

/** The embeddings request as the vendor reads it: Mistral's `output_dimension` is the size OpenAI calls `dimensions`. */
export function vendorEmbeddingsView(vendor: Vendor, body: unknown): unknown {
  if (vendor !== 'mistral' || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const { output_dimension: size, ...rest } = body as Json;
  return size === undefined ? rest : { ...rest, dimensions: size };
}

/** The vendor's 400 for this chat request, or null when it takes it. */
export function vendorRefusal(vendor: Vendor, body: unknown): Refusal | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  switch (vendor) {
    case 'xai':
      return xai(body as Json);
    case 'openai':
      return openai(body as Json);
    case 'deepseek':
      return deepseek(body as Json);
    case 'mistral':
      return mistral(body as Json);
    case 'moonshot':
      return moonshot(body as Json);
    case 'together':
      return null;
  }
}

/**
 * The request as the vendor reads it. Together AI's chat API has no `max_completion_tokens` (CompletionCreateParams
 * in togethercomputer/together-typescript names the limit `max_tokens` only): the field is not read, and the answer
 * runs to the model's default limit.
 */
export function vendorView(vendor: Vendor, body: unknown): unknown {
  if (vendor !== 'together' || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const { max_completion_tokens: _unread, ...read } = body as Json;
  return read;
}
