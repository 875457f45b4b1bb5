// An OpenAI-compatible upstream (a self-hosted server, a proxy with a bug) whose answer holds values of the wrong type
// where text or counts belong: a tool call's name and arguments, usage counts, as objects with their own toString and
// valueOf keys (valid JSON, on which String() and `+` throw). A Responses client's whole answer was cut off without
// any HTTP answer (the Response was rendered after its head went), a streamed one ended in a 500; with the cache on,
// every streamed answer with such arguments was a 500, and an answer served from the cache lost its request from the
// usage rollups (GET /api/usage).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const EVIL = { toString: 1, valueOf: 2 };
const ADMIN = 'admin-key-0123456789abcdef';

let upstream: Server;
let tg: RunningGateway;

function chunk(choices: unknown[], extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...extra })}\n\n`;
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let raw = '';
    req.on('data', (data: Buffer) => (raw += data.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as { stream?: boolean; messages: Array<{ content: string }> };
      // 'usage' asks for a plain answer with usage counts of the wrong type; anything else for a tool call with them.
      const usageCase = body.messages.some((message) => message.content === 'usage');
      const call = { index: 0, id: 'call_1', type: 'function', function: { name: EVIL, arguments: EVIL } };
      const usage = usageCase ? { prompt_tokens: EVIL, completion_tokens: EVIL, total_tokens: EVIL } : { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const delta = usageCase ? { role: 'assistant', content: 'fine' } : { role: 'assistant', tool_calls: [call] };
        res.write(chunk([{ index: 0, delta, finish_reason: null }]));
        res.write(chunk([{ index: 0, delta: {}, finish_reason: usageCase ? 'stop' : 'tool_calls' }]));
        res.write(chunk([], { usage }));
        res.end('data: [DONE]\n\n');
        return;
      }
      const message = usageCase ? { role: 'assistant', content: 'fine' } : { role: 'assistant', content: null, tool_calls: [call] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message, finish_reason: usageCase ? 'stop' : 'tool_calls' }], usage }));
    });
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  tg = await startGateway(
    {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      // vLLM: a chat-completions server (a Responses request is translated for it).
      providers: { selfhosted: { type: 'vllm', base_url: url, api_key: 'sk-any' } },
      cache: { mode: 'on', semantic: { enabled: false } },
    },
    { TOLLGATE_ADMIN_KEY: ADMIN },
  );
});

afterAll(async () => {
  await tg?.stop();
  upstream?.closeAllConnections();
  await new Promise((done) => upstream?.close(done));
});

async function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

describe('an upstream answer with a tool call whose name and arguments are not text', () => {
  it('reaches a Responses client as a Response, whole and streamed', async () => {
    const whole = await post('/v1/responses', { model: 'selfhosted/m', input: 'call it', store: false });
    expect(whole.status).toBe(200);
    const response = JSON.parse(whole.text) as { status: string; output: Array<{ type: string; name: string }> };
    expect(response.status).toBe('completed');
    expect(response.output[0]).toMatchObject({ type: 'function_call', name: JSON.stringify(EVIL) });

    const streamed = await tg.client.responses.create({ model: 'selfhosted/m', input: 'call it too', stream: true });
    const types: string[] = [];
    for await (const event of streamed) types.push(event.type);
    expect(types.at(-1)).toBe('response.completed');
  });

  it('streams to a chat client through the cache to its end', async () => {
    const streamed = await post('/v1/chat/completions', { model: 'selfhosted/m', stream: true, messages: [{ role: 'user', content: 'call it' }] });
    expect(streamed.status).toBe(200);
    expect(streamed.text).not.toContain('"error"');
    expect(streamed.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});

describe('usage counts that are not numbers', () => {
  it('an answer the cache serves is counted in the usage rollups like the one it stored', async () => {
    const ask = { model: 'selfhosted/counted', messages: [{ role: 'user', content: 'usage' }] };
    expect((await post('/v1/chat/completions', ask)).status).toBe(200);
    const again = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ask) });
    expect(again.headers.get('x-tollgate-cache')).toBe('hit-exact');
    await again.text();
    const deadline = Date.now() + 5_000;
    let requests = 0;
    while (Date.now() < deadline) {
      const usage = (await (await fetch(`${tg.url}/api/usage?group_by=model`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { totals: Array<{ group: string; requests: number }> };
      requests = usage.totals.find((row) => row.group === 'selfhosted/counted')?.requests ?? 0;
      if (requests >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(requests).toBe(2);
  });
});
