import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { GatewayError, gatewayError } from '../core/errors.js';
import { contentCoding, decompressorFor, notValidCoding } from './request-encoding.js';

/** The framework's own limit is only a ceiling; the live limit comes from the running config. */
export const BODY_LIMIT_CEILING = 1024 * 1024 * 1024;

function tooLarge(limit: number): GatewayError {
  return gatewayError('request_too_large', `The request body is larger than the limit of ${limit} bytes.`);
}

/**
 * Enforces `settings.max_body_bytes` as it is now, so a change applies to the next request without a
 * restart: a declared Content-Length over the limit is refused before reading; a chunked body is counted, and a
 * compressed one (Content-Encoding gzip, deflate, br) is inflated and counted as inflated.
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
    const coding = contentCoding(request.headers['content-encoding']);
    const limit = currentLimit();
    const declared = Number(request.headers['content-length']);
    if (declared > limit) {
      // The declared body is unread (or, after Expect: 100-continue, never sent): a connection kept open would
      // read the rest of it as the next request, or read and drop all of it first.
      reply.header('connection', 'close');
      done(tooLarge(limit));
      return;
    }
    if (coding === null) {
      if (Number.isFinite(declared)) done(null, payload);
      else done(null, closingOnError(countedUpTo(payload, limit, tooLarge), reply, request.raw.socket));
      return;
    }
    const decompressor = decompressorFor(coding, String(request.headers['content-encoding']));
    if (decompressor instanceof GatewayError) {
      done(decompressor);
      return;
    }
    done(null, closingOnError(inflatedUpTo(payload, decompressor, coding, limit), reply, request.raw.socket));
  });
}

/**
 * A body that fails (past the limit, or not valid in its coding) is not read to its end, so the connection cannot
 * carry another request: it closes once answered. The listener is also what keeps such a failure to its own request:
 * fastify reads no body for GET or HEAD, nor one whose content type it refuses (415), and a stream error that
 * nothing listens for would be thrown out of the process, taking every other request with it.
 */
function closingOnError(body: Transform, reply: FastifyReply, socket: Socket): Transform {
  body.on('error', () => {
    const response = reply.raw;
    if (!response.headersSent) {
      reply.header('connection', 'close');
      return;
    }
    // Answered already (a route that reads no body): the rest of the body is never read; drop the connection. (The
    // socket is the request's: a finished response has let go of its own.)
    if (response.writableFinished) socket.destroy();
    else response.once('finish', () => socket.destroy());
  });
  return body;
}

/**
 * The body as it comes, failing with `error` past `limit` bytes. `encodedLength` is what fastify checks the
 * Content-Length against: by default the bytes counted here.
 */
function countedUpTo(payload: Readable, limit: number, error: (limit: number) => GatewayError, encodedLength?: () => number): Transform {
  let received = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      callback(received > limit ? error(limit) : null, chunk);
    },
  });
  Object.defineProperty(counted, 'receivedEncodedLength', { get: encodedLength ?? (() => received) });
  return payload.pipe(counted);
}

/**
 * A compressed body, inflated as it arrives and held to the limit once inflated: a gzip bomb (gigabytes from a few
 * kilobytes) fails at the limit, with no more than a chunk past it ever in memory, and its inflating stops there.
 */
function inflatedUpTo(payload: Readable, decompressor: NodeJS.ReadWriteStream & Readable, coding: string, limit: number): Transform {
  let encoded = 0;
  payload.on('data', (chunk: Buffer) => (encoded += chunk.length));
  // Fastify checks the Content-Length against the bytes that came, not the ones they inflate to.
  const inflated = countedUpTo(payload.pipe(decompressor), limit, tooLargeInflated, () => encoded);
  decompressor.on('error', (err: Error) => inflated.destroy(notValidCoding(coding, err)));
  inflated.on('error', () => decompressor.destroy());
  return inflated;
}

function tooLargeInflated(limit: number): GatewayError {
  return gatewayError('request_too_large', `The request body is larger than the limit of ${limit} bytes once decompressed.`);
}
