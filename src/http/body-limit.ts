import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { GatewayError } from '../core/errors.js';
import { gatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';

/** The framework's own limit is only a ceiling; the live limit comes from the running config. */
export const BODY_LIMIT_CEILING = 1024 * 1024 * 1024;

function tooLarge(limit: number): GatewayError {
  return gatewayError('request_too_large', `The request body is larger than the limit of ${limit} bytes.`);
}

/**
 * Enforces `settings.max_body_bytes` as it is now, so a change applies to the next request without a
 * restart: a declared Content-Length over the limit is refused before reading; a chunked body is counted.
 */
export function enforceLiveBodyLimit(app: FastifyInstance, currentLimit: () => number): void {
  // `Expect: 100-continue` (curl sends it for bodies over 1 MiB) asks whether to send the body at all; Node says yes
  // to every request unless told otherwise. A body declared over the limit gets no 100 Continue: the request goes on
  // to be refused below, so the client learns it is too large before uploading it rather than after.
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (!(Number(request.headers['content-length']) > currentLimit())) response.writeContinue();
    app.server.emit('request', request, response);
  });
  // Callback style: an async hook would cost a promise on every request.
  app.addHook('preParsing', (request, reply, payload, done) => {
    // A compressed body is not inflated (a gzip bomb would cost nothing but must not cost memory either): it is
    // refused by name instead of being read as JSON and quoted back as binary in an invalid_json error.
    const encoding = request.headers['content-encoding'];
    if (typeof encoding === 'string' && encoding.trim() !== '' && encoding.trim().toLowerCase() !== 'identity') {
      done(gatewayError('unsupported_media_type', `Content-Encoding '${quoteInput(encoding, 40)}' is not supported: send the request body uncompressed.`, { param: 'content-encoding' }));
      return;
    }
    const limit = currentLimit();
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared)) {
      if (declared > limit) {
        // The declared body is unread (or, after Expect: 100-continue, never sent): a connection kept open would
        // read the rest of it as the next request, or read and drop all of it first.
        reply.header('connection', 'close');
        done(tooLarge(limit));
      }
      else done(null, payload);
      return;
    }
    let received = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        callback(received > limit ? tooLarge(limit) : null, chunk);
      },
    });
    // Fastify reads this to check the Content-Length it did not get.
    Object.defineProperty(counted, 'receivedEncodedLength', { get: () => received });
    done(null, payload.pipe(counted));
  });
}
