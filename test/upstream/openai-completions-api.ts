// OpenAI's legacy Completions API (`POST /v1/completions`, the SDK's `client.completions.create`) for the scripted
// upstream: a `text_completion` object, or a stream of them, as OpenAI's API reference documents them. The prompt is
// a string, strings, a token array or token arrays; `echo` puts the prompt before the text, `suffix` is taken (a
// fill-in-the-middle completion), `logprobs: n` gives each choice's log probability object, `stop` and `max_tokens`
// end the text early, `n` gives that many choices a prompt; a stream asked `stream_options.include_usage` ends with a
// usage chunk without choices. An unknown parameter is refused as OpenAI refuses it.
import type { LiveExchange } from './exchange.js';
import { deliverJson, deliverStream, type UpstreamMode } from './modes.js';
import { INVALID_JSON_MESSAGE, invalidRequest } from './openai-errors.js';
import { newRequestId, standardHeaders, type HeaderMap } from './openai-headers.js';
import { isRecord } from './openai-request.js';
import { randomAlphanumeric } from './random-ids.js';
import { JSON_TYPE, sendError, sendRaw, sendScriptedError, SSE_HEADERS } from './respond.js';

/** The parameters OpenAI's reference lists for POST /v1/completions. */
const KNOWN = new Set(['model', 'prompt', 'best_of', 'echo', 'frequency_penalty', 'logit_bias', 'logprobs', 'max_tokens', 'n', 'presence_penalty', 'seed', 'stop', 'stream', 'stream_options', 'suffix', 'temperature', 'top_p', 'user']);

/** The answer the text of a prompt gets (split into tokens as a model's would be), unless a `reply` mode scripts another. */
const DEFAULT_PIECES = [' The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.'];

/** What one upstream answered on this path, in order: the JSON body, or the stream's frames as written. */
export interface SentCompletion {
  body: Record<string, any> | null;
  frames: string[] | null;
}

const sent = new WeakMap<object, SentCompletion[]>();

/** The legacy completions `owner` (a scripted upstream) answered, oldest first. */
export function sentCompletions(owner: object): SentCompletion[] {
  let list = sent.get(owner);
  if (!list) sent.set(owner, (list = []));
  return list;
}

function problem(message: string, param: string | null = null, code: string | null = null) {
  return invalidRequest({ message, param, code });
}

function isTokens(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((item) => Number.isInteger(item));
}

/** The prompts of the body (one per choice group), or the refusal. */
function promptsOf(prompt: unknown): string[] | number[][] | null {
  if (typeof prompt === 'string') return [prompt];
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((item) => typeof item === 'string')) return prompt as string[];
  if (isTokens(prompt) && prompt.length > 0) return [prompt];
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every(isTokens)) return prompt as number[][];
  return null;
}

function checkRequest(body: unknown): ReturnType<typeof problem> | null {
  if (!isRecord(body)) return problem(INVALID_JSON_MESSAGE);
  for (const key of Object.keys(body)) if (!KNOWN.has(key)) return problem(`Unrecognized request argument supplied: ${key}`);
  if (typeof body.model !== 'string' || body.model === '') return problem('you must provide a model parameter');
  if (body.prompt === undefined || body.prompt === null) return problem("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  if (promptsOf(body.prompt) === null) return problem("Invalid type for 'prompt': expected a string, an array of strings, an array of tokens or an array of token arrays.", 'prompt', 'invalid_type');
  if (body.suffix !== undefined && body.suffix !== null && typeof body.suffix !== 'string') return problem("Invalid type for 'suffix': expected a string.", 'suffix', 'invalid_type');
  if (body.echo !== undefined && body.echo !== null && typeof body.echo !== 'boolean') return problem("Invalid type for 'echo': expected a boolean.", 'echo', 'invalid_type');
  if (body.logprobs !== undefined && body.logprobs !== null && (!Number.isInteger(body.logprobs) || (body.logprobs as number) < 0 || (body.logprobs as number) > 5)) {
    return problem("Invalid 'logprobs': integer above maximum value. Expected a value <= 5.", 'logprobs', 'integer_above_max_value');
  }
  if (body.max_tokens !== undefined && body.max_tokens !== null && (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 0)) {
    return problem("Invalid 'max_tokens': expected a non-negative integer.", 'max_tokens', 'invalid_value');
  }
  if (body.n !== undefined && body.n !== null && (!Number.isInteger(body.n) || (body.n as number) < 1 || (body.n as number) > 128)) return problem("Invalid 'n': expected an integer from 1 to 128.", 'n', 'invalid_value');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') return problem("Invalid type for 'stream': expected a boolean.", 'stream', 'invalid_type');
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    return problem("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options', 'invalid_value');
  }
  if (body.stream === true && body.best_of !== undefined && body.best_of !== null && body.best_of !== 1) return problem('Cannot stream results with best_of > 1.', 'best_of');
  return null;
}

/** A rough token count of a prompt: its words, or its token array's length. */
function promptTokens(prompt: string | number[]): number {
  return typeof prompt === 'string' ? Math.max(1, prompt.split(/\s+/).filter(Boolean).length) : prompt.length;
}

interface Choice {
  index: number;
  pieces: string[];
  echo: string;
  finish: 'stop' | 'length';
}

/** The pieces the model writes: cut at the first `stop` string (finish stop) or at max_tokens (finish length). */
function generate(pieces: readonly string[], maxTokens: number, stops: string[]): { pieces: string[]; finish: 'stop' | 'length' } {
  const out: string[] = [];
  let text = '';
  for (const piece of pieces) {
    const next = text + piece;
    const at = stops.map((stop) => next.indexOf(stop)).filter((index) => index !== -1).sort((a, b) => a - b)[0];
    if (at !== undefined) {
      const kept = next.slice(text.length, at);
      if (kept !== '') out.push(kept);
      return { pieces: out, finish: 'stop' };
    }
    if (out.length >= maxTokens) return { pieces: out, finish: 'length' };
    out.push(piece);
    text = next;
  }
  return { pieces: out, finish: 'stop' };
}

/** OpenAI's logprobs object for `tokens` (the echo's text, when echoed, first), starting at character `offset`. */
function logprobsOf(tokens: readonly string[], top: number, offset: number): Record<string, unknown> {
  const textOffset: number[] = [];
  let at = offset;
  for (const token of tokens) {
    textOffset.push(at);
    at += token.length;
  }
  const tokenLogprobs = tokens.map((_token, i) => -Math.round((0.05 + i * 0.01) * 1e6) / 1e6);
  const topLogprobs = tokens.map((token, i) => {
    const entry: Record<string, number> = { [token]: tokenLogprobs[i] as number };
    for (let k = 1; k < top; k++) entry[`${token.trim() || '_'}#${k}`] = (tokenLogprobs[i] as number) - k;
    return entry;
  });
  return { tokens: [...tokens], token_logprobs: tokenLogprobs, top_logprobs: topLogprobs, text_offset: textOffset };
}

/**
 * Answers a legacy completion: the scripted modes (errors, resets, raw bodies, slow or broken deliveries) apply as
 * for chat, `reply` scripts the text's pieces. `owner` records what was sent (see sentCompletions), null for none.
 */
export async function answerLegacyCompletions(
  exchange: LiveExchange,
  body: unknown,
  mode: UpstreamMode,
  options: { owner: object | null; chunkDelayMs: number; consume: (tokens: number) => HeaderMap },
): Promise<void> {
  const model = isRecord(body) && typeof body.model === 'string' ? body.model : 'gpt-3.5-turbo-instruct';
  if (mode.kind === 'error') return sendScriptedError(exchange, mode, model);
  if (mode.kind === 'reset') return exchange.reset();
  if (mode.kind === 'raw') return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': JSON_TYPE }, mode.body);
  if (mode.kind === 'slow-headers' && !(await exchange.sleep(mode.delayMs))) return;
  const refusal = checkRequest(body);
  if (refusal) return sendError(exchange, 400, refusal);
  const request = body as Record<string, any>;
  const prompts = promptsOf(request.prompt) as Array<string | number[]>;
  const n = typeof request.n === 'number' ? request.n : 1;
  const maxTokens = typeof request.max_tokens === 'number' ? request.max_tokens : 16;
  const stops = typeof request.stop === 'string' ? [request.stop] : Array.isArray(request.stop) ? (request.stop as string[]) : [];
  const top = typeof request.logprobs === 'number' ? request.logprobs : null;
  const scripted = mode.kind === 'reply' ? mode.pieces : DEFAULT_PIECES;
  const choices: Choice[] = [];
  for (const prompt of prompts) {
    for (let k = 0; k < n; k++) {
      const { pieces, finish } = generate(scripted, maxTokens, stops);
      // A token prompt echoes as the text of its tokens (here, each id written out).
      const echo = request.echo === true ? (typeof prompt === 'string' ? prompt : prompt.map((id) => `<${id}>`).join('')) : '';
      choices.push({ index: choices.length, pieces, echo, finish });
    }
  }
  const completionTokens = choices.reduce((sum, choice) => sum + choice.pieces.length, 0);
  const promptCount = prompts.reduce((sum: number, prompt) => sum + promptTokens(prompt), 0);
  const usage = { prompt_tokens: promptCount, completion_tokens: completionTokens, total_tokens: promptCount + completionTokens };
  const id = `cmpl-${randomAlphanumeric(29)}`;
  const created = Math.floor(Date.now() / 1000);
  const headers = { ...standardHeaders(newRequestId(), exchange.startedAt), ...options.consume(usage.total_tokens) };
  const record = options.owner ? sentCompletions(options.owner) : null;
  if (mode.kind === 'bad-json') return sendRaw(exchange, 200, request.stream === true ? SSE_HEADERS : { 'content-type': JSON_TYPE }, request.stream === true ? 'data: {"id":\n\n' : '{"id":');

  if (request.stream !== true) {
    const answer = {
      id,
      object: 'text_completion',
      created,
      model,
      choices: choices.map((choice) => {
        const text = choice.echo + choice.pieces.join('');
        const tokens = choice.echo === '' ? choice.pieces : [choice.echo, ...choice.pieces];
        return { text, index: choice.index, logprobs: top === null ? null : logprobsOf(tokens, top, 0), finish_reason: choice.finish };
      }),
      usage,
    };
    record?.push({ body: answer, frames: null });
    return deliverJson(exchange, { 'content-type': JSON_TYPE, ...headers }, JSON.stringify(answer), mode);
  }
  const frame = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}): string =>
    `data: ${JSON.stringify({ id, object: 'text_completion', created, choices: choice ? [choice] : [], model, ...extra })}\n\n`;
  const frames: string[] = [];
  for (const choice of choices) {
    let offset = 0;
    const tokens = choice.echo === '' ? choice.pieces : [choice.echo, ...choice.pieces];
    for (const token of tokens) {
      frames.push(frame({ text: token, index: choice.index, logprobs: top === null ? null : logprobsOf([token], top, offset), finish_reason: null }));
      offset += token.length;
    }
    frames.push(frame({ text: '', index: choice.index, logprobs: null, finish_reason: choice.finish }));
  }
  if (isRecord(request.stream_options) && request.stream_options.include_usage === true) frames.push(frame(null, { usage }));
  frames.push('data: [DONE]\n\n');
  record?.push({ body: null, frames });
  return deliverStream(exchange, { ...SSE_HEADERS, ...headers }, frames, mode, options.chunkDelayMs);
}
