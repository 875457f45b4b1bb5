import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import { chunksOfCompletion } from '../completion-chunks.js';
import { anthropicMessage, type ReplyContext } from '../response.js';
import type { AnthropicStreamEvent } from '../../../wire/anthropic/shapes.js';
import { anthropicNative, nativeFrames, nativeMessageJson } from '../native.js';
import { AnthropicStreamRenderer, errorEvent, sseFrame } from '../stream.js';
import type { ChatCompletion, ResponseEvent } from '../../../core/canonical.js';
import type { GatewayError} from '../../../core/errors.js';
import { toGatewayError } from '../../../core/errors.js';
import type { RequestContext } from '../../../core/context.js';
import type { Log } from '../../../log.js';
import { renderAnthropicError } from './errors.js';
import { JSON_HEADERS, lazyStreamWriter, serveAnswer, SSE_HEADERS, writeRenderedError } from '../../../http/answer-stream.js';
import { answerHeaders } from '../../../http/answer-headers.js';
import { addAnthropicNamesOfOwnLimits } from '../../../core/upstream-limit-headers.js';
import { gatewayError } from '../../../core/errors.js';
import { ANTHROPIC_PING } from '../../../http/stream-keepalive.js';

function baseHeaders(ctx: RequestContext): Record<string, string> {
  const headers = answerHeaders(ctx, ['x-request-id', 'request-id']);
  // A key's or team's own limits under Anthropic's names too, which Anthropic's clients read.
  addAnthropicNamesOfOwnLimits(headers, Date.now());
  return headers;
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  writeRenderedError(res, baseHeaders(ctx), renderAnthropicError(error, ctx.id));
}

/**
 * Writes a pipeline answer as Anthropic's: a Message as JSON, or the Messages event stream; an Anthropic
 * upstream's own message or events when they came along (native pass-through), else rendered from the
 * canonical answer. Errors before the first byte get a status, errors after it an `error` event and an end
 * without message_stop, so no client mistakes a broken answer for a whole one.
 */
export function respondAnthropic(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log, reply: ReplyContext): Promise<void> {
  const renderer = new AnthropicStreamRenderer(reply);
  let completion: ChatCompletion | null = null;
  /** An Anthropic upstream's own message (native pass-through), sent instead of the rendered completion. */
  let nativeBody: Record<string, unknown> | null = null;
  /** The upstream's own text of `nativeBody`, when it came as text (see NativeAnswer.text). */
  let nativeText: string | undefined;
  /** Whether the stream passes an Anthropic upstream's events through; its first chunk decides (null before it). */
  let passThrough: boolean | null = null;
  const writer = lazyStreamWriter(res, ctx, () => Object.assign(baseHeaders(ctx), SSE_HEADERS), ANTHROPIC_PING);
  const sendText = writer.send;
  const send = (events: AnthropicStreamEvent[]): void => {
    if (events.length > 0) sendText(events.map(sseFrame).join(''));
  };
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      if (event.kind === 'completion') {
        // Sent when the pipeline completes, after the response side (cost, logs) has settled.
        completion = event.completion;
        nativeBody = anthropicNative(event.native)?.body ?? null;
        nativeText = nativeBody ? anthropicNative(event.native)?.text : undefined;
      } else if (event.kind === 'chunk') {
        passThrough ??= anthropicNative(event.native) !== null;
        // Passing through, the chunks are for the stages (cost, usage); the client gets the upstream's events.
        if (!passThrough) send(renderer.push(event.chunk));
        else if (event.native?.events) sendText(nativeFrames(event.native.events, reply));
      }
    },
    error(err: unknown) {
      const error = toGatewayError(err);
      if (!writer.started) writeError(res, ctx, error);
      else res.end(sseFrame(errorEvent(error)));
    },
    complete() {
      if (completion && !ctx.stream) {
        // Rendered before the head goes: a rendering that throws is then the dialect's 500, not a connection cut without an answer.
        const body = nativeBody ? nativeMessageJson(nativeBody, reply, nativeText) : JSON.stringify(anthropicMessage(completion, reply));
        res.writeHead(200, Object.assign(baseHeaders(ctx), JSON_HEADERS));
        res.end(body);
        return;
      }
      if (passThrough === true) {
        // The upstream's message_stop went out with its events (the call fails on a stream that lacks it).
        if (writer.started) res.end();
        else writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
        return;
      }
      if (completion) for (const chunk of chunksOfCompletion(completion)) send(renderer.push(chunk));
      if (!writer.started) {
        writeError(res, ctx, gatewayError('internal_error', 'The upstream answer was empty.'));
        return;
      }
      res.end(renderer.end().map(sseFrame).join(''));
    },
  }, writer.writes);
}
