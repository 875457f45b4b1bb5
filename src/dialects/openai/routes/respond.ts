import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import { openAINativeFramer, openAINativeJson } from '../native.js';
import { createStreamUsageShaper, needsUsageShaping, withoutUsage, type StreamUsageShaper } from '../stream-usage.js';
import type { ChatCompletion, ChatCompletionChunk, EmbeddingsResponse, NativeAnswer, ResponseEvent } from '../../../core/canonical.js';
import type { GatewayError} from '../../../core/errors.js';
import { toGatewayError } from '../../../core/errors.js';
import type { RequestContext } from '../../../core/context.js';
import type { Log } from '../../../log.js';
import { JSON_HEADERS, serveAnswer, SSE_HEADERS, TickWriter, writeRenderedError } from '../../../http/answer-stream.js';
import { answerHeaders } from '../../../http/answer-headers.js';
import { openAIErrorBody, renderOpenAIError } from '../../../http/render-error.js';
import { SSE_COMMENT, streamKeepAlive } from '../../../http/stream-keepalive.js';
import { gatewayError } from '../../../core/errors.js';

/**
 * Headers a mount adds to its answers (LiteLLM's `x-litellm-*`): `settled` says whether the request's cost is
 * known (a whole answer, sent after the spend stage settled it), not yet when a stream's headers go out.
 */
export type AnswerHeaders = (ctx: RequestContext, settled: boolean) => Record<string, string>;

function baseHeaders(ctx: RequestContext, extra: AnswerHeaders | undefined, settled = false): Record<string, string> {
  const headers = answerHeaders(ctx);
  return extra ? Object.assign(headers, extra(ctx, settled)) : headers;
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError, extra: AnswerHeaders | undefined): void {
  writeRenderedError(res, baseHeaders(ctx, extra), renderOpenAIError(error));
}

/**
 * OpenAI's usage rules for a stream translated from another vendor's format; null (nothing to do per chunk) for
 * an OpenAI-format upstream, whose stream is the provider's own answer, and for answers no upstream gave.
 */
function usageShaperFor(ctx: RequestContext): StreamUsageShaper | null {
  const provider = ctx.upstream ? ctx.config.providers.get(ctx.upstream.provider) : undefined;
  if (!provider || !needsUsageShaping(provider.vendor.format)) return null;
  return createStreamUsageShaper(ctx.operation === 'chat' && ctx.request.stream_options?.include_usage === true);
}

/** The field OpenAI writes on every chunk of a stream asked for usage, as its compact JSON spells it. */
const NULL_USAGE = ',"usage":null';

function sseEvent(chunk: ChatCompletionChunk): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/**
 * Writes a pipeline answer in OpenAI's format: JSON for a completion, SSE for a stream. Errors before the first
 * byte get a proper status; errors after it become an SSE error event followed by a clean end, never a stream
 * that looks complete.
 */
export function respondOpenAI(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log, extra?: AnswerHeaders): Promise<void> {
  let started = false;
  let completion: ChatCompletion | EmbeddingsResponse | null = null;
  /** The upstream's own text of that answer, when no stage replaced it (see openAINativeJson). */
  let completionText: string | null = null;
  let usage: StreamUsageShaper | null = null;
  let shaperChosen = false;
  let framer: ((native: NativeAnswer | undefined) => string | null) | null = null;
  const clientAskedUsage = ctx.operation === 'chat' && ctx.request.stream_options?.include_usage === true;
  const open = (): void => {
    res.writeHead(200, Object.assign(baseHeaders(ctx, extra), SSE_HEADERS));
    started = true;
  };
  const writes = new TickWriter(res, streamKeepAlive(res, ctx, SSE_COMMENT, open));
  const write = (text: string): void => writes.write(text);
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      if (event.kind !== 'chunk') {
        // Sent when the pipeline completes, after the response side (cost, logs) has settled.
        completion = event.kind === 'completion' ? event.completion : event.response;
        completionText = openAINativeJson(event.native, ctx.responseModel);
        return;
      }
      if (!started) open();
      if (!shaperChosen) {
        shaperChosen = true;
        // Chunks flow only once an attempt has answered, so the upstream that serves the stream is known here (and
        // not yet when a keep-alive opened the stream: a fallback may serve it).
        usage = usageShaperFor(ctx);
      }
      // The usage an OpenAI-format upstream was asked for by the gateway (to charge by its count), not by the client.
      const hidden = usage === null && !clientAskedUsage;
      if (hidden && event.chunk.choices.length === 0 && event.chunk.usage) return;
      // An OpenAI upstream's own bytes when no stage rewrote the chunk (a stage that does drops `native`).
      if (event.native) {
        framer ??= openAINativeFramer(ctx.responseModel);
        const own = usage ? null : framer(event.native);
        if (own !== null) {
          if (!hidden || event.chunk.usage !== null) return write(own);
          // `"usage":null` on every chunk comes with include_usage: left out, as without it.
          const at = own.indexOf(NULL_USAGE);
          if (at !== -1) return write(own.slice(0, at) + own.slice(at + NULL_USAGE.length));
        }
      }
      const chunk = usage ? usage.shape(event.chunk) : hidden && event.chunk.usage === null ? withoutUsage(event.chunk) : event.chunk;
      if (chunk) write(sseEvent(chunk));
    },
    error(err: unknown) {
      const error = toGatewayError(err);
      if (!started) writeError(res, ctx, error, extra);
      else if (ctx.stream) res.end(`data: ${JSON.stringify(openAIErrorBody(error))}\n\n`);
      else res.destroy();
    },
    complete() {
      if (completion) {
        res.writeHead(200, Object.assign(baseHeaders(ctx, extra, true), JSON_HEADERS));
        res.end(completionText ?? JSON.stringify(completion));
      } else if (!started) {
        writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'), extra);
      } else {
        const last = usage?.final(ctx.usage);
        res.end(last ? `${sseEvent(last)}data: [DONE]\n\n` : 'data: [DONE]\n\n');
      }
    },
  }, writes);
}
