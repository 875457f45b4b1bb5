import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { isRetryableStatus, passedErrorHeaders, upstreamError, upstreamErrorFromBody } from '../../src/providers/upstream-error.js';

describe('upstreamErrorFromBody', () => {
  it('reads the OpenAI error shape, keeping type, code, param and status', () => {
    const body = JSON.stringify({
      error: { message: "Invalid value for 'temperature'", type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' },
    });
    const err = upstreamErrorFromBody('openai', 400, {}, body);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.status).toBe(400);
    expect(err.upstreamStatus).toBe(400);
    expect(err.type).toBe('invalid_request_error');
    expect(err.code).toBe('invalid_value');
    expect(err.param).toBe('temperature');
    expect(err.message).toBe("Invalid value for 'temperature'");
    expect(err.retryable).toBe(false);
  });

  it('keeps an upstream type outside the gateway set verbatim', () => {
    const err = upstreamErrorFromBody('openai', 429, {}, '{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota","param":null}}');
    expect(err.type).toBe('insufficient_quota');
    expect(err.code).toBe('insufficient_quota');
    expect(err.param).toBeNull();
  });

  it('turns a numeric code into a string', () => {
    const err = upstreamErrorFromBody('groq', 500, {}, '{"error":{"message":"oops","code":503}}');
    expect(err.code).toBe('503');
  });

  it('fills in a type from the status when the body has none', () => {
    expect(upstreamErrorFromBody('p', 401, {}, '{"error":{"message":"bad key"}}').type).toBe('authentication_error');
    expect(upstreamErrorFromBody('p', 403, {}, '{}').type).toBe('permission_error');
    expect(upstreamErrorFromBody('p', 404, {}, '{}').type).toBe('not_found_error');
    expect(upstreamErrorFromBody('p', 429, {}, '{}').type).toBe('rate_limit_error');
    expect(upstreamErrorFromBody('p', 502, {}, '{}').type).toBe('upstream_error');
    expect(upstreamErrorFromBody('p', 422, {}, '{}').type).toBe('invalid_request_error');
  });

  it('reads a bare {"error": "string"}', () => {
    const err = upstreamErrorFromBody('together', 400, {}, '{"error":"model is required"}');
    expect(err.message).toBe('model is required');
    expect(err.status).toBe(400);
    expect(err.code).toBeNull();
  });

  it('reads {"message": ...}', () => {
    const err = upstreamErrorFromBody('mistral', 422, {}, '{"object":"error","message":"Unprocessable","type":"invalid_request"}');
    expect(err.message).toBe('Unprocessable');
    expect(err.status).toBe(422);
  });

  it("reads OpenAI's fields at the top level, and Mistral's 422 whose message is pydantic's detail", () => {
    const flat = upstreamErrorFromBody('mistral', 400, {}, '{"object":"error","message":"Invalid model: x","type":"invalid_model","param":null,"code":"1500"}');
    expect([flat.message, flat.type, flat.code, flat.param]).toEqual(['Invalid model: x', 'invalid_model', '1500', null]);
    const vllm = upstreamErrorFromBody('vllm', 400, {}, '{"object":"error","message":"too long","type":"BadRequestError","param":"messages","code":400}');
    expect([vllm.type, vllm.code, vllm.param]).toEqual(['BadRequestError', '400', 'messages']);
    const detail = [{ type: 'extra_forbidden', loc: ['body', 'store'], msg: 'Extra inputs are not permitted', input: true }];
    const nested = upstreamErrorFromBody('mistral', 422, {}, JSON.stringify({ object: 'error', message: { detail }, type: 'invalid_request_error', param: null, code: null }));
    expect(nested.message).toBe(JSON.stringify(detail));
    expect([nested.status, nested.type, nested.code]).toEqual([422, 'invalid_request_error', null]);
  });

  it('reads FastAPI {"detail": "..."} and structured detail', () => {
    expect(upstreamErrorFromBody('vllm', 404, {}, '{"detail":"Not Found"}').message).toBe('Not Found');
    const structured = upstreamErrorFromBody('vllm', 422, {}, JSON.stringify({ detail: [{ loc: ['body', 'messages'], msg: 'field required' }] }));
    expect(structured.message).toBe('[{"loc":["body","messages"],"msg":"field required"}]');
  });

  it('keeps a plain-text body as the message', () => {
    const err = upstreamErrorFromBody('ollama', 503, {}, '  upstream connect error or disconnect/reset before headers\n');
    expect(err.message).toBe('upstream connect error or disconnect/reset before headers');
    expect(err.status).toBe(503);
    expect(err.type).toBe('upstream_error');
  });

  it('summarises an HTML error page by its title and status instead of pasting it', () => {
    const html = `<html><head><title>502 Bad Gateway</title></head><body>${'x'.repeat(2000)}</body></html>`;
    const err = upstreamErrorFromBody('deepinfra', 502, {}, html);
    expect(err.message).toBe('deepinfra: upstream answered HTTP 502 with an HTML page ("502 Bad Gateway").');
    expect(err.status).toBe(502);
    expect(err.upstreamStatus).toBe(502);
    expect(err.retryable).toBe(true);
  });

  it('falls back to the first heading, then to the page text, decoding entities and collapsing space', () => {
    const heading = '<!DOCTYPE html>\n<html><body>\n  <h1 class="big">\n Service   <b>Unavailable</b> &amp; down</h1><p>details</p></body></html>';
    expect(upstreamErrorFromBody('p', 503, { 'content-type': 'text/html; charset=utf-8' }, heading).message).toBe(
      'p: upstream answered HTTP 503 with an HTML page ("Service Unavailable & down").',
    );
    const bare = `<div><script>var secret = 1;</script>Access denied for ${'y'.repeat(5000)}</div>`;
    const message = upstreamErrorFromBody('p', 403, {}, bare).message;
    expect(message).toContain('("Access denied for yyy');
    expect(message).not.toContain('secret');
    expect(message.length).toBeLessThan(300);
  });

  it('treats a text/html content type as a page even without a leading tag', () => {
    const err = upstreamErrorFromBody('p', 502, { 'content-type': 'text/html' }, 'Bad gateway, try later');
    expect(err.message).toBe('p: upstream answered HTTP 502 with an HTML page ("Bad gateway, try later").');
  });

  it('cuts an upstream message past 1,000 characters and says how long it was', () => {
    const long = 'm'.repeat(50_000);
    const err = upstreamErrorFromBody('openai', 400, {}, JSON.stringify({ error: { message: long, type: 't'.repeat(10_000), code: 'c' } }));
    expect(err.message).toBe(`${'m'.repeat(1000)}… (50000 characters)`);
    expect(err.type.length).toBeLessThan(200);
  });

  it('upstreamError summarises HTML before a provider reader sees it and bounds what the reader returns', () => {
    let read = 0;
    const reader = (text: string) => {
      read++;
      return new GatewayError({ status: 400, type: 'invalid_request_error', code: 'x', message: text, upstreamStatus: 400 });
    };
    const page = upstreamError('anthropic', 502, { 'content-type': 'text/html' }, '<title>Bad</title>', reader);
    expect(page.message).toBe('anthropic: upstream answered HTTP 502 with an HTML page ("Bad").');
    expect(read).toBe(0);
    const long = upstreamError('anthropic', 400, {}, 'z'.repeat(3000), reader);
    expect(read).toBe(1);
    expect(long.message).toBe(`${'z'.repeat(1000)}… (3000 characters)`);
    expect(long.code).toBe('x');
    expect(long.upstreamStatus).toBe(400);
    const short = upstreamError('anthropic', 400, {}, 'fine', reader);
    expect(short.message).toBe('fine');
  });

  it('says which provider answered which status when the body is empty or says nothing', () => {
    expect(upstreamErrorFromBody('openai', 500, {}, '').message).toBe('openai answered HTTP 500 without an error message.');
    expect(upstreamErrorFromBody('openai', 500, {}, '{}').message).toBe('openai answered HTTP 500 without an error message.');
    expect(upstreamErrorFromBody('openai', 500, {}, '{"error":{"message":""}}').message).toBe('openai answered HTTP 500 without an error message.');
  });

  it.each([
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [408, true],
    [409, true],
    [422, false],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [504, true],
  ])('status %i is retryable: %s', (status, retryable) => {
    expect(upstreamErrorFromBody('p', status, {}, '{}').retryable).toBe(retryable);
    expect(isRetryableStatus(status)).toBe(retryable);
  });

  it('passes retry-after and retry-after-ms through, and nothing else', () => {
    const err = upstreamErrorFromBody('openai', 429, { 'retry-after': '20', 'retry-after-ms': '20000', 'x-request-id': 'abc', 'set-cookie': ['a=b'] }, '{"error":{"message":"rate limited"}}');
    expect(err.headers).toEqual({ 'retry-after': '20', 'retry-after-ms': '20000' });
  });

  it('takes the first value of a repeated header', () => {
    expect(passedErrorHeaders({ 'retry-after': ['5', '7'] })).toEqual({ 'retry-after': '5' });
    expect(passedErrorHeaders({ 'retry-after': undefined })).toEqual({});
  });
});
