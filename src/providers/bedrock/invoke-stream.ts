import type { ChatCompletionChunk, ChatCompletionRequest } from '../../core/canonical.js';
import { GatewayError } from '../../core/errors.js';
import type { StreamDecoder } from '../../core/provider.js';
import { isRecord } from '../../core/is-record.js';
import { createAnthropicStreamDecoder } from '../anthropic/index.js';
import { EventStreamReader, invalidStream } from './event-stream.js';

/** The Anthropic event a `chunk` frame carries: its payload is `{"bytes": "<base64 of the event's JSON>"}`. */
function eventJson(provider: string, payload: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    throw invalidStream(provider, 'a chunk event that is not JSON');
  }
  if (!isRecord(parsed) || typeof parsed.bytes !== 'string') throw invalidStream(provider, 'a chunk event without its bytes');
  return Buffer.from(parsed.bytes, 'base64').toString('utf8');
}

/**
 * Decodes InvokeModelWithResponseStream's answer for Claude: an AWS event stream whose `chunk` events each carry one
 * Anthropic stream event's JSON (message_start ... message_stop, the last with Bedrock's invocation metrics). Each
 * is handed to Anthropic's own decoder as the SSE event it is, so the canonical chunks, the usage and, in native
 * pass-through (`keepEvents`), the events the client gets as they came are the same as from Anthropic's API.
 * Exceptions inside the stream (throttlingException, modelStreamErrorException, ...) fail it with their status.
 */
export function createInvokeStreamDecoder(provider: string, request: ChatCompletionRequest, keepEvents: boolean): StreamDecoder {
  const claude = createAnthropicStreamDecoder(provider, request, { keepEvents });
  let out: ChatCompletionChunk[] = [];
  let failure: GatewayError | null = null;
  const reader = new EventStreamReader(provider, (type, payload) => {
    if (type !== 'chunk') return;
    // One event, one SSE frame: data the JSON spread over lines goes as as many data lines, which SSE joins again.
    const json = eventJson(provider, payload);
    out.push(...claude.push(Buffer.from(`data: ${json.replace(/\r\n|\r|\n/g, '\ndata: ')}\n\n`)));
  });

  function drain(bytes: Buffer): ChatCompletionChunk[] {
    out = [];
    try {
      reader.push(bytes);
    } catch (err) {
      failure = err instanceof GatewayError ? err : invalidStream(provider, 'an unreadable event stream');
      // Whatever was decoded before the failure still reaches the client; the failure ends the stream next.
      if (out.length === 0) throw failure;
    }
    return out;
  }

  const decoder: StreamDecoder = {
    push(bytes) {
      if (failure) throw failure;
      return drain(bytes);
    },
    end() {
      if (failure) throw failure;
      const chunks = drain(Buffer.alloc(0));
      if (failure) throw failure;
      const tail = claude.end();
      return { chunks: [...chunks, ...tail.chunks], complete: tail.complete && reader.pendingBytes === 0 };
    },
    usageSoFar: () => claude.usageSoFar?.() ?? null,
  };
  if (claude.takeNative) decoder.takeNative = claude.takeNative;
  return decoder;
}
