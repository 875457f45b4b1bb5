import { newRequestId } from '../core/request-id.js';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { GatewayError } from '../core/errors.js';
import type { Log } from '../log.js';
import { renderAnthropicError } from '../dialects/anthropic/routes/errors.js';
import { renderGoogleError } from '../dialects/gemini/routes/respond.js';
import { renderJsonRpcError, renderOpenAIError, type RenderedError } from './render-error.js';
import { gatewayError } from '../core/errors.js';
import { withFields } from '../core/with-fields.js';

/** A GatewayError in the error shape of the route family `path` belongs to (OpenAI's for any other path). */
export function renderErrorForPath(path: string | null, error: GatewayError, requestId: string): RenderedError {
  const rendered =
    path !== null && (path === '/anthropic' || path.startsWith('/anthropic/'))
      ? renderAnthropicError(error, requestId)
      : path !== null && (path === '/genai' || path.startsWith('/genai/'))
        ? renderGoogleError(error)
        : path === '/mcp'
          ? renderJsonRpcError(error)
          : renderOpenAIError(error);
  return { ...rendered, headers: withFields(rendered.headers, { 'x-request-id': requestId }) };
}

interface ClientError extends Error {
  code?: string;
  reason?: string;
  rawPacket?: unknown;
}

const MAX_REASON = 200;

/** What the HTTP parser or the server's timers refused, as an error a client can act on. */
function errorFor(err: ClientError): GatewayError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return gatewayError('request_timeout', 'The request (its headers and body) was not received in time; the connection is closed.');
    case 'HPE_HEADER_OVERFLOW':
      return gatewayError('headers_too_large', 'The request headers are too large.');
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return gatewayError('invalid_content_length', `The Content-Length header is not valid: ${reasonOf(err)}.`);
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return gatewayError('invalid_transfer_encoding', `The Transfer-Encoding header is not valid: ${reasonOf(err)}.`);
    default: {
      // Bytes left over by a Content-Length shorter than the body are read as the next request, whose "method"
      // is then whatever the body held: only that error gets the hint.
      const hint = err.code === 'HPE_INVALID_METHOD' ? ' (A Content-Length shorter than the body leaves the rest to be read as the next request.)' : '';
      return gatewayError('malformed_request', `The request is not valid HTTP/1.1: ${reasonOf(err)}.${hint}`);
    }
  }
}

/** The parser's own reason (one of llhttp's fixed phrases, e.g. "Duplicate Content-Length"). */
function reasonOf(err: ClientError): string {
  return typeof err.reason === 'string' && err.reason !== '' ? err.reason.slice(0, MAX_REASON) : 'the parser rejected it';
}

/** The path of the request the error belongs to, when it can be told: from the request being read, or from the raw bytes. */
function pathOf(err: ClientError, socket: Socket): string | null {
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  const url = inFlight?.req?.url;
  if (typeof url === 'string') return url;
  if (!Buffer.isBuffer(err.rawPacket)) return null;
  // The request line, `METHOD /path HTTP/1.1`, when the packet starts with one.
  const line = /^[A-Z]{3,10} (\/[^\s?#]*)/.exec(err.rawPacket.subarray(0, 512).toString('latin1'));
  return line?.[1] ?? null;
}

/**
 * Answers what Node's HTTP parser rejects before any route sees it (malformed framing, a bad Content-Length,
 * oversized headers) and requests not received within the header and request timeouts: a proper HTTP/1.1
 * answer in the route family's error shape (OpenAI's when the path cannot be told), then the connection
 * closes, since the bytes that follow cannot be trusted to start a request.
 */
export function clientErrorHandler(log: Log): (err: ClientError, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    // Part of an answer is already on the wire: another status line would corrupt it, so only close.
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const rendered = renderErrorForPath(pathOf(err, socket), errorFor(err), newRequestId());
    const body = Buffer.from(rendered.body);
    const headers = withFields(rendered.headers, { 'content-length': String(body.length), connection: 'close' });
    const head = `HTTP/1.1 ${rendered.status} ${STATUS_CODES[rendered.status] ?? 'Error'}\r\n${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')}\r\n`;
    log.debug({ code: err.code }, 'client error answered before routing');
    // Destroyed once written: the socket is never read again, whatever the client does.
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]), () => socket.destroy());
  };
}
