import type { ServerResponse } from 'node:http';
import { drained } from './drain.js';
import type { Observable, Subscription } from 'rxjs';
import type { ChatCompletion, EmbeddingsResponse, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError, toGatewayError } from '../errors.js';
import type { RequestContext } from '../pipeline/context.js';
import { openAIErrorBody, renderOpenAIError } from './render-error.js';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // Tells buffering reverse proxies (nginx) to pass events through as they come.
  'x-accel-buffering': 'no',
};

function baseHeaders(ctx: RequestContext): Record<string, string> {
  return { 'x-request-id': ctx.id, ...ctx.responseHeaders };
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  const rendered = renderOpenAIError(error);
  res.writeHead(rendered.status, { ...baseHeaders(ctx), ...rendered.headers });
  res.end(rendered.body);
}

/**
 * Subscribes to a pipeline answer and writes it to the raw response: JSON for a completion, SSE for a
 * stream. A client that hangs up unsubscribes, which aborts the upstream call. Errors before the first byte
 * get a proper status; errors after it become an SSE error event followed by a clean end, never a stream
 * that looks complete.
 */
export function respondOpenAI(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>): Promise<void> {
  ctx.clientReady = () => (res.writableNeedDrain && !res.destroyed ? drained(res) : null);
  return new Promise<void>((resolve) => {
    let started = false;
    let completion: ChatCompletion | EmbeddingsResponse | null = null;
    let corked = false;
    const uncork = (): void => {
      corked = false;
      res.uncork();
    };
    const subscription: Subscription = answer.subscribe({
      next(event) {
        if (event.kind !== 'chunk') {
          // Sent when the pipeline completes, after the response side (cost, logs) has settled.
          completion = event.kind === 'completion' ? event.completion : event.response;
          return;
        }
        if (!started) {
          res.writeHead(200, { ...baseHeaders(ctx), ...SSE_HEADERS });
          started = true;
        }
        // Chunks decoded from one upstream read go out in one write: corked until the current tick ends.
        if (!corked) {
          corked = true;
          res.cork();
          process.nextTick(uncork);
        }
        res.write(`data: ${JSON.stringify(event.chunk)}\n\n`);
      },
      error(err: unknown) {
        const error = toGatewayError(err);
        if (!started) writeError(res, ctx, error);
        else if (ctx.stream) res.end(`data: ${JSON.stringify(openAIErrorBody(error))}\n\n`);
        else res.destroy();
      },
      complete() {
        if (completion) {
          res.writeHead(200, { ...baseHeaders(ctx), 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify(completion));
        } else if (!started) {
          writeError(res, ctx, GatewayError.internal('The upstream answer was empty.'));
        } else {
          res.end('data: [DONE]\n\n');
        }
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
