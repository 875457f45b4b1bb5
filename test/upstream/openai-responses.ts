// Builders for chat.completion objects, chat.completion.chunk SSE frames and the model list, shaped like the
// OpenAI API reference. The answer is deterministic and derived from the request so tests can assert pass-through.
import { countWords, type ChatRequest } from './openai-request.js';
import { randomAlphanumeric, randomHex } from './random-ids.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; audio_tokens: number };
  completion_tokens_details: { reasoning_tokens: number; audio_tokens: number; accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

interface TextAnswer {
  kind: 'text';
  /** The content split into "tokens"; joined they give the content back exactly. */
  tokens: string[];
  finishReason: 'stop' | 'length';
}

interface ToolAnswer {
  kind: 'tool';
  callId: string;
  name: string;
  arguments: string;
}

type Answer = TextAnswer | ToolAnswer;

/** Everything a response needs, computed once and rendered either as one JSON body or as SSE frames. */
export interface Completion {
  id: string;
  created: number;
  request: ChatRequest;
  answers: Answer[];
  usage: Usage;
}

interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/** One fingerprint per process, like one backend configuration. */
const SYSTEM_FINGERPRINT = `fp_${randomHex(5)}`;

/**
 * Splits text into "tokens": each word with the whitespace before it ("echo: a b" -> "echo:", " a", " b").
 * Trailing whitespace sticks to the last token so that joining the tokens always gives the text back.
 */
export function splitTokens(text: string): string[] {
  const tokens: string[] = text.match(/\s*\S+/g) ?? [];
  let consumed = 0;
  for (const token of tokens) consumed += token.length;
  if (consumed < text.length) {
    const rest = text.slice(consumed);
    if (tokens.length > 0) tokens[tokens.length - 1] += rest;
    else tokens.push(rest);
  }
  return tokens;
}

/** Cuts the text before the earliest occurrence of any stop sequence. */
function applyStop(text: string, stop: readonly string[]): string {
  let end = text.length;
  for (const sequence of stop) {
    const at = text.indexOf(sequence);
    if (at !== -1 && at < end) end = at;
  }
  return text.slice(0, end);
}

function textAnswer(request: ChatRequest): TextAnswer {
  const full = request.jsonOutput ? JSON.stringify({ echo: request.echoSource }) : `echo: ${request.echoSource}`;
  const tokens = splitTokens(applyStop(full, request.stop));
  if (request.maxTokens !== null && tokens.length > request.maxTokens) {
    return { kind: 'text', tokens: tokens.slice(0, request.maxTokens), finishReason: 'length' };
  }
  return { kind: 'text', tokens, finishReason: 'stop' };
}

function answerTokens(answer: Answer): number {
  return answer.kind === 'text' ? answer.tokens.length : countWords(answer.arguments);
}

/** `reply`: the model's text as these pieces (each one streamed chunk), in place of the echo; null for the echo. */
export function planCompletion(request: ChatRequest, reply: readonly string[] | null = null): Completion {
  const answers: Answer[] = [];
  for (let i = 0; i < request.n; i++) {
    answers.push(
      request.toolName === null
        ? reply
          ? { kind: 'text', tokens: [...reply], finishReason: 'stop' }
          : textAnswer(request)
        : { kind: 'tool', callId: `call_${randomAlphanumeric(24)}`, name: request.toolName, arguments: JSON.stringify({ query: request.echoSource }) },
    );
  }
  let completionTokens = 0;
  for (const answer of answers) completionTokens += answerTokens(answer);
  return {
    id: `chatcmpl-${randomAlphanumeric(29)}`,
    created: Math.floor(Date.now() / 1000),
    request,
    answers,
    usage: {
      prompt_tokens: request.promptTokens,
      completion_tokens: completionTokens,
      total_tokens: request.promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
  };
}

/** Deterministic log probabilities: the chosen token first, then weaker made-up alternatives. */
function tokenLogprob(token: string, position: number, top: number): TokenLogprob {
  const logprob = -0.01 * ((position % 7) + 1);
  const bytes = [...Buffer.from(token, 'utf8')];
  const alternatives: TopLogprob[] = [];
  for (let i = 0; i < top; i++) {
    const alternative = i === 0 ? token : `${token}~${i}`;
    alternatives.push({ token: alternative, logprob: i === 0 ? logprob : logprob - i, bytes: i === 0 ? bytes : [...Buffer.from(alternative, 'utf8')] });
  }
  return { token, logprob, bytes, top_logprobs: alternatives };
}

function logprobsFor(tokens: readonly string[], firstPosition: number, request: ChatRequest) {
  return { content: tokens.map((token, i) => tokenLogprob(token, firstPosition + i, request.topLogprobs)), refusal: null };
}

function toolCall(answer: ToolAnswer) {
  return { id: answer.callId, type: 'function', function: { name: answer.name, arguments: answer.arguments } };
}

function choiceObject(answer: Answer, index: number, request: ChatRequest) {
  if (answer.kind === 'tool') {
    return { index, message: { role: 'assistant', content: null, tool_calls: [toolCall(answer)], refusal: null }, logprobs: null, finish_reason: 'tool_calls' };
  }
  return {
    index,
    message: { role: 'assistant', content: answer.tokens.join(''), refusal: null },
    logprobs: request.logprobs ? logprobsFor(answer.tokens, 0, request) : null,
    finish_reason: answer.finishReason,
  };
}

/** The non-streaming `chat.completion` body. */
export function completionJson(completion: Completion): string {
  const { request } = completion;
  return JSON.stringify({
    id: completion.id,
    object: 'chat.completion',
    created: completion.created,
    model: request.model,
    choices: completion.answers.map((answer, index) => choiceObject(answer, index, request)),
    usage: completion.usage,
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  });
}

interface ChunkChoice {
  index: number;
  delta: Record<string, unknown>;
  logprobs: ReturnType<typeof logprobsFor> | null;
  finish_reason: string | null;
}

/** Splits a tool call's arguments into about four pieces so clients must reassemble them. */
function argumentFragments(args: string): string[] {
  const size = Math.max(1, Math.ceil(args.length / 4));
  const fragments: string[] = [];
  for (let at = 0; at < args.length; at += size) fragments.push(args.slice(at, at + size));
  return fragments;
}

/** The deltas one choice streams, in order: role, content (or tool call), then the finish. */
function choiceDeltas(answer: Answer, index: number, request: ChatRequest): ChunkChoice[] {
  const delta = (d: Record<string, unknown>, finish: string | null = null): ChunkChoice => ({ index, delta: d, logprobs: null, finish_reason: finish });
  if (answer.kind === 'tool') {
    return [
      delta({ role: 'assistant', content: null, refusal: null }),
      delta({ tool_calls: [{ index: 0, id: answer.callId, type: 'function', function: { name: answer.name, arguments: '' } }] }),
      ...argumentFragments(answer.arguments).map((fragment) => delta({ tool_calls: [{ index: 0, function: { arguments: fragment } }] })),
      delta({}, 'tool_calls'),
    ];
  }
  const deltas = [delta({ role: 'assistant', content: '', refusal: null })];
  answer.tokens.forEach((token, position) => {
    const chunk = delta({ content: token });
    if (request.logprobs) chunk.logprobs = logprobsFor([token], position, request);
    deltas.push(chunk);
  });
  deltas.push(delta({}, answer.finishReason));
  return deltas;
}

export const DONE_FRAME = 'data: [DONE]\n\n';

/**
 * Every SSE frame of a streamed answer, ending with `data: [DONE]`. Choices of n>1 are interleaved step by step,
 * one choice per chunk. With include_usage every chunk carries `usage: null` and one extra chunk with
 * `choices: []` carries the usage; without it, chunks have no usage field at all.
 */
/**
 * Whose stream this is. `groq`: Groq's chat completion chunks have no `usage` field and its API takes no
 * `stream_options` (its spec calls the field unused); the usage of the whole request rides on the final chunk, the
 * one that finishes the answer, as `x_groq.usage` with Groq's timing fields beside the counts (ChatCompletionChunk.XGroq
 * in groq-typescript's src/resources/chat/completions.ts).
 */
export type StreamFlavor = 'openai' | 'groq' | 'mistral';

export function streamFrames(completion: Completion, flavor: StreamFlavor = 'openai'): string[] {
  if (flavor === 'groq') return groqStreamFrames(completion);
  if (flavor === 'mistral') return mistralStreamFrames(completion);
  const { request } = completion;
  const header = {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: request.model,
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
  // Every chunk shares the same leading fields: serialize them once and splice in the choices.
  const prefix = `data: ${JSON.stringify(header).slice(0, -1)},"choices":`;
  const suffix = request.includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  const chunk = (choice: ChunkChoice) => `${prefix}[${JSON.stringify(choice)}]${suffix}`;

  const perChoice = completion.answers.map((answer, index) => choiceDeltas(answer, index, request));
  const steps = Math.max(...perChoice.map((deltas) => deltas.length));
  const frames: string[] = [];
  for (let step = 0; step < steps; step++) {
    for (const deltas of perChoice) {
      const choice = deltas[step];
      if (choice) frames.push(chunk(choice));
    }
  }
  if (request.includeUsage) frames.push(`${prefix}[],"usage":${JSON.stringify(completion.usage)}}\n\n`);
  frames.push(DONE_FRAME);
  return frames;
}

/**
 * Mistral's chunks: no `stream_options` (its API refuses the field), and the usage of the whole request on the chunk
 * that finishes the answer, unasked (CompletionChunk.usage in mistralai/client-ts).
 */
function mistralStreamFrames(completion: Completion): string[] {
  const { request } = completion;
  const header = { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: request.model };
  const chunks = completion.answers.flatMap((answer, index) => choiceDeltas(answer, index, request)).map((choice) => ({ ...header, choices: [choice] }) as Record<string, unknown>);
  const { prompt_tokens, completion_tokens, total_tokens } = completion.usage;
  const last = chunks.at(-1);
  if (last) last.usage = { prompt_tokens, completion_tokens, total_tokens };
  return [...chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`), DONE_FRAME];
}

function groqStreamFrames(completion: Completion): string[] {
  const { request } = completion;
  const header = { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: request.model, system_fingerprint: SYSTEM_FINGERPRINT };
  const requestId = `req_${randomAlphanumeric(26).toLowerCase()}`;
  const perChoice = completion.answers.map((answer, index) => choiceDeltas(answer, index, request));
  const steps = Math.max(...perChoice.map((deltas) => deltas.length));
  const chunks: Record<string, unknown>[] = [];
  for (let step = 0; step < steps; step++) {
    for (const deltas of perChoice) {
      const choice = deltas[step];
      if (choice) chunks.push({ ...header, choices: [choice] });
    }
  }
  const first = chunks[0];
  if (first) first.x_groq = { id: requestId };
  const last = chunks.at(-1);
  const { prompt_tokens, completion_tokens, total_tokens } = completion.usage;
  const timing = { queue_time: 0.012, prompt_time: 0.003, completion_time: 0.021, total_time: 0.024 };
  if (last) last.x_groq = { id: requestId, usage: { ...timing, prompt_tokens, completion_tokens, total_tokens } };
  return [...chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`), DONE_FRAME];
}

const MODEL_IDS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'gpt-4.1-nano', 'o3-mini', 'text-embedding-3-small'];

/** GET /v1/models body, built once: it never changes. */
export const MODELS_JSON = JSON.stringify({
  object: 'list',
  data: MODEL_IDS.map((id, i) => ({ id, object: 'model', created: 1_715_367_049 + i * 86_400, owned_by: 'system' })),
});

/** A 200 body that claims to be JSON but is cut off mid-object. */
export function brokenJson(stream: boolean): string {
  return stream
    ? `data: {"id":"chatcmpl-broken","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"oops\n\n${DONE_FRAME}`
    : '{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"oops';
}
