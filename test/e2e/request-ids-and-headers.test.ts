import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Issue 14: every answer carries `x-request-id`, the id under which the request is found in the request log; the
 * upstream's own id comes back as `x-upstream-request-id`; the headers a vendor's SDK sends for the vendor reach
 * that vendor (and no other), and an operator allow-list forwards more.
 */
let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;

const ID = /^\d{15}-\d{6}$/;

beforeAll(async () => {
  openai = await startOpenAIUpstream();
  anthropic = await startAnthropicUpstream();
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream-test' },
      // Another vendor speaking the same wire format, on the same scripted server: OpenAI's headers must not reach it.
      groq: { base_url: `${openai.url}/v1`, api_key: 'gsk-test' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-test' },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await openai.close();
  await anthropic.close();
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

async function logEntry(id: string): Promise<Response> {
  // Without a virtual key the log entry is written just after the answer ends.
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${tg.url}/api/logs/${id}`);
    if (res.status !== 404) return res;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return fetch(`${tg.url}/api/logs/${id}`);
}

describe('x-request-id', () => {
  it('is the id the request log keeps the request under', async () => {
    const { data, response } = await tg.client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBeTruthy();
    const id = response.headers.get('x-request-id');
    expect(id).toMatch(ID);
    const res = await logEntry(id!);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(ID);
    expect(res.headers.get('x-request-id')).not.toBe(id);
    const entry = (await res.json()) as { id: string; model: string; provider: string };
    expect(entry).toMatchObject({ id, model: 'openai/gpt-4o-mini', provider: 'openai' });
    // It is also the id the log list shows.
    const list = (await (await fetch(`${tg.url}/api/logs?limit=5`)).json()) as { data: Array<{ id: string }> };
    expect(list.data.map((row) => row.id)).toContain(id);
  });

  it('finds a streamed request and one made with a virtual key too', async () => {
    const created = (await (
      await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ids' }) })
    ).json()) as { key: string; id: string };
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.key, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true })
      .withResponse();
    for await (const _chunk of stream) void _chunk;
    const id = response.headers.get('x-request-id')!;
    expect(id).toMatch(ID);
    const entry = (await (await logEntry(id)).json()) as { id: string; key_id: string; stream: boolean };
    expect(entry).toMatchObject({ id, key_id: created.id, stream: true });
  });

  it('is on every answer: model list, unknown URL, bad JSON, 413, 415, health, admin API, Anthropic errors', async () => {
    const answers = await Promise.all([
      fetch(`${tg.url}/v1/models`),
      fetch(`${tg.url}/v1/nowhere`),
      fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' }),
      fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', messages: [], pad: 'x'.repeat(21 * 1024 * 1024) }) }),
      fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' }),
      fetch(`${tg.url}/health`),
      fetch(`${tg.url}/api/config`),
      fetch(`${tg.url}/anthropic/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' }),
    ]);
    expect(answers.map((res) => res.status)).toEqual([200, 404, 400, 413, 415, 200, 200, 400]);
    const ids = answers.map((res) => res.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(ID);
    expect(new Set(ids).size).toBe(ids.length);
    // Anthropic's clients read `request-id`; it is the same id, in the header and the body.
    const anthropicError = answers[7]!;
    expect(anthropicError.headers.get('request-id')).toBe(anthropicError.headers.get('x-request-id'));
    expect(((await anthropicError.json()) as { request_id: string }).request_id).toBe(anthropicError.headers.get('x-request-id'));
  });

  it('is on an answer the HTTP parser refuses before any route', async () => {
    const { connect } = await import('node:net');
    const { port } = new URL(tg.url);
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n'));
      let text = '';
      socket.on('data', (data) => (text += data.toString('latin1')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/\r\nx-request-id: \d{15}-\d{6}\r\n/);
  });

  it('passes the upstream id as x-upstream-request-id, errors included', async () => {
    const { response } = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(response.headers.get('x-upstream-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(response.headers.get('x-upstream-request-id')).not.toBe(response.headers.get('x-request-id'));

    const messages = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const { response: anthropicResponse } = await messages.messages
      .create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(anthropicResponse.headers.get('x-upstream-request-id')).toMatch(/^req_/);
    expect(anthropicResponse.headers.get('request-id')).toBe(anthropicResponse.headers.get('x-request-id'));

    openai.enqueue({ kind: 'error', status: 400, message: "Invalid value for 'temperature'" });
    const failed = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as InstanceType<typeof OpenAI.APIError>).headers?.get('x-upstream-request-id')).toMatch(/^req_/);
  });
});

describe('vendor headers', () => {
  it("forwards OpenAI's organization, project, beta and idempotency headers to OpenAI only", async () => {
    const client = new OpenAI({
      baseURL: `${tg.url}/v1`,
      apiKey: 'unused',
      organization: 'org-abc',
      project: 'proj_123',
      maxRetries: 0,
      defaultHeaders: { 'OpenAI-Beta': 'assistants=v2', 'Idempotency-Key': 'idem-1', 'X-Not-Listed': 'no' },
    });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const toOpenAI = openai.calls.at(-1)!.headers;
    expect(toOpenAI).toMatchObject({ 'openai-organization': 'org-abc', 'openai-project': 'proj_123', 'openai-beta': 'assistants=v2', 'idempotency-key': 'idem-1' });
    expect(toOpenAI['x-not-listed']).toBeUndefined();
    // The client's credential for tollgate never reaches the provider.
    expect(toOpenAI.authorization).toBe('Bearer sk-upstream-test');

    await client.chat.completions.create({ model: 'groq/llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'hi' }] });
    const toGroq = openai.calls.at(-1)!.headers;
    expect(toGroq.authorization).toBe('Bearer gsk-test');
    expect(toGroq['openai-organization']).toBeUndefined();
    expect(toGroq['openai-project']).toBeUndefined();
    expect(toGroq['openai-beta']).toBeUndefined();
  });

  it("forwards anthropic-version and anthropic-beta from /anthropic to Anthropic, replacing the adapter's default", async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    await client.messages.create(
      { model: 'anthropic/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,context-1m-2025-08-07' } },
    );
    const sent = anthropic.calls.at(-1)!.headers;
    expect(sent['anthropic-beta']).toBe('interleaved-thinking-2025-05-14,context-1m-2025-08-07');
    // The SDK names the API version it was written for; that is the one the upstream sees.
    expect(sent['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);

    const raw = await fetch(`${tg.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2099-01-01' },
      body: JSON.stringify({ model: 'anthropic/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(raw.status).toBe(200);
    expect(anthropic.calls.at(-1)!.headers['anthropic-version']).toBe('2099-01-01');
  });

  it("does not forward Anthropic's headers from the OpenAI route, where the adapter translates the body", async () => {
    await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2099-01-01', 'anthropic-beta': 'x' },
      body: JSON.stringify({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const sent = anthropic.calls.at(-1)!.headers;
    expect(sent['anthropic-version']).toBe('2023-06-01');
    expect(sent['anthropic-beta']).toBeUndefined();
  });
});

describe('settings.forward_headers', () => {
  it('forwards the listed client headers to every provider, and only those', async () => {
    const own = await startGateway({
      settings: { forward_headers: ['x-trace-tenant'], routing: { retry: { max_attempts: 1 } } },
      providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream-test' }, groq: { base_url: `${openai.url}/v1`, api_key: 'gsk-test' } },
    });
    try {
      const client = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'X-Trace-Tenant': 'acme', 'X-Other': 'no' } });
      for (const model of ['openai/gpt-4o-mini', 'groq/llama-3.3-70b-versatile']) {
        await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
        const sent = openai.calls.at(-1)!.headers;
        expect(sent['x-trace-tenant']).toBe('acme');
        expect(sent['x-other']).toBeUndefined();
      }
    } finally {
      await own.stop();
    }
  });

  it('refuses credentials and hop-by-hop headers in the list', async () => {
    // x-litellm-api-key carries a LiteLLM client's virtual key: it must never reach a provider either.
    for (const header of ['authorization', 'x-litellm-api-key']) {
      const res = await fetch(`${tg.url}/api/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ settings: { forward_headers: [header] } }),
      });
      expect(res.status).toBe(400);
      expect(JSON.stringify(await res.json())).toContain('never forwarded');
    }
  });
});
