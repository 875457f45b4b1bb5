import type { ChatCompletion, ChatCompletionChunk, CompletionUsage, NativeRequest, NativeStreamEvent } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import type { StreamDecoder, Target, UpstreamRequest } from '../../core/provider.js';
import { withFields } from '../../core/with-fields.js';
import { COMPLETIONS_FORMAT } from '../../wire/openai-completions/format.js';
import { createSSEDecoder } from '../sse-decoder.js';
import { invalidUpstreamBody } from '../upstream-error.js';
import { answeredError } from './answered-error.js';
import { jsonHeaders, joinUrl } from '../upstream-request.js';

export { COMPLETIONS_FORMAT };

/**
 * The vendors whose API serves the legacy Completions API (`POST {base}/completions`): OpenAI's own, the open-model
 * hosts and the local servers. DeepSeek serves it (its fill-in-the-middle completion) under its beta base URL.
 */
const SERVES_COMPLETIONS: ReadonlySet<string> = new Set(['openai', 'together', 'fireworks', 'openrouter', 'deepinfra', 'ollama', 'vllm', 'lmstudio', 'cerebras', 'deepseek']);

/** Whether the target takes a legacy Completions body itself. */
export function servesCompletions(target: Target, format: string): boolean {
  return format === COMPLETIONS_FORMAT && SERVES_COMPLETIONS.has(target.provider.vendor.id);
}

/**
 * Where the target's completions are: `{base}/completions`, but DeepSeek's (FIM) at `{base}/beta/completions`
 * (api-docs.deepseek.com/api/create-completion) unless the base URL already is its beta one.
 */
function completionsUrl(target: Target): string {
  const base = target.provider.baseUrl.replace(/\/+$/, '');
  if (target.provider.vendor.id !== 'deepseek' || /\/beta$/.test(base)) return joinUrl(base, '/completions');
  // `https://api.deepseek.com/v1` is its compatible alias of the root: the beta API is beside it, not under it.
  return joinUrl(base.replace(/\/v1$/, ''), '/beta/completions');
}

/**
 * The client's body for the upstream: only `model` changes, to the target's upstream name. A stream asks for the
 * upstream's usage (unless the vendor refuses `stream_options`), so the answer is charged by its count; the route
 * leaves that usage chunk out of the client's stream when the client did not ask for it.
 */
export function legacyCompletionsRequest(native: NativeRequest, target: Target): UpstreamRequest {
  const body: Record<string, unknown> = { ...native.body, model: target.model };
  const options = isRecord(body.stream_options) ? body.stream_options : null;
  if (body.stream === true && options?.include_usage === undefined && !target.provider.vendor.quirks?.noStreamOptions) {
    body.stream_options = { ...options, include_usage: true };
  }
  return { method: 'POST', url: completionsUrl(target), headers: jsonHeaders(target), body: JSON.stringify(body) };
}

function choiceOf(choice: unknown, key: 'message' | 'delta'): Record<string, unknown> {
  const record = choice as Record<string, unknown>;
  const text = typeof record.text === 'string' ? record.text : '';
  return {
    index: typeof record.index === 'number' ? record.index : 0,
    [key]: key === 'message' ? { role: 'assistant', content: text } : { content: text },
    finish_reason: record.finish_reason ?? null,
    logprobs: null,
  };
}

function usageOf(value: unknown): CompletionUsage | null {
  return isRecord(value) && typeof value.prompt_tokens === 'number' && typeof value.completion_tokens === 'number' ? (value as unknown as CompletionUsage) : null;
}

function areChoices(choices: unknown): choices is Record<string, unknown>[] {
  return Array.isArray(choices) && choices.every(isRecord);
}

/**
 * A `text_completion` answer as the canonical completion the stages read (each choice's text as the assistant's
 * content, its finish reason, the usage as it came). The client gets the answer as it came.
 */
export function legacyCompletion(body: unknown, target: Target): ChatCompletion {
  if (!isRecord(body) || !areChoices(body.choices)) throw invalidUpstreamBody(target.provider.name, 'a text completion without choices');
  return {
    id: typeof body.id === 'string' ? body.id : '',
    object: 'chat.completion',
    created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : target.model,
    choices: body.choices.map((choice) => choiceOf(choice, 'message')),
    usage: usageOf(body.usage),
  };
}

/**
 * Decodes a legacy Completions stream: each `text_completion` event becomes one canonical chunk (its texts as
 * deltas, its finish reasons, its usage), and the event itself is kept, one per chunk, for the route to write as
 * it came. `[DONE]` ends the stream; an `error` event fails it.
 */
export function createLegacyCompletionsDecoder(target: Target): StreamDecoder {
  let kept: NativeStreamEvent[] = [];
  let usage: CompletionUsage | null = null;
  const decoder = createSSEDecoder((event) => {
    if (event.data === '[DONE]') return 'done';
    let parsed: unknown;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      throw invalidUpstreamBody(target.provider.name, 'a stream event that is not JSON');
    }
    if (!isRecord(parsed)) return null;
    if (parsed.error) throw answeredError(target, event.data, 'upstream_stream_error');
    if (!Array.isArray(parsed.choices)) return null;
    if (!areChoices(parsed.choices)) throw invalidUpstreamBody(target.provider.name, 'a stream event whose choices are not objects');
    const chunkUsage = usageOf(parsed.usage);
    if (chunkUsage) usage = chunkUsage;
    const chunk: ChatCompletionChunk = {
      id: typeof parsed.id === 'string' ? parsed.id : '',
      object: 'chat.completion.chunk',
      created: typeof parsed.created === 'number' ? parsed.created : Math.floor(Date.now() / 1000),
      model: typeof parsed.model === 'string' ? parsed.model : target.model,
      choices: parsed.choices.map((choice) => choiceOf(choice, 'delta')),
      usage: chunkUsage,
    };
    kept.push({ event: event.event ?? '', data: event.data });
    return chunk;
  });
  return withFields(decoder, {
    usageSoFar: () => usage,
    nativePerChunk: true,
    takeNative() {
      const out = kept;
      kept = [];
      return out;
    },
  });
}
