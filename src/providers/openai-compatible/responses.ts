import type { ChatCompletion, NativeRequest, NativeStreamEvent } from '../../core/canonical.js';
import { GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import type { StreamDecoder, Target, UpstreamRequest } from '../../core/provider.js';
import { completionOfResponse } from '../../wire/openai-responses/to-completion.js';
import { ResponsesChunker } from '../../wire/openai-responses/event-chunks.js';
import { withoutTranslatedReasoning } from '../../wire/openai-responses/translated-reasoning.js';
import { createSSEDecoder } from '../sse-decoder.js';
import { invalidUpstreamBody, upstreamErrorFromBody } from '../upstream-error.js';
import { jsonHeaders, joinUrl } from '../upstream-request.js';

import { RESPONSES_FORMAT } from '../../wire/openai-responses/format.js';

export { RESPONSES_FORMAT };

/**
 * Whether the target serves the Responses API itself: OpenAI's own API does; the other vendors of OpenAI's chat
 * format are not relied on to (a Responses client's request is translated to chat completions for them).
 */
export function servesResponses(target: Target, format: string): boolean {
  return format === RESPONSES_FORMAT && target.provider.vendor.id === 'openai';
}

/**
 * The client's own Responses body for the upstream: only `model` changes, to the target's upstream name (and the
 * reasoning items tollgate wrote for another provider's answer are left out, see withoutTranslatedReasoning). Everything
 * else (previous_response_id, store, include, reasoning items with their encrypted content, built-in tools, fields
 * OpenAI adds later) goes as the client wrote it, so OpenAI judges the request, not tollgate.
 */
export function responsesRequest(native: NativeRequest, target: Target): UpstreamRequest {
  return { method: 'POST', url: joinUrl(target.provider.baseUrl, '/responses'), headers: jsonHeaders(target), body: JSON.stringify({ ...withoutTranslatedReasoning(native.body), model: target.model }) };
}

/** A Responses API answer (a Response object) as the canonical completion the stages read. */
export function responseCompletion(body: unknown, target: Target): ChatCompletion {
  if (!isRecord(body) || !Array.isArray(body.output)) throw invalidUpstreamBody(target.provider.name, 'a response without output');
  return completionOfResponse(body);
}

/** The failure a `response.failed` or `error` event reports, as the 502 it is (another target may answer). */
function streamFailure(target: Target, event: Record<string, unknown>, data: string): GatewayError {
  const inner = isRecord(event.response) && isRecord(event.response.error) ? event.response.error : event;
  const failure = upstreamErrorFromBody(target.provider.name, 500, {}, JSON.stringify({ error: { message: inner.message ?? data, type: 'server_error', code: inner.code ?? null } }));
  return new GatewayError({ status: 502, type: failure.type, code: failure.code ?? 'upstream_stream_error', message: failure.message, retryable: true });
}

/**
 * Decodes a Responses API stream: every event is kept as it came (the client's dialect writes them through, see
 * takeNative), and read into canonical chunks for the stages. The stream ends properly with `response.completed`
 * or `response.incomplete` (it has no `[DONE]`); `response.failed` and `error` fail the attempt.
 */
export function createResponsesDecoder(target: Target): StreamDecoder {
  const chunker = new ResponsesChunker();
  let kept: NativeStreamEvent[] = [];
  const decoder = createSSEDecoder((event) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      throw invalidUpstreamBody(target.provider.name, 'a stream event that is not JSON');
    }
    if (!isRecord(parsed)) return null;
    if (parsed.type === 'response.failed' || parsed.type === 'error') throw streamFailure(target, parsed, event.data);
    kept.push({ event: event.event ?? '', data: event.data });
    return chunker.push(parsed);
  });
  return {
    push: (bytes) => decoder.push(bytes),
    end() {
      const tail = decoder.end();
      return { ...tail, complete: chunker.finished };
    },
    takeNative() {
      const out = kept;
      kept = [];
      return out;
    },
  };
}
