import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import { chunksOfCompletion } from '../dialects/anthropic/completion-chunks.js';
import { anthropicMessage, type ReplyContext } from '../dialects/anthropic/response.js';
import type { AnthropicStreamEvent } from '../dialects/anthropic/shapes.js';
import { AnthropicStreamRenderer, errorEvent, sseFrame } from '../dialects/anthropic/stream.js';
import type { ChatCompletion, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError, toGatewayError } from '../errors.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Log } from '../telemetry/log.js';
import { renderAnthropicError } from './anthropic-errors.js';
import { serveAnswer, SSE_HEADERS, tickCorkedWriter, writeRenderedError } from './answer-stream.js';

function baseHeaders(ctx: RequestContext): Record<string, string> {
  return { 'x-request-id': ctx.id, 'request-id': ctx.id, ...ctx.responseHeaders };
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  writeRenderedError(res, baseHeaders(ctx), renderAnthropicError(error, ctx.id));
}

/**
 * Writes a pipeline answer as Anthropic's: a Message as JSON, or the Messages event stream. Errors before the
 * first byte get a status, errors after it an `error` event and an end without message_stop, so no client
 * mistakes a broken answer for a whole one.
 */
export function respondAnthropic(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log, reply: ReplyContext): Promise<void> {
  const renderer = new AnthropicStreamRenderer(reply);
  let headersSent = false;
  let completion: ChatCompletion | null = null;
  const write = tickCorkedWriter(res);
  const send = (events: AnthropicStreamEvent[]): void => {
    if (events.length === 0) return;
    if (!headersSent) {
      res.writeHead(200, { ...baseHeaders(ctx), ...SSE_HEADERS });
      headersSent = true;
    }
    write(events.map(sseFrame).join(''));
  };
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      // Sent when the pipeline completes, after the response side (cost, logs) has settled.
      if (event.kind === 'completion') completion = event.completion;
      else if (event.kind === 'chunk') send(renderer.push(event.chunk));
    },
    error(err: unknown) {
      const error = toGatewayError(err);
      if (!headersSent) writeError(res, ctx, error);
      else res.end(sseFrame(errorEvent(error)));
    },
    complete() {
      if (completion && !ctx.stream) {
        res.writeHead(200, { ...baseHeaders(ctx), 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(anthropicMessage(completion, reply)));
        return;
      }
      if (completion) for (const chunk of chunksOfCompletion(completion)) send(renderer.push(chunk));
      if (!headersSent) {
        writeError(res, ctx, GatewayError.internal('The upstream answer was empty.'));
        return;
      }
      res.end(renderer.end().map(sseFrame).join(''));
    },
  });
}
