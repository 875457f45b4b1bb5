import type { ChatCompletion, ChatCompletionRequest, ChatMessage, CompletionUsage, EmbeddingsRequest, EmbeddingsResponse, NativeRequest, NativeStreamEvent } from '../../core/canonical.js';
import type { ProviderAdapter, StreamDecoder, Target, UpstreamRequest, VendorQuirks } from '../../core/provider.js';
import { createSSEDecoder } from '../sse-decoder.js';
import { invalidUpstreamBody, upstreamErrorFromBody } from '../upstream-error.js';
import { answeredError } from './answered-error.js';
import { jsonHeaders as upstreamHeaders, joinUrl } from '../upstream-request.js';
import { withFields } from '../../core/with-fields.js';
import { isRecord } from '../../core/is-record.js';
import { isChoiceList } from '../../core/answer-shape.js';
import { createChunkReader } from './stream-chunk.js';
import { flattenChoices, withThinkingChunk } from './content-parts.js';
import { failedGeneration, normalizeFinishReasons } from './finish-reasons.js';
import { withVendorMeaning } from './vendor-errors.js';
import { takesOnlyNineCharToolIds, withMistralToolCallIds } from './mistral-tool-ids.js';
import { createResponsesDecoder, RESPONSES_FORMAT, responseCompletion, responsesRequest, servesResponses } from './responses.js';
import { COMPACT_FORMAT, compactionCompletion, compactionRequest, servesCompaction } from './compaction.js';
import { COMPLETIONS_FORMAT, createLegacyCompletionsDecoder, legacyCompletion, legacyCompletionsRequest, servesCompletions } from './legacy-completions.js';

function applyQuirks(body: Record<string, unknown>, quirks: Pick<VendorQuirks, 'renameFields' | 'dropFields'> | undefined): void {
  if (!quirks) return;
  if (quirks.renameFields) {
    for (const [from, to] of Object.entries(quirks.renameFields)) {
      if (!(from in body)) continue;
      // null means "not set" in OpenAI's API, so an explicit null never shadows the client's real value.
      if (body[to] === undefined || body[to] === null) body[to] = body[from];
      delete body[from];
    }
  }
  if (quirks.dropFields) for (const field of quirks.dropFields) delete body[field];
}

/**
 * The OpenAI wire format. The canonical request already is OpenAI's, so a request passes through with only
 * the model renamed and the vendor's quirks applied; every other field, known or not, reaches the upstream.
 */
export const openAICompatibleAdapter: ProviderAdapter = {
  format: 'openai',

  // OpenAI's own API also serves the Responses API and its compaction: a Responses client's body goes there as it came.
  // Those that serve the legacy Completions API take its body as it came too (legacy-completions.ts).
  takesNative: (target, format) => servesResponses(target, format) || servesCompaction(target, format) || servesCompletions(target, format),

  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest {
    if (native?.format === RESPONSES_FORMAT) return responsesRequest(native, target);
    if (native?.format === COMPACT_FORMAT) return compactionRequest(native, target);
    if (native?.format === COMPLETIONS_FORMAT) return legacyCompletionsRequest(native, target);
    const body: Record<string, unknown> = { ...request, model: target.model };
    // Claude's signed thinking (thinking_blocks, handed back after a Claude turn) means nothing here, and a vendor
    // may refuse a field it does not know.
    if (request.messages.some((message) => message.thinking_blocks !== undefined)) body.messages = request.messages.map(withoutThinkingBlocks);
    const quirks = target.provider.vendor.quirks;
    if (quirks?.thinkingChunks) body.messages = (body.messages as ChatMessage[]).map(withThinkingChunk);
    if (takesOnlyNineCharToolIds(target.provider.vendor.id)) body.messages = (body.messages as ChatMessage[]).map(withMistralToolCallIds);
    // A stream is charged by the upstream's own count, reasoning tokens included: asked for whether or not the
    // client did (the OpenAI route then leaves out of the client's stream what it did not ask for).
    if (quirks?.noStreamOptions) {
      // The vendor refuses the field (Mistral's 422 extra_forbidden): whoever set it, the client or the Anthropic,
      // GenAI and Responses routes asking every stream for usage, it is not sent; the OpenAI route still shapes the
      // usage chunk the client asked for.
      delete body.stream_options;
    } else if (request.stream === true && request.stream_options?.include_usage !== true) {
      body.stream_options = { ...request.stream_options, include_usage: true };
    }
    applyQuirks(body, quirks);
    return {
      method: 'POST',
      url: joinUrl(target.provider.baseUrl, '/chat/completions'),
      headers: upstreamHeaders(target),
      body: JSON.stringify(body),
    };
  },

  parseChatResponse(body: unknown, target: Target, native?: NativeRequest | null): ChatCompletion {
    if (native?.format === RESPONSES_FORMAT) return responseCompletion(body, target);
    if (native?.format === COMPACT_FORMAT) return compactionCompletion(body, target);
    if (native?.format === COMPLETIONS_FORMAT) return legacyCompletion(body, target);
    // OpenRouter answers a failure that came once generation had begun with 200 and its error object in the body
    // (openrouter.ai/docs/api/reference/errors-and-debugging), as it sends one inside a stream: read the same way.
    if (isRecord(body) && !Array.isArray(body.choices) && body.error) throw answeredError(target, JSON.stringify(body), 'upstream_generation_error');
    if (!body || typeof body !== 'object' || !Array.isArray((body as ChatCompletion).choices)) {
      throw invalidUpstreamBody(target.provider.name, 'a chat completion without choices');
    }
    // Every stage reads the choices (spend, the cache, guardrails, the log): a server that sends `[null]` or a
    // `message` that is not an object has not answered, and the attempt fails as such (another target may answer).
    if (!isChoiceList((body as ChatCompletion).choices, 'message')) {
      throw invalidUpstreamBody(target.provider.name, 'a chat completion whose choices are not objects with a message object');
    }
    const failure = failedGeneration(target.provider.name, (body as ChatCompletion).choices);
    if (failure) throw failure;
    flattenChoices((body as ChatCompletion).choices, 'message');
    normalizeFinishReasons((body as ChatCompletion).choices);
    return body as ChatCompletion;
  },

  reportedUsage(body: unknown): CompletionUsage | null {
    // Only asked of an answer parseChatResponse refused (see failedGeneration): its usage is in OpenAI's shape.
    const usage = isRecord(body) ? body.usage : null;
    return isRecord(usage) && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number' ? (usage as unknown as CompletionUsage) : null;
  },

  createStreamDecoder(target: Target, _request: ChatCompletionRequest, native?: NativeRequest | null, verbatim = false) {
    if (native?.format === RESPONSES_FORMAT) return createResponsesDecoder(target);
    if (native?.format === COMPLETIONS_FORMAT) return createLegacyCompletionsDecoder(target);
    /** With `verbatim`, each event that became a chunk, as it came: the client's dialect may write it unchanged. */
    let kept: NativeStreamEvent[] = [];
    /** The usage an event reported, charged should the stream fail on a broken generation (see failedGeneration). */
    let usage: CompletionUsage | null = null;
    const readChunk = createChunkReader();
    /** For a vendor whose streams may end without [DONE] (finishEndsStream): the choices opened, and those finished. */
    const finishes = target.provider.vendor.quirks?.finishEndsStream ? { opened: new Set<unknown>(), finished: new Set<unknown>() } : null;
    const sse: StreamDecoder = createSSEDecoder((event) => {
      if (event.data === '[DONE]') return 'done';
      let parsed: unknown;
      try {
        parsed = JSON.parse(event.data);
      } catch {
        throw invalidUpstreamBody(target.provider.name, 'a stream event that is not JSON');
      }
      if (!parsed || typeof parsed !== 'object') return null;
      const record = parsed as Record<string, unknown>;
      // OpenAI reports failures inside an open stream as an event carrying `error`.
      if (record.error) throw answeredError(target, event.data, 'upstream_stream_error');
      if (!Array.isArray(record.choices)) return null;
      if (!isChoiceList(record.choices, 'delta')) {
        throw invalidUpstreamBody(target.provider.name, 'a stream event whose choices are not objects with a delta object');
      }
      const chunk = readChunk(record);
      if (isRecord(chunk.usage)) usage = chunk.usage;
      const failure = failedGeneration(target.provider.name, chunk.choices);
      if (failure) throw failure;
      if (finishes) {
        for (const choice of chunk.choices as unknown[]) {
          if (!isRecord(choice)) continue;
          finishes.opened.add(choice.index);
          if ((choice.finish_reason ?? null) !== null) finishes.finished.add(choice.index);
        }
      }
      if (verbatim) kept.push({ event: event.event ?? '', data: event.data });
      return chunk;
    });
    // Such a stream is whole once every choice it opened finished, [DONE] or not; else it was cut short, as any other.
    const decoder: StreamDecoder = finishes === null ? sse : {
      push: (bytes) => sse.push(bytes),
      end() {
        const tail = sse.end();
        const whole = finishes.opened.size > 0 && finishes.finished.size === finishes.opened.size;
        return tail.complete || !whole ? tail : { ...tail, complete: true };
      },
    };
    if (!verbatim) return withFields(decoder, { usageSoFar: () => usage });
    return withFields(decoder, {
      usageSoFar: () => usage,
      nativePerChunk: true,
      takeNative() {
        const out = kept;
        kept = [];
        return out;
      },
    });
  },

  parseError(status, headers, bodyText, target) {
    // The client of the OpenAI format reads the provider's own error object, its extra fields (Azure's innererror) too.
    return withVendorMeaning(upstreamErrorFromBody(target.provider.name, status, headers, bodyText, { keepFields: true }), status, target);
  },

  buildEmbeddingsRequest(request: EmbeddingsRequest, target: Target): UpstreamRequest {
    const body: Record<string, unknown> = { ...request, model: target.model };
    applyQuirks(body, target.provider.vendor.quirks?.embeddings);
    return {
      method: 'POST',
      url: joinUrl(target.provider.baseUrl, '/embeddings'),
      headers: upstreamHeaders(target),
      body: JSON.stringify(body),
    };
  },

  parseEmbeddingsResponse(body: unknown, target: Target, request?: EmbeddingsRequest): EmbeddingsResponse {
    const response = body as EmbeddingsResponse | null;
    if (!response || typeof response !== 'object' || !Array.isArray(response.data)) {
      throw invalidUpstreamBody(target.provider.name, 'an embeddings answer without data');
    }
    // Every route reads each entry's vector (re-encoding it, or as Gemini's values): an entry that is not an object
    // with a vector (floats, or base64 text) is no answer, and the attempt fails as such (another target may answer).
    for (const item of response.data as unknown[]) {
      const embedding = isRecord(item) ? item.embedding : undefined;
      if (!Array.isArray(embedding) && typeof embedding !== 'string') {
        throw invalidUpstreamBody(target.provider.name, 'an embeddings answer whose data holds an entry without an embedding');
      }
    }
    // One vector per input, as OpenAI answers: a client pairs them by position or index, so fewer (or more) is no answer.
    const inputs = request ? inputCount(request.input) : null;
    if (inputs !== null && response.data.length !== inputs) {
      throw invalidUpstreamBody(target.provider.name, `an embeddings answer with ${response.data.length} vectors for ${inputs} inputs`);
    }
    return response;
  },

  buildListModelsRequest(target: Target): UpstreamRequest {
    return { method: 'GET', url: joinUrl(target.provider.baseUrl, '/models'), headers: upstreamHeaders(target), body: undefined };
  },
};

/** How many vectors an embeddings input asks for: one for a string or a token array, one per item of a list of them. */
function inputCount(input: unknown): number | null {
  if (typeof input === 'string') return 1;
  if (!Array.isArray(input)) return null;
  return input.length > 0 && typeof input[0] === 'number' ? 1 : input.length;
}

function withoutThinkingBlocks(message: ChatMessage): ChatMessage {
  if (message.thinking_blocks === undefined) return message;
  const { thinking_blocks: _blocks, ...rest } = message;
  return rest as ChatMessage;
}
