import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

let primary: ScriptedUpstream;
let backup: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  primary = await startOpenAIUpstream({ apiKey: 'sk-test' });
  backup = await startOpenAIUpstream({ apiKey: 'sk-test' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${primary.url}/v1`, api_key: 'sk-test' },
      spare: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-test' },
    },
    routes: { 'embed-default': { targets: [{ model: 'openai/text-embedding-3-small', weight: 1 }], fallbacks: ['spare/text-embedding-3-small'] } },
  });
});
afterAll(async () => {
  await tg.stop();
  await primary.close();
  await backup.close();
});
beforeEach(() => {
  primary.reset();
  backup.reset();
});

/** The first request's log entry, once written (without a key it is written just after the answer). */
async function lastLog(): Promise<{ model: string; status: number; prompt_tokens: number; cost_usd: number; priced: boolean }> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as { data: Array<any> };
    if (body.data[0] || Date.now() > deadline) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('POST /v1/embeddings', () => {
  it('answers the official client (base64 by default, decoded by the client) and bills the catalogue price', async () => {
    const response = await tg.client.embeddings.create({ model: 'openai/text-embedding-3-small', input: ['first text', 'second text'] });
    expect(response.data).toHaveLength(2);
    expect(response.data[0]?.embedding).toHaveLength(8);
    expect(response.data[0]?.embedding).not.toEqual(response.data[1]?.embedding);
    expect(response.model).toBe('openai/text-embedding-3-small');
    expect(response.usage.prompt_tokens).toBe(4);
    expect(primary.calls[0]?.path).toBe('/v1/embeddings');
    expect(primary.calls[0]?.body).toMatchObject({ model: 'text-embedding-3-small', input: ['first text', 'second text'] });
    const log = await lastLog();
    expect(log).toMatchObject({ model: 'openai/text-embedding-3-small', status: 200, prompt_tokens: 4, priced: true });
    // text-embedding-3-small: $0.02 per million tokens.
    expect(log.cost_usd).toBeCloseTo((4 * 0.02) / 1e6, 12);
  });

  it('passes float encoding and dimensions through', async () => {
    const response = await tg.client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'hello', encoding_format: 'float', dimensions: 4 });
    expect(response.data[0]?.embedding).toHaveLength(4);
    expect(primary.calls[0]?.body).toMatchObject({ encoding_format: 'float', dimensions: 4 });
  });

  it('is routed like chat: a failing target falls back', async () => {
    primary.enqueue({ kind: 'error', status: 503 }, { kind: 'error', status: 503 }, { kind: 'error', status: 503 });
    const { data, response } = await tg.client.embeddings.create({ model: 'embed-default', input: 'hello' }).withResponse();
    expect(data.data).toHaveLength(1);
    expect(response.headers.get('x-tollgate-provider')).toBe('spare');
    expect(response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(backup.calls).toHaveLength(1);
  });

  it('takes the fallbacks a request names off the upstream request and falls back to them, as chat does', async () => {
    primary.setMode({ kind: 'error', status: 503 });
    const params = { model: 'openai/text-embedding-3-small', input: 'hello', fallbacks: ['spare/text-embedding-3-small'] };
    const { data, response } = await tg.client.embeddings.create(params as OpenAI.EmbeddingCreateParams).withResponse();
    expect(data.data).toHaveLength(1);
    expect(response.headers.get('x-tollgate-provider')).toBe('spare');
    expect(response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(primary.calls[0]?.body).not.toHaveProperty('fallbacks');
    expect(backup.calls[0]?.body).toEqual({ model: 'text-embedding-3-small', input: 'hello', encoding_format: 'base64' });

    // A fallback that names nothing is the client's 400, before any call.
    primary.reset();
    const bad = await tg.client.embeddings.create({ ...params, fallbacks: ['nowhere'] } as OpenAI.EmbeddingCreateParams).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ code: 'invalid_fallback', param: 'fallbacks[0]' });
    expect(primary.calls).toHaveLength(0);
  });

  it('is governed by virtual keys like chat', async () => {
    const created = (await (
      await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'embedder', models: ['openai/*'] }) })
    ).json()) as { key: string; id: string };
    const keyed = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.key, maxRetries: 0 });
    await keyed.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'one two three' });
    const refused = await keyed.embeddings.create({ model: 'spare/text-embedding-3-small', input: 'x' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const record = (await (await fetch(`${tg.url}/api/keys/${created.id}`)).json()) as { requests: number };
    expect(record.requests).toBe(1);
  });

  it('refuses bad input with OpenAI-style 400s before any upstream call', async () => {
    for (const [body, param] of [
      [{ model: 'openai/text-embedding-3-small' }, 'input'],
      [{ model: 'openai/text-embedding-3-small', input: '' }, 'input'],
      [{ model: 'openai/text-embedding-3-small', input: [1, 'a'] }, 'input'],
      [{ model: 'openai/text-embedding-3-small', input: 'x', dimensions: 0 }, 'dimensions'],
      [{ input: 'x' }, 'model'],
    ] as const) {
      const response = await fetch(`${tg.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(response.status).toBe(400);
      const error = ((await response.json()) as { error: { param: string; type: string } }).error;
      expect(error).toMatchObject({ param, type: 'invalid_request_error' });
    }
    // A model that is not a string is said to be of the wrong type, not to be missing (as on chat completions).
    const wrongType = await fetch(`${tg.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 42, input: 'x' }) });
    expect(wrongType.status).toBe(400);
    expect(((await wrongType.json()) as { error: unknown }).error).toMatchObject({ code: 'invalid_type', param: 'model', message: "Invalid type for 'model': expected a string." });
    expect(primary.calls).toHaveLength(0);
  });

  it('gives the client the encoding it asked for when a compatible server ignores encoding_format', async () => {
    // Ollama's /v1/embeddings answers float arrays to a base64 request (https://github.com/ollama/ollama/issues/6934).
    const vector = [0.125, -0.5, 0.3, 1e-7];
    const floats = JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: vector }], model: 'nomic-embed-text', usage: { prompt_tokens: 2, total_tokens: 2 } });
    primary.enqueue({ kind: 'raw', status: 200, body: floats });
    // The SDK asks for base64 by default and decodes it.
    const decoded = await tg.client.embeddings.create({ model: 'openai/nomic-embed-text', input: 'hello there' });
    expect(primary.calls[0]?.body).toMatchObject({ encoding_format: 'base64' });
    expect(decoded.data[0]?.embedding).toEqual(Array.from(new Float32Array(vector)));
    expect(decoded.usage.prompt_tokens).toBe(2);

    // And the other way round: a base64 answer to a float request reaches the client as floats.
    const base64 = Buffer.from(new Float32Array(vector).buffer).toString('base64');
    primary.enqueue({ kind: 'raw', status: 200, body: floats.replace(JSON.stringify(vector), JSON.stringify(base64)) });
    const floatsAsked = await tg.client.embeddings.create({ model: 'openai/nomic-embed-text', input: 'hello there', encoding_format: 'float' });
    expect(floatsAsked.data[0]?.embedding).toEqual(Array.from(new Float32Array(vector)));
  });

  it('keeps the upstream error status and message', async () => {
    primary.setMode({ kind: 'error', status: 400, message: 'This model does not support dimensions' });
    const error = await tg.client.embeddings.create({ model: 'openai/text-embedding-ada-002', input: 'x', dimensions: 3 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain('This model does not support dimensions');
  });
});
