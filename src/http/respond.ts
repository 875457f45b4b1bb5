import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import type { ChatCompletion, EmbeddingsResponse, ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError, toGatewayError } from '../errors.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Log } from '../telemetry/log.js';
import { serveAnswer, SSE_HEADERS, tickCorkedWriter, writeRenderedError } from './answer-stream.js';
import { openAIErrorBody, renderOpenAIError } from './render-error.js';

function baseHeaders(ctx: RequestContext): Record<string, string> {
  return { 'x-request-id': ctx.id, ...ctx.responseHeaders };
}

function writeError(res: ServerResponse, ctx: RequestContext, error: GatewayError): void {
  writeRenderedError(res, baseHeaders(ctx), renderOpenAIError(error));
}

/**
 * Writes a pipeline answer in OpenAI's format: JSON for a completion, SSE for a stream. Errors before the first
 * byte get a proper status; errors after it become an SSE error event followed by a clean end, never a stream
 * that looks complete.
 */
export function respondOpenAI(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log): Promise<void> {
  let started = false;
  let completion: ChatCompletion | EmbeddingsResponse | null = null;
  const write = tickCorkedWriter(res);
  return serveAnswer(res, ctx, answer, log, {
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
      write(`data: ${JSON.stringify(event.chunk)}\n\n`);
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
}
