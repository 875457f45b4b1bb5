import { request } from 'node:http';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namesThisMachine } from '../../src/http/client-address.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * DNS rebinding: a page on another site points its own name at 127.0.0.1, so the user's browser reaches the
 * gateway as a loopback peer, and to the browser the page and the gateway are one origin (Sec-Fetch-Site:
 * same-origin). Its requests still carry the page's name as Host. What is open to loopback clients without a
 * credential (model calls on the operator's keys, the management API without an admin key) must refuse them.
 */

interface Answer {
  status: number;
  body: string;
}

/** A raw request from 127.0.0.1 with the Host (and browser headers) given, as a rebound page's fetch sends it. */
function send(url: string, method: string, path: string, host: string, body?: unknown, extra: Record<string, string> = {}): Promise<Answer> {
  const { port } = new URL(url);
  const headers: Record<string, string> = { host, origin: `http://${host}`, 'sec-fetch-site': 'same-origin', ...extra };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, setHost: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => (text += part));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

describe('a page rebound to 127.0.0.1 (zero config: no admin key, anonymous access for loopback)', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  let port: string;

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    tg = await startGateway(openAIConfig(upstream.url));
    port = new URL(tg.url).port;
  });
  afterAll(async () => {
    await tg.stop();
    await upstream.close();
  });

  it('cannot call a model on the operator\'s keys: 401 in each route\'s own shape, and the upstream is not called', async () => {
    const calls = upstream.calls.length;
    const openai = await send(tg.url, 'POST', '/v1/chat/completions', `rebound.example:${port}`, CHAT);
    expect(openai.status).toBe(401);
    expect(JSON.parse(openai.body)).toMatchObject({ error: { code: 'virtual_key_required', type: 'invalid_request_error' } });
    expect(JSON.parse(openai.body).error.message).toMatch(/localhost or a loopback address/);
    const anthropic = await send(tg.url, 'POST', '/anthropic/v1/messages', `rebound.example:${port}`, { model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    expect(anthropic.status).toBe(401);
    expect(JSON.parse(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(upstream.calls.length).toBe(calls);
  });

  it('cannot read or change the management API: 403 naming the host, and no key is made', async () => {
    const read = await send(tg.url, 'GET', '/api/config', `rebound.example:${port}`);
    expect(read.status).toBe(403);
    expect(JSON.parse(read.body)).toMatchObject({ error: { code: 'admin_api_loopback_only' } });
    expect(JSON.parse(read.body).error.message).toContain("'rebound.example:");
    const create = await send(tg.url, 'POST', '/api/keys', `rebound.example:${port}`, { name: 'rebound' });
    expect(create.status).toBe(403);
    expect(create.body).not.toContain('tg-');
    const keys = await send(tg.url, 'GET', '/api/keys', `127.0.0.1:${port}`);
    expect(keys.status).toBe(200);
    expect(JSON.parse(keys.body).data).toEqual([]);
  });

  it('still serves this machine by every name of it: localhost, 127.x, [::1], *.localhost, its host name', async () => {
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.0.0.2:${port}`, `[::1]:${port}`, `app.localhost:${port}`, `LOCALHOST.:${port}`, `${hostname()}:${port}`]) {
      const chat = await send(tg.url, 'POST', '/v1/chat/completions', host, CHAT);
      expect(chat.status, host).toBe(200);
      const config = await send(tg.url, 'GET', '/api/config', host);
      expect(config.status, host).toBe(200);
    }
  });
});

describe('credentials are not tied to a host', () => {
  it('a virtual key or the admin key is accepted whatever Host the request names', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const tg = await startGateway(openAIConfig(upstream.url), { TOLLGATE_ADMIN_KEY: 'admin-secret-123456' });
    try {
      const port = new URL(tg.url).port;
      const host = `gateway.internal.example:${port}`;
      const auth = { authorization: 'Bearer admin-secret-123456' };
      const created = await send(tg.url, 'POST', '/api/keys', host, { name: 'app' }, auth);
      expect(created.status).toBe(201);
      const secret = (JSON.parse(created.body) as { key: string }).key;
      const chat = await send(tg.url, 'POST', '/v1/chat/completions', host, CHAT, { authorization: `Bearer ${secret}` });
      expect(chat.status).toBe(200);
    } finally {
      await tg.stop();
      await upstream.close();
    }
  });
});

describe('namesThisMachine', () => {
  it('accepts loopback names and addresses with or without a port, and nothing else', () => {
    for (const host of ['localhost', 'localhost:8080', 'a.b.localhost:1', '127.0.0.1', '127.9.9.9:80', '0.0.0.0:8080', '[::1]:8080', '[::1]', '[::]:1', 'LocalHost', undefined]) {
      expect(namesThisMachine(host), String(host)).toBe(true);
    }
    for (const host of ['evil.example', 'evil.example:8080', 'localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.1:8080', '[2001:db8::1]:8080', '', 'localhostx', '128.0.0.1']) {
      expect(namesThisMachine(host), host).toBe(false);
    }
  });
});
