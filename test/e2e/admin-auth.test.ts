import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isLoopbackAddress as isLoopback } from '../../src/config/address.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { AdminClient, nonLoopbackAddress, startExposedGateway } from '../helpers/admin.js';

const ADMIN_KEY = 'tollgate-admin-key-for-tests-5b2e';
let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
});
beforeEach(() => upstream.reset());

describe('with TOLLGATE_ADMIN_KEY set', () => {
  it('requires Authorization: Bearer <admin key> on every /api route', async () => {
    const tg = await startGateway({}, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
    try {
      const anonymous = new AdminClient(tg.url);
      const admin = new AdminClient(tg.url, ADMIN_KEY);
      const probes: Array<[string, string]> = [
        ['GET', '/api/config'],
        ['GET', '/api/config/schema'],
        ['PUT', '/api/providers/lab-a'],
        ['POST', '/api/providers/openai/keys'],
        ['DELETE', '/api/routes/x'],
        ['GET', '/api/audit'],
        // Unknown paths too, so the API's shape cannot be probed without the key.
        ['GET', '/api/nope'],
      ];
      for (const [method, path] of probes) {
        for (const key of [null, 'wrong-key', `${ADMIN_KEY}x`, ADMIN_KEY.slice(0, -1), '']) {
          const res = await anonymous.request(method, path, method === 'GET' || method === 'DELETE' ? undefined : { type: 'openai' }, { key });
          expect(res.status, `${method} ${path} with ${String(key)}`).toBe(401);
          expect(res.body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_admin_key' });
          expect(res.headers.get('www-authenticate')).toContain('Bearer');
        }
      }
      // Another scheme carrying the right key is still refused.
      const basic = await fetch(`${tg.url}/api/config`, { headers: { authorization: `Basic ${ADMIN_KEY}` } });
      expect(basic.status).toBe(401);
      // The refused write changed nothing.
      expect(tg.gateway.configService.current().providers.has('lab-a')).toBe(false);

      expect((await admin.get('/api/config')).status).toBe(200);
      expect((await admin.get('/api/nope')).status).toBe(404);
      const lower = await fetch(`${tg.url}/api/config`, { headers: { authorization: `bearer ${ADMIN_KEY}` } });
      expect(lower.status).toBe(200);

      const created = await admin.put('/api/providers/lab-a', { type: 'openai', base_url: `${upstream.url}/v1` });
      expect(created.status).toBe(201);
      const audit = await admin.get('/api/audit?limit=1');
      expect(audit.body.data[0]).toMatchObject({ action: 'provider.created', actor: { kind: 'admin-key', id: '127.0.0.1' } });
      // The actor names where the change came from, never the key.
      expect(audit.text).not.toContain(ADMIN_KEY);

      // The admin key guards /api only: the OpenAI API and health answer as before.
      const completion = await tg.client.chat.completions.create({ model: 'lab-a/m', messages: [{ role: 'user', content: 'hi' }] });
      expect(completion.choices[0]?.message.content).toBe('echo: hi');
      expect((await fetch(`${tg.url}/health`)).status).toBe(200);
    } finally {
      await tg.stop();
    }
  });
});

describe('without an admin key', () => {
  it('answers loopback clients and records them as such', async () => {
    const tg = await startGateway();
    try {
      const api = new AdminClient(tg.url);
      expect((await api.get('/api/config')).status).toBe(200);
      // A bearer token is not needed and not checked.
      expect((await api.get('/api/config', { key: 'anything' })).status).toBe(200);
    } finally {
      await tg.stop();
    }
  });

  const remote = nonLoopbackAddress();
  it.skipIf(remote === null)('refuses clients from other addresses with 403 admin_api_loopback_only', async () => {
    const exposed = await startExposedGateway();
    try {
      const fromAfar = new AdminClient(`http://${remote}:${exposed.port}`);
      for (const path of ['/api/config', '/api/providers', '/api/nope']) {
        const res = await fromAfar.get(path);
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: 'permission_error', code: 'admin_api_loopback_only' });
        expect(res.body.error.message).toContain('TOLLGATE_ADMIN_KEY');
      }
      const write = await fromAfar.put('/api/providers/lab-a', { type: 'openai' });
      expect(write.status).toBe(403);
      expect(exposed.gateway.configService.current().providers.has('lab-a')).toBe(false);
      // Only /api is restricted.
      expect((await fetch(`http://${remote}:${exposed.port}/health`)).status).toBe(200);
      // A forwarded-for header cannot make a remote client look local.
      const spoofed = await fetch(`http://${remote}:${exposed.port}/api/config`, { headers: { 'x-forwarded-for': '127.0.0.1' } });
      expect(spoofed.status).toBe(403);
      expect((await new AdminClient(`http://127.0.0.1:${exposed.port}`).get('/api/config')).status).toBe(200);
    } finally {
      await exposed.stop();
    }
  });

  it.skipIf(remote === null)('with an admin key set, remote clients are served when they present it', async () => {
    const exposed = await startExposedGateway({}, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
    try {
      const base = `http://${remote}:${exposed.port}`;
      expect((await new AdminClient(base).get('/api/config')).status).toBe(401);
      const put = await new AdminClient(base, ADMIN_KEY).put('/api/routes/r', { targets: [{ model: 'openai/gpt-4o' }] });
      expect(put.status).toBe(201);
      expect(exposed.gateway.configService.audit({ limit: 1 })[0]?.actor).toEqual({ kind: 'admin-key', id: remote });
    } finally {
      await exposed.stop();
    }
  });
});

describe('isLoopback', () => {
  it('accepts 127.0.0.0/8, ::1 and IPv4-mapped loopback only', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::FFFF:127.9.9.9']) {
      expect(isLoopback(address), address).toBe(true);
    }
    for (const address of [undefined, '', '10.0.0.1', '128.0.0.1', '::ffff:10.0.0.1', '::2', 'fe80::1', '0.0.0.0', '::', '127.example.com']) {
      expect(isLoopback(address), String(address)).toBe(false);
    }
  });
});
