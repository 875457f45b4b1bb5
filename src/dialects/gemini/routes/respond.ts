import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import { geminiEmbeddingsResponse } from '../embeddings.js';
import { googleErrorBody } from '../errors.js';
import { generateContentResponse, type GeminiReplyContext } from '../response.js';
import type { Json } from '../../../wire/gemini/shapes.js';
import { errorEvent, GeminiStreamRenderer, sseFrame } from '../stream.js';
import { geminiNative, nativeEventsText, nativeResponseJson } from '../native.js';
import type { ChatCompletion, EmbeddingsResponse, NativeStreamEvent, ResponseEvent } from '../../../core/canonical.js';
import type { GatewayError} from '../../../core/errors.js';
import { toGatewayError } from '../../../core/errors.js';
import type { RequestContext } from '../../../core/context.js';
import type { Log } from '../../../log.js';
import { JSON_HEADERS, lazyStreamWriter, serveAnswer, SSE_HEADERS, writeRenderedError } from '../../../http/answer-stream.js';
import { answerHeaders } from '../../../http/answer-headers.js';
import type { RenderedError } from '../../../http/render-error.js';
import { gatewayError } from '../../../core/errors.js';
import { SSE_COMMENT } from '../../../http/stream-keepalive.js';
import { answeredByGemini } from '../../../core/answered-by.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** A GatewayError in Google's shape, with the error's own headers (`retry-after` on 429). */
export function renderGoogleError(error: GatewayError): RenderedError {
  return { status: error.status, headers: { 'content-type': JSON_TYPE, ...error.headers }, body: JSON.stringify(googleErrorBody(error)) };
}

function baseHeaders(ctx: RequestContext): Record<string, string> {
  return answerHeaders(ctx);
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  writeRenderedError(res, baseHeaders(ctx), renderGoogleError(error));
}

/** How the answer is framed: one JSON body, Gemini's `alt=sse` events, or (without `alt=sse`) one JSON array written piecewise. */
export type GeminiAnswerShape = { kind: 'generate'; reply: GeminiReplyContext; framing: 'json' | 'sse' | 'array' } | { kind: 'embed'; batch: boolean };

/**
 * Writes a pipeline answer in Gemini's format (backpressure and hang-up as in answer-stream.ts). Errors before the
 * first byte get a status, errors after it a final event with Google's error object and then the end.
 */
export function respondGemini(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log, given: GeminiAnswerShape): Promise<void> {
  const shape: GeminiAnswerShape = given.kind === 'generate' ? { ...given, reply: { ...given.reply, geminiUpstream: () => answeredByGemini(ctx) } } : given;
  const renderer = shape.kind === 'generate' ? new GeminiStreamRenderer(shape.reply) : null;
  const arrayFraming = shape.kind === 'generate' && shape.framing === 'array';
  let events = 0;
  let completion: ChatCompletion | null = null;
  /** A Gemini upstream's own answer (native pass-through), sent instead of the rendered completion. */
  let nativeBody: Record<string, unknown> | null = null;
  /** The upstream's own text of `nativeBody`, when it came as text (see NativeAnswer.text). */
  let nativeText: string | undefined;
  /** Decided by the first chunk: whether the upstream's own events go to the client (else the rendered chunks). */
  let passThrough: boolean | null = null;
  let embeddings: EmbeddingsResponse | null = null;
  // Keep-alives in an SSE stream only: a JSON-array stream (no alt=sse) has no comment syntax its readers would skip.
  const writer = lazyStreamWriter(res, ctx, () => Object.assign(baseHeaders(ctx), arrayFraming ? JSON_HEADERS : SSE_HEADERS), arrayFraming ? null : SSE_COMMENT);
  const frame = (event: Json): string => {
    if (!arrayFraming) return sseFrame(event);
    return `${events++ === 0 ? '[' : ',\r\n'}${JSON.stringify(event)}`;
  };
  const sendText = writer.send;
  const send = (list: Json[]): void => {
    if (list.length > 0) sendText(list.map(frame).join(''));
  };
  const sendNative = (native: readonly NativeStreamEvent[]): void => {
    if (shape.kind !== 'generate' || native.length === 0) return;
    sendText(nativeEventsText(native, shape.reply, arrayFraming ? 'array' : 'sse', events === 0));
    events += native.length;
  };
  const finish = (): void => {
    res.end(arrayFraming ? (events === 0 ? '[]' : ']') : undefined);
  };
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      // Completions and embeddings are sent when the pipeline completes, after the response side (cost, logs) has settled.
      if (event.kind === 'completion') {
        completion = event.completion;
        nativeBody = geminiNative(event.native)?.body ?? null;
        nativeText = nativeBody ? geminiNative(event.native)?.text : undefined;
      } else if (event.kind === 'embeddings') embeddings = event.response;
      else if (renderer) {
        passThrough ??= geminiNative(event.native) !== null;
        // Passing through, the chunks are for the stages (cost, usage); the client gets the upstream's events.
        if (!passThrough) send(renderer.push(event.chunk));
        else if (event.native?.events) sendNative(event.native.events);
      }
    },
    error(err: unknown) {
      const error = toGatewayError(err);
      if (!writer.started) {
        writeError(res, ctx, error);
        return;
      }
      res.write(frame(errorEvent(error)));
      finish();
    },
    complete() {
      if (shape.kind === 'embed') {
        if (!embeddings) {
          writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
          return;
        }
        const body = JSON.stringify(geminiEmbeddingsResponse(embeddings, shape.batch));
        res.writeHead(200, Object.assign(baseHeaders(ctx), JSON_HEADERS));
        res.end(body);
        return;
      }
      if (completion && !ctx.stream) {
        // Rendered before the head goes: a rendering that throws is then the dialect's 500, not a connection cut without an answer.
        const body = nativeBody ? nativeResponseJson(nativeBody, shape.reply, nativeText) : JSON.stringify(generateContentResponse(completion, shape.reply));
        res.writeHead(200, Object.assign(baseHeaders(ctx), JSON_HEADERS));
        res.end(body);
        return;
      }
      if (passThrough === true) {
        // Every upstream event went out as it came; the usage and finish they carried were in them.
        if (writer.started) finish();
        else writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
        return;
      }
      // A streaming client whose answer came back whole (a stage answering from a store) gets it as one event.
      if (completion) send([generateContentResponse(completion, shape.reply)]);
      else if (renderer) send(renderer.end());
      if (!writer.started) {
        writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
        return;
      }
      finish();
    },
  }, writer.writes);
}
