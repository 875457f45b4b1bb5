import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// LiteLLM's clients find a request in their logs by `x-litellm-call-id`, which every /litellm answer carries: the 404
// of a URL nothing under /litellm serves and the 405 of one served with another method too, both in the OpenAI-like
// error shape the LiteLLM proxy answers with. /v1's own 404 stays without it.

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-openai' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

interface OpenAIError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

function expectCallId(headers: Headers): void {
  expect(headers.get('x-request-id')).toBeTruthy();
  expect(headers.get('x-litellm-call-id')).toBe(headers.get('x-request-id'));
}

async function send(method: string, path: string): Promise<{ status: number; headers: Headers; body: OpenAIError }> {
  const response = await fetch(`${tg.url}${path}`, method === 'POST' ? { method, headers: { 'content-type': 'application/json' }, body: '{}' } : { method });
  return { status: response.status, headers: response.headers, body: (await response.json()) as OpenAIError };
}

describe('x-litellm-call-id on /litellm URLs nothing serves', () => {
  it('comes with the 404 of an unknown URL, in the OpenAI error shape', async () => {
    for (const path of ['/litellm/v1/does-not-exist', '/litellm/does-not-exist', '/litellm', '/litellm/completions']) {
      const { status, headers, body } = await send('POST', path);
      expect(status, path).toBe(404);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'unknown_url' });
      expect(body.error.message).toContain(path);
      expectCallId(headers);
    }
    // /v1 is OpenAI's API: its 404 does not name a LiteLLM call.
    const v1 = await send('POST', '/v1/does-not-exist');
    expect(v1.status).toBe(404);
    expect(v1.headers.get('x-litellm-call-id')).toBeNull();
  });

  it('comes with the 405 of a served URL sent with another method, which names the methods in Allow', async () => {
    for (const [method, path, allow] of [
      ['GET', '/litellm/chat/completions', 'POST'],
      ['GET', '/litellm/v1/embeddings', 'POST'],
      ['POST', '/litellm/health', 'GET, HEAD'],
    ] as const) {
      const { status, headers, body } = await send(method, path);
      expect(status, path).toBe(405);
      expect(headers.get('allow')).toBe(allow);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'method_not_allowed' });
      expectCallId(headers);
    }
  });

  it('reaches the openai SDK of a LiteLLM client with the header', async () => {
    const litellm = new OpenAI({ baseURL: `${tg.url}/litellm/v1`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const error = await litellm.post('/does-not-exist', { body: {} }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    const notFound = error as InstanceType<typeof OpenAI.NotFoundError>;
    expect(notFound.code).toBe('unknown_url');
    expectCallId(notFound.headers as Headers);
    // The routes under /litellm are served as before, with the header.
    const answer = await litellm.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(answer.data.choices[0]?.message.content).toBeTruthy();
    expectCallId(answer.response.headers);
    const health = await fetch(`${tg.url}/litellm/health`);
    expect(health.status).toBe(200);
    expectCallId(health.headers);
  });
});
