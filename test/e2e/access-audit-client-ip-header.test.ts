import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { spawnMain } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// README, "Access": a reverse proxy sets the one header it knows and passes the client's others through unchanged
// (nginx with `proxy_set_header X-Real-IP $remote_addr;` alone forwards an X-Forwarded-For the client wrote). Without
// `settings.client_ip_header` the gateway reads X-Forwarded-For first, so a remote client that writes its own
// non-loopback X-Forwarded-For chooses the address the admin-key throttle counts (30 wrong keys a minute per address)
// and rotates it to guess forever. `client_ip_header: x-real-ip` says which header the proxy sets: only it is read.
//
// The gateway's peer is the proxy on this host (127.0.0.1, trusted); each request carries what such a proxy forwards
// for a client at 203.0.113.9 (a documentation address): the X-Real-IP it sets and the client's own X-Forwarded-For.

const ADMIN_KEY = 'admin-key-for-client-ip-header-tests-0123456789';
const messages = [{ role: 'user' as const, content: 'hi' }];

let upstream: ScriptedUpstream;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
});
afterAll(async () => upstream?.close());

async function send(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

function openai(url: string, headers: Record<string, string>): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 5_000, defaultHeaders: headers });
}

describe('client_ip_header: x-real-ip behind nginx that sets only X-Real-IP', () => {
  it('throttles a remote client after thirty wrong admin keys however it rotates X-Forwarded-For', async () => {
    const tg = await startGateway({ settings: { trusted_proxies: ['127.0.0.1'], client_ip_header: 'x-real-ip' } }, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
    try {
      // Each guess names another made-up client in X-Forwarded-For, through sign-in and Bearer alike.
      const proxied = (i: number): Record<string, string> => ({ 'x-real-ip': '203.0.113.9', 'x-forwarded-for': `198.51.100.${i + 1}` });
      for (let i = 0; i < 15; i++) expect((await send(tg.url, 'POST', '/api/session', proxied(i), { admin_key: `wrong-${i}` })).status, `guess ${i}`).toBe(401);
      for (let i = 15; i < 30; i++) expect((await send(tg.url, 'GET', '/api/keys', { ...proxied(i), authorization: `Bearer wrong-${i}` })).status, `guess ${i}`).toBe(401);
      const refused = await send(tg.url, 'GET', '/api/keys', { ...proxied(30), authorization: 'Bearer wrong-30' });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('too_many_admin_key_attempts');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      // Even the right key, from a fresh X-Forwarded-For or none at all: the address is the proxy's X-Real-IP.
      expect((await send(tg.url, 'GET', '/api/keys', { ...proxied(31), authorization: `Bearer ${ADMIN_KEY}` })).status).toBe(429);
      expect((await send(tg.url, 'POST', '/api/session', { 'x-real-ip': '203.0.113.9', forwarded: 'for=198.51.100.200' }, { admin_key: ADMIN_KEY })).status).toBe(429);
      // Another client the proxy forwards is counted on its own.
      expect((await send(tg.url, 'GET', '/api/keys', { 'x-real-ip': '203.0.113.10', 'x-forwarded-for': '198.51.100.1', authorization: `Bearer ${ADMIN_KEY}` })).status).toBe(200);
    } finally {
      await tg.stop();
    }
  });

  describe('without an admin key', () => {
    let tg: RunningGateway;
    beforeAll(async () => {
      tg = await startGateway({
        providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } },
        settings: { trusted_proxies: ['127.0.0.1'], client_ip_header: 'x-real-ip' },
      });
    });
    afterAll(async () => tg?.stop());

    it('a client X-Real-IP names as remote is remote, whatever X-Forwarded-For or Forwarded it writes', async () => {
      for (const headers of <Array<Record<string, string>>>[
        { 'x-real-ip': '203.0.113.9', 'x-forwarded-for': '127.0.0.1' },
        { 'x-real-ip': '203.0.113.9', forwarded: 'for=127.0.0.1' },
        { 'x-real-ip': '2001:db8::9', 'x-forwarded-for': '::1' },
      ]) {
        const error = await openai(tg.url, headers)
          .chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
          .then(
            () => null,
            (err: unknown) => err,
          );
        expect(error, JSON.stringify(headers)).toBeInstanceOf(OpenAI.AuthenticationError);
        expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code, JSON.stringify(headers)).toBe('virtual_key_required');
        const admin = await send(tg.url, 'GET', '/api/keys', headers);
        expect(admin.status, JSON.stringify(headers)).toBe(403);
        expect(admin.body.error.code, JSON.stringify(headers)).toBe('admin_api_loopback_only');
      }
    });

    it('a client on this machine is local: the X-Forwarded-For it writes is not read', async () => {
      // Without the setting every header must name loopback; with it only the proxy's own counts.
      const headers = { 'x-real-ip': '127.0.0.1', 'x-forwarded-for': '203.0.113.9' };
      const answer = await openai(tg.url, headers).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(answer.choices[0]?.message.content).toBe('echo: hi');
      expect((await send(tg.url, 'GET', '/api/keys', headers)).status).toBe(200);
    });

    it('shows the setting in GET /api/config', async () => {
      const view = await send(tg.url, 'GET', '/api/config');
      expect(view.body.settings).toMatchObject({ trusted_proxies: ['127.0.0.1'], client_ip_header: 'x-real-ip' });
    });

    it('is written through the API, and a header it does not know is a 400 naming the field', async () => {
      const bad = await send(tg.url, 'PATCH', '/api/config', {}, { settings: { client_ip_header: 'x-client-ip' } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.param).toBe('settings.client_ip_header');
      const patched = await send(tg.url, 'PATCH', '/api/config', {}, { settings: { client_ip_header: 'forwarded' } });
      expect(patched.status).toBe(200);
      expect(patched.body.settings.client_ip_header).toBe('forwarded');
      // Now Forwarded alone decides: X-Real-IP is the client's own.
      const viaForwarded = await send(tg.url, 'GET', '/api/keys', { forwarded: 'for=203.0.113.9;proto=https', 'x-real-ip': '127.0.0.1' });
      expect(viaForwarded.status).toBe(403);
      // Removed (merge patch null), the file's x-real-ip applies again.
      const removed = await send(tg.url, 'PATCH', '/api/config', {}, { settings: { client_ip_header: null } });
      expect(removed.status).toBe(200);
      expect(removed.body.settings.client_ip_header).toBe('x-real-ip');
    });
  });
});

describe('TOLLGATE_CLIENT_IP_HEADER', () => {
  it('sets it from the environment (any case), and an unknown header stops the start naming the variable', async () => {
    const tg = await startGateway({}, { TOLLGATE_TRUSTED_PROXIES: '127.0.0.1', TOLLGATE_CLIENT_IP_HEADER: 'X-Real-IP' });
    try {
      expect((await send(tg.url, 'GET', '/api/config')).body.settings.client_ip_header).toBe('x-real-ip');
      expect((await send(tg.url, 'GET', '/api/keys', { 'x-real-ip': '203.0.113.9', 'x-forwarded-for': '198.51.100.1' })).status).toBe(403);
    } finally {
      await tg.stop();
    }
    // Without trusted proxies it has nothing to read: a warning says so.
    const alone = await startGateway({}, { TOLLGATE_CLIENT_IP_HEADER: 'x-real-ip' });
    try {
      const view = (await send(alone.url, 'GET', '/api/config')).body;
      expect(view.warnings).toContainEqual({ field: 'settings.client_ip_header', message: expect.stringContaining('trusted_proxies') });
    } finally {
      await alone.stop();
    }
    await expect(startGateway({}, { TOLLGATE_CLIENT_IP_HEADER: 'x-client-ip' })).rejects.toThrow(/TOLLGATE_CLIENT_IP_HEADER.*x-forwarded-for, forwarded, x-real-ip/);
    await expect(startGateway({ settings: { client_ip_header: 'X-Real-IP' as 'x-real-ip' } })).rejects.toThrow(/client_ip_header/);
  });

  it('is stated in the start-up access line', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-client-ip-'));
    try {
      const started = await spawnMain({ cwd, env: { TOLLGATE_TRUSTED_PROXIES: '127.0.0.1', TOLLGATE_CLIENT_IP_HEADER: 'x-real-ip' } });
      try {
        const access = started.output().split('\n').filter((line) => line.includes('"msg":"access: '));
        expect(access).toHaveLength(1);
        expect(access[0]).toContain('client address from x-real-ip of trusted proxies 127.0.0.1 only (client_ip_header)');
        expect(access[0]).toContain('"clientIpHeader":"x-real-ip"');
      } finally {
        started.child.kill('SIGTERM');
        await started.exit;
      }
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 40_000);
});

describe('without client_ip_header', () => {
  it('a proxy that sets X-Forwarded-For is read as before: the nearest address that is not a trusted proxy', async () => {
    const tg = await startGateway({ settings: { trusted_proxies: ['127.0.0.1'] } }, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
    try {
      expect((await send(tg.url, 'GET', '/api/config', { authorization: `Bearer ${ADMIN_KEY}` })).body.settings.client_ip_header).toBeUndefined();
      // nginx's `$proxy_add_x_forwarded_for` appends the client it saw to what the client wrote.
      for (let i = 0; i < 30; i++) {
        expect((await send(tg.url, 'GET', '/api/keys', { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.9`, authorization: `Bearer wrong-${i}` })).status).toBe(401);
      }
      expect((await send(tg.url, 'GET', '/api/keys', { 'x-forwarded-for': '203.0.113.9', authorization: `Bearer ${ADMIN_KEY}` })).status).toBe(429);
    } finally {
      await tg.stop();
    }
  });
});
