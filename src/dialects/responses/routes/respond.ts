import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import type { ChatCompletion, ResponseEvent } from '../../../core/canonical.js';
import type { GatewayError } from '../../../core/errors.js';
import { gatewayError, toGatewayError } from '../../../core/errors.js';
import type { RequestContext } from '../../../core/context.js';
import type { Log } from '../../../log.js';
import { chunksOfCompletion } from '../../anthropic/completion-chunks.js';
import { inClientNames } from '../client-names.js';
import { nativeFrames, nativeResponseJson, NativeStreamPosition, responsesNative } from '../native.js';
import { responseOf, type ReplyContext } from '../response.js';
import { failureEvents, ResponsesStreamRenderer, sseFrame } from '../stream.js';
import { JSON_HEADERS, lazyStreamWriter, serveAnswer, SSE_HEADERS, writeRenderedError } from '../../../http/answer-stream.js';
import { answerHeaders } from '../../../http/answer-headers.js';
import { renderOpenAIError } from '../../../http/render-error.js';
import { SSE_COMMENT } from '../../../http/stream-keepalive.js';

function baseHeaders(ctx: RequestContext): Record<string, string> {
  return answerHeaders(ctx);
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  writeRenderedError(res, baseHeaders(ctx), renderOpenAIError(error));
}

/**
 * Writes a pipeline answer as the Responses API's: a Response as JSON, or its event stream; an upstream's own
 * Response or events when they came along (native pass-through, an upstream serving the Responses API), else
 * rendered from the canonical answer. Errors before the first byte get a status and OpenAI's error shape; errors
 * after it an `error` and a `response.failed` event, so no client mistakes a broken answer for a whole one.
 */
/** What keeps a Response once it is whole (see keeper.ts): one tollgate rendered, or the id of one an upstream kept. */
export interface ResponseKeeper {
  rendered(response: Record<string, unknown>): void;
  native(id: string): void;
}

/** The Response a stream's last events carry (response.completed or .incomplete), if they carry one. */
function finalResponse(events: ReadonlyArray<Record<string, unknown>>): Record<string, unknown> | null {
  const last = events.at(-1);
  return last && (last.type === 'response.completed' || last.type === 'response.incomplete') && typeof last.response === 'object' ? (last.response as Record<string, unknown>) : null;
}

export function respondResponses(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log, reply: ReplyContext, keeper: ResponseKeeper | null = null): Promise<void> {
  const renderer = new ResponsesStreamRenderer(reply);
  let completion: ChatCompletion | null = null;
  /** The upstream's own Response (native pass-through) and its text, sent instead of the rendered completion. */
  let nativeBody: Record<string, unknown> | null = null;
  let nativeText: string | undefined;
  /** Whether the stream passes an upstream's own events through; its first chunk decides (null before it). */
  let passThrough: boolean | null = null;
  /** Where a passed-through stream stands, should it fail after it began. */
  const position = new NativeStreamPosition(reply.model);
  const writer = lazyStreamWriter(res, ctx, () => Object.assign(baseHeaders(ctx), SSE_HEADERS), SSE_COMMENT);
  const sendText = writer.send;
  const send = (events: Array<Record<string, unknown>>): void => {
    if (events.length > 0) sendText(events.map(sseFrame).join(''));
  };
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      if (event.kind === 'completion') {
        // Sent when the pipeline completes, after the response side (cost, logs) has settled.
        completion = event.completion;
        const native = responsesNative(event.native);
        nativeBody = native?.body ?? null;
        nativeText = nativeBody ? native?.text : undefined;
      } else if (event.kind === 'chunk') {
        passThrough ??= responsesNative(event.native)?.events !== undefined;
        // Passing through, the chunks are for the stages (cost, usage); the client gets the upstream's events.
        if (!passThrough) send(renderer.push(event.chunk));
        else if (event.native?.events) {
          position.saw(event.native.events);
          sendText(nativeFrames(event.native.events, reply.model));
        }
      }
    },
    error(err: unknown) {
      const error = inClientNames(toGatewayError(err));
      if (!writer.started) writeError(res, ctx, error);
      // A passed-through stream ends in the upstream's terms: its Response, its numbering.
      else if (passThrough === true && position.created) res.end(failureEvents(error, position.created, position.lastSequence + 1, []).map(sseFrame).join(''));
      else res.end(renderer.fail(error).map(sseFrame).join(''));
    },
    complete() {
      if (completion && !ctx.stream) {
        // Rendered before the head goes: a rendering that throws is then the dialect's 500, not a connection cut without an answer.
        const response = nativeBody ? null : responseOf(completion, reply);
        const body = nativeBody ? nativeResponseJson(nativeBody, reply.model, nativeText) : JSON.stringify(response);
        res.writeHead(200, Object.assign(baseHeaders(ctx), JSON_HEADERS));
        if (nativeBody) {
          if (typeof nativeBody.id === 'string') keeper?.native(nativeBody.id);
        } else if (response) keeper?.rendered(response);
        res.end(body);
        return;
      }
      if (passThrough === true) {
        // The upstream's response.completed went out with its events (the call fails on a stream that lacks it).
        if (writer.started && typeof position.created?.id === 'string') keeper?.native(position.created.id);
        if (writer.started) res.end();
        else writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
        return;
      }
      // A whole answer for a streaming client (a cache hit, a stage's own answer): streamed from its chunks.
      if (completion) for (const chunk of chunksOfCompletion(completion)) send(renderer.push(chunk));
      if (!writer.started) {
        writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
        return;
      }
      const last = renderer.end(ctx.usage);
      const response = finalResponse(last);
      if (response) keeper?.rendered(response);
      res.end(last.map(sseFrame).join(''));
    },
  }, writer.writes);
}
