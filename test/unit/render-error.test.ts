import { describe, expect, it } from 'vitest';
import { GatewayError, gatewayError } from '../../src/core/errors.js';
import { fromFrameworkError, openAIErrorBody, renderOpenAIError } from '../../src/http/render-error.js';

/** An error shaped like the ones fastify raises (FastifyError: code, statusCode, message). */
function fastifyError(code: string, statusCode: number, message: string): Error {
  return Object.assign(new Error(message), { code, statusCode });
}

describe('fromFrameworkError', () => {
  it('maps FST_ERR_CTP_BODY_TOO_LARGE to 413 naming the limit', () => {
    const err = fromFrameworkError(fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413, 'Request body is too large'), 1024);
    expect(err.status).toBe(413);
    expect(err.type).toBe('invalid_request_error');
    expect(err.code).toBe('request_too_large');
    expect(err.message).toContain('1024');
  });

  it('maps FST_ERR_CTP_INVALID_MEDIA_TYPE to 415', () => {
    const err = fromFrameworkError(fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415, "Unsupported Media Type: 'text/plain'"), 1024);
    expect(err.status).toBe(415);
    expect(err.code).toBe('unsupported_media_type');
  });

  it('maps an empty JSON body and a bad content-length to 400', () => {
    const empty = fromFrameworkError(fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400, "Body cannot be empty when content-type is set to 'application/json'"), 1);
    expect([empty.status, empty.code]).toEqual([400, 'invalid_json']);
    const length = fromFrameworkError(fastifyError('FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400, 'Request body size did not match Content-Length'), 1);
    expect([length.status, length.code]).toEqual([400, 'invalid_content_length']);
  });

  it('maps a SyntaxError (bad JSON) to 400 invalid_json', () => {
    let syntax: unknown;
    try {
      JSON.parse('{"model": ');
    } catch (err) {
      syntax = err;
    }
    expect(syntax).toBeInstanceOf(SyntaxError);
    const err = fromFrameworkError(syntax, 1);
    expect(err.status).toBe(400);
    expect(err.type).toBe('invalid_request_error');
    expect(err.code).toBe('invalid_json');
  });

  it('maps FST_ERR_CTP_INVALID_JSON_BODY to 400 invalid_json', () => {
    const err = fromFrameworkError(fastifyError('FST_ERR_CTP_INVALID_JSON_BODY', 400, "Body is not valid JSON but content-type is set to 'application/json'"), 1);
    expect([err.status, err.code]).toEqual([400, 'invalid_json']);
  });

  it('keeps other client errors fastify raised with their status', () => {
    const err = fromFrameworkError(fastifyError('FST_ERR_SOMETHING', 422, 'nope'), 1);
    expect(err.status).toBe(422);
    expect(err.code).toBe('FST_ERR_SOMETHING');
  });

  it('turns an unknown error into a 500 that does not reveal its message', () => {
    const err = fromFrameworkError(new Error('ECONNREFUSED 10.1.2.3:5432 password=hunter2'), 1);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.status).toBe(500);
    expect(err.code).toBe('internal_error');
    expect(err.message).not.toContain('hunter2');
    expect(err.message).not.toContain('ECONNREFUSED');
    const rendered = renderOpenAIError(err);
    expect(rendered.body).not.toContain('hunter2');
  });

  it('does not pass a 5xx status from an unknown error through with its message', () => {
    const err = fromFrameworkError(Object.assign(new Error('internal detail xyz'), { statusCode: 503, code: 'WHATEVER' }), 1);
    expect(err.status).toBe(500);
    expect(err.message).not.toContain('internal detail xyz');
  });

  it('turns non-Error values into a 500', () => {
    for (const value of [null, undefined, 'boom', 42]) expect(fromFrameworkError(value, 1).status).toBe(500);
  });

  it('passes a GatewayError through unchanged', () => {
    const original = gatewayError('invalid_value', 'bad', { param: 'messages' });
    expect(fromFrameworkError(original, 1)).toBe(original);
  });
});

describe('renderOpenAIError', () => {
  it('renders the OpenAI error shape with the error headers', () => {
    const error = new GatewayError({ status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'slow', headers: { 'retry-after': '2' } });
    const rendered = renderOpenAIError(error);
    expect(rendered.status).toBe(429);
    expect(rendered.headers).toEqual({ 'content-type': 'application/json; charset=utf-8', 'retry-after': '2' });
    expect(JSON.parse(rendered.body)).toEqual({ error: { message: 'slow', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } });
    expect(openAIErrorBody(gatewayError('invalid_value', 'm', { param: 'p' }))).toEqual({ error: { message: 'm', type: 'invalid_request_error', param: 'p', code: 'invalid_value' } });
  });
});
