import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';
import { gatewayError, INTERNAL_MESSAGE } from '../core/errors.js';
import { wrongMethod } from './wrong-method.js';

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * OpenAI's error shape, used on `/v1` and `/litellm`: its four fields and the extra fields an OpenAI-shaped upstream
 * wrote beside them (Azure's `innererror`), so a client reads the provider's answer as it came.
 */
export function openAIErrorBody(error: GatewayError): { error: { message: string; type: string; param: string | null; code: string | null } & Record<string, unknown> } {
  // A GatewayError of another copy of tollgate (a plugin's, see its brand) may lack the field.
  const extra = (error.upstreamFields as GatewayError['upstreamFields'] | undefined) ?? {};
  // The four fields are the gateway's reading of the error and always win over an extra of the same name.
  return { error: { ...extra, message: error.message, type: error.type, param: error.param, code: error.code } };
}

export function renderOpenAIError(error: GatewayError): RenderedError {
  return {
    status: error.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers },
    body: JSON.stringify(openAIErrorBody(error)),
  };
}

/**
 * A JSON-RPC error (`{"jsonrpc":"2.0","error":{"code","message"},"id":null}`), the shape of every answer of `/mcp`,
 * with the codes the MCP SDK's own streamable HTTP transport uses: -32700 for a body that is not JSON, -32603 for
 * the gateway's own failure, -32000 for the rest (a wrong content type, a body too large).
 */
export function renderJsonRpcError(error: GatewayError): RenderedError {
  const code = error.code === 'invalid_json' ? -32700 : error.status >= 500 ? -32603 : -32000;
  const message = error.code === 'invalid_json' ? `Parse error: ${error.message}` : error.message;
  return { status: error.status, headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers }, body: jsonRpcErrorBody(code, message) };
}

/** A JSON-RPC error answer to a request whose id is not known (`id: null`). */
export function jsonRpcErrorBody(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
}

interface FrameworkError {
  statusCode?: number;
  code?: string;
  message?: string;
}

/**
 * Turns errors raised by fastify itself (body parsing, limits, content type) into GatewayErrors with a
 * clear message. Anything unexpected becomes a 500 that reveals nothing internal.
 */
export function fromFrameworkError(err: unknown, maxBodyBytes: number): GatewayError {
  if (err instanceof GatewayError) return err;
  const fwk = (err ?? {}) as FrameworkError;
  switch (fwk.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return gatewayError('request_too_large', `The request body is larger than the limit of ${maxBodyBytes} bytes.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return gatewayError('unsupported_media_type', 'The request body must be sent with Content-Type: application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return gatewayError('invalid_json', 'The request body is empty; expected a JSON object.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return gatewayError('invalid_content_length', 'The Content-Length header does not match the body.');
    default:
      break;
  }
  if (err instanceof SyntaxError || fwk.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return gatewayError('invalid_json', `We could not parse the JSON body of your request: ${fwk.message ?? 'invalid JSON'}.`);
  }
  if (typeof fwk.statusCode === 'number' && fwk.statusCode >= 400 && fwk.statusCode < 500) {
    return new GatewayError({ status: fwk.statusCode, type: 'invalid_request_error', code: fwk.code ?? null, message: fwk.message ?? 'Bad request.' });
  }
  return gatewayError('internal_error', INTERNAL_MESSAGE);
}

const GEMINI_METHOD = /^\/v1(?:beta|alpha)?\/(?:models|tunedModels)\/[^/]+:(?:generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents)$/;

/**
 * What a client that reached an unknown URL most likely meant, for the common wrong turns: an Anthropic or
 * Gemini client pointed at the OpenAI base URL, or an OpenAI API tollgate does not serve. `base` is the
 * gateway's own address as the client reached it.
 */
export function wrongPathHint(path: string, base: string): string | null {
  // `/litellm` and `/litellm/v1` serve the OpenAI routes too; the same wrong turns happen there.
  const mount = /^\/litellm(?:\/v1)?(?=\/)/.exec(path)?.[0] ?? '';
  const rest = mount === '' ? path : path.slice(mount.length);
  const api = mount === '' ? rest.replace(/^\/v1(?=\/)/, '') : rest;
  if (mount === '' && GEMINI_METHOD.test(rest)) {
    return `The Gemini API is served under /genai: use the /genai base URL (${base}/genai) for Google Gen AI clients.`;
  }
  if (/^\/messages(?:\/count_tokens)?$/.test(api)) {
    return `Anthropic's Messages API is served under /anthropic: use the /anthropic base URL (${base}/anthropic) for Anthropic clients.`;
  }
  if (mount !== '' && api === '/responses') return `The Responses API is served at ${base}/v1/responses.`;
  if (mount !== '' && api === '/completions') return `The legacy Completions API is served at ${base}/v1/completions.`;
  return null;
}

/**
 * The 404 for a URL no route serves, in the OpenAI shape, with a hint when the URL looks like a wrong turn; a 405 for
 * one served with another method.
 */
export function sendUnknownUrl(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?')[0] ?? '';
  const hint = wrongPathHint(path, `${request.protocol}://${quoteInput(request.host, 100)}`);
  const message = `Unknown request URL: ${request.method} ${quoteInput(path)}.${hint ? ` ${hint}` : ''}`;
  const rendered = renderOpenAIError((hint === null ? wrongMethod(request) : null) ?? gatewayError('unknown_url', message));
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}
