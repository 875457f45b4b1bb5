import type { ServerResponse } from 'node:http';
import { drained } from './drain.js';
import type { Observable, Subscription } from 'rxjs';
import { chunksOfCompletion } from '../dialects/anthropic/completion-chunks.js';
import { anthropicMessage, type ReplyContext } from '../dialects/anthropic/response.js';
import type { AnthropicStreamEvent } from '../dialects/anthropic/shapes.js';
import { AnthropicStreamRenderer, errorEvent, sseFrame } from '../dialects/anthropic/stream.js';
import type { ChatCompletion, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError, toGatewayError } from '../errors.js';
import type { RequestContext } from '../pipeline/context.js';
import { renderAnthropicError } from './anthropic-errors.js';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // Tells buffering reverse proxies (nginx) to pass events through as they come.
  'x-accel-buffering': 'no',
};

function baseHeaders(ctx: RequestContext): Record<string, string> {
  return { 'x-request-id': ctx.id, 'request-id': ctx.id, ...ctx.responseHeaders };
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  const rendered = renderAnthropicError(error, ctx.id);
  res.writeHead(rendered.status, { ...baseHeaders(ctx), ...rendered.headers });
  res.end(rendered.body);
}

/**
 * Writes a pipeline answer as Anthropic's: a Message as JSON, or the Messages event stream. The mechanics are
 * `/v1`'s (respondOpenAI): backpressure through `ctx.clientReady`, a hang-up unsubscribes and so aborts the
 * upstream call, errors before the first byte get a status, errors after it an `error` event and an end
 * without message_stop, so no client mistakes a broken answer for a whole one.
 */
export function respondAnthropic(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, reply: ReplyContext): Promise<void> {
  ctx.clientReady = () => (res.writableNeedDrain && !res.destroyed ? drained(res) : null);
  const renderer = new AnthropicStreamRenderer(reply);
  return new Promise<void>((resolve) => {
    let headersSent = false;
    let completion: ChatCompletion | null = null;
    let corked = false;
    const uncork = (): void => {
      corked = false;
      res.uncork();
    };
    const send = (events: AnthropicStreamEvent[]): void => {
      if (events.length === 0) return;
      if (!headersSent) {
        res.writeHead(200, { ...baseHeaders(ctx), ...SSE_HEADERS });
        headersSent = true;
      }
      // Events rendered from one upstream read go out in one write: corked until the current tick ends.
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(uncork);
      }
      res.write(events.map(sseFrame).join(''));
    };
    const subscription: Subscription = answer.subscribe({
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
    const hangUp = (): void => {
      if (!res.writableFinished) subscription.unsubscribe();
      resolve();
    };
    // The client may already be gone by the time the pipeline is subscribed.
    if (res.socket === null || res.socket.destroyed) hangUp();
    else res.once('close', hangUp);
  });
}
