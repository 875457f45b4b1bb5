// Whole responses written in one go: errors, the model list, scripted broken bodies.
import type { LiveExchange } from './exchange.js';
import type { UpstreamMode } from './modes.js';
import { defaultErrorFor, errorJson, type OpenAIError } from './openai-errors.js';
import { exhaustedRateLimitHeaders, newRequestId, standardHeaders, type HeaderMap } from './openai-headers.js';

export const JSON_TYPE = 'application/json';
export const SSE_HEADERS: HeaderMap = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, must-revalidate' };

export function sendRaw(exchange: LiveExchange, status: number, headers: HeaderMap, body: string): void {
  const { res } = exchange;
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    ...standardHeaders(newRequestId(), exchange.startedAt),
    ...headers,
    'content-length': String(Buffer.byteLength(body)),
  });
  // A string body lets Node send head and body in one write.
  res.end(body);
}

export function sendJson(exchange: LiveExchange, status: number, body: string): void {
  sendRaw(exchange, status, { 'content-type': JSON_TYPE }, body);
}

export function sendError(exchange: LiveExchange, status: number, error: OpenAIError, extra: HeaderMap = {}): void {
  sendRaw(exchange, status, { 'content-type': JSON_TYPE, ...extra }, errorJson(error));
}

/** An `error` mode: OpenAI's usual type/code/message for the status unless the mode overrides them. */
export function sendScriptedError(exchange: LiveExchange, mode: Extract<UpstreamMode, { kind: 'error' }>, model: string): void {
  const defaults = defaultErrorFor(mode.status, model);
  const error: OpenAIError = {
    message: mode.message ?? defaults.message,
    type: mode.type ?? defaults.type,
    param: null,
    code: mode.code === undefined ? defaults.code : mode.code,
  };
  const rateLimited = mode.status === 429 ? exhaustedRateLimitHeaders() : {};
  sendError(exchange, mode.status, error, { ...rateLimited, ...mode.headers });
}
