import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const ADMIN_KEY = 'admin-key-for-session-tests-0123456789';

async function send(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

describe('dashboard sign-in with the admin key', () => {
  let tg: RunningGateway;
  beforeAll(async () => {
    tg = await startGateway({}, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
  });
  afterAll(async () => tg.stop());

  it('exchanges the admin key for an httpOnly, SameSite=Strict session cookie that opens /api, until signed out', async () => {
    expect((await send(tg.url, 'GET', '/api/session')).body).toEqual({ admin_key_required: true, signed_in: false });
    const wrong = await send(tg.url, 'POST', '/api/session', {}, { admin_key: 'not-it' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('invalid_admin_key');
    expect(wrong.headers.get('set-cookie')).toBeNull();

    const signIn = await send(tg.url, 'POST', '/api/session', {}, { admin_key: ADMIN_KEY });
    expect(signIn.status).toBe(200);
    const setCookie = signIn.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^tollgate_admin_session=[A-Za-z0-9_-]{40,}; HttpOnly; SameSite=Strict; Path=\/api; Max-Age=43200$/);
    expect(setCookie).not.toContain(ADMIN_KEY);
    const cookie = setCookie.split(';')[0] as string;

    expect((await send(tg.url, 'GET', '/api/keys')).status).toBe(401);
    expect((await send(tg.url, 'GET', '/api/keys', { cookie })).status).toBe(200);
    expect((await send(tg.url, 'GET', '/api/session', { cookie })).body.signed_in).toBe(true);
    // A made-up or altered cookie opens nothing.
    expect((await send(tg.url, 'GET', '/api/keys', { cookie: `${cookie}x` })).status).toBe(401);

    const created = await send(tg.url, 'POST', '/api/keys', { cookie, origin: tg.url, 'sec-fetch-site': 'same-origin' }, { name: 'from-the-dashboard' });
    expect(created.status).toBe(201);

    const signOut = await send(tg.url, 'DELETE', '/api/session', { cookie });
    expect(signOut.headers.get('set-cookie')).toMatch(/^tollgate_admin_session=; .*Max-Age=0/);
    expect((await send(tg.url, 'GET', '/api/keys', { cookie })).status).toBe(401);
  });

  it('marks the cookie Secure when a trusted TLS-terminating proxy says the browser came over https, and only then', async () => {
    const proxied = await startGateway({ settings: { trusted_proxies: ['127.0.0.1'] } }, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
    try {
      const viaHttps = await send(proxied.url, 'POST', '/api/session', { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' }, { admin_key: ADMIN_KEY });
      expect(viaHttps.headers.get('set-cookie')).toMatch(/; Secure$/);
      const forwarded = await send(proxied.url, 'POST', '/api/session', { forwarded: 'for=203.0.113.7;proto=https' }, { admin_key: ADMIN_KEY });
      expect(forwarded.headers.get('set-cookie')).toMatch(/; Secure$/);
      const viaHttp = await send(proxied.url, 'POST', '/api/session', { 'x-forwarded-proto': 'http' }, { admin_key: ADMIN_KEY });
      expect(viaHttp.headers.get('set-cookie')).not.toContain('Secure');
    } finally {
      await proxied.stop();
    }
    // The header from a peer that is not a trusted proxy says nothing.
    const direct = await send(tg.url, 'POST', '/api/session', { 'x-forwarded-proto': 'https' }, { admin_key: ADMIN_KEY });
    expect(direct.headers.get('set-cookie')).not.toContain('Secure');
  });

  it('refuses an address after thirty wrong admin keys in a minute, through sign-in and Bearer alike, even with the right key', async () => {
    const guarded = await startGateway({}, { TOLLGATE_ADMIN_KEY: ADMIN_KEY });
    try {
      expect((await send(guarded.url, 'GET', '/api/keys', { authorization: `Bearer ${ADMIN_KEY}` })).status).toBe(200);
      for (let i = 0; i < 15; i++) expect((await send(guarded.url, 'POST', '/api/session', {}, { admin_key: `wrong-${i}` })).status).toBe(401);
      for (let i = 0; i < 15; i++) expect((await send(guarded.url, 'GET', '/api/keys', { authorization: `Bearer wrong-${i}` })).status).toBe(401);
      const refused = await send(guarded.url, 'GET', '/api/keys', { authorization: `Bearer ${ADMIN_KEY}` });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('too_many_admin_key_attempts');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await send(guarded.url, 'POST', '/api/session', {}, { admin_key: ADMIN_KEY })).status).toBe(429);
    } finally {
      await guarded.stop();
    }
  });

  it('refuses state-changing calls a browser sends from another site, with or without a session', async () => {
    const signIn = await send(tg.url, 'POST', '/api/session', {}, { admin_key: ADMIN_KEY });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const fromElsewhere = await send(tg.url, 'POST', '/api/keys', { cookie, origin: 'https://evil.example' }, { name: 'forged' });
    expect(fromElsewhere.status).toBe(403);
    expect(fromElsewhere.body.error.code).toBe('cross_site_request');
    expect((await send(tg.url, 'DELETE', '/api/session', { cookie, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // Signing in from another site is refused too (no login forgery).
    expect((await send(tg.url, 'POST', '/api/session', { origin: 'https://evil.example' }, { admin_key: ADMIN_KEY })).status).toBe(403);
    // Reads are not state-changing; scripts (no Origin) are unaffected.
    expect((await send(tg.url, 'GET', '/api/keys', { cookie, origin: 'https://evil.example' })).status).toBe(200);
    expect((await send(tg.url, 'POST', '/api/keys', { authorization: `Bearer ${ADMIN_KEY}` }, { name: 'from-a-script' })).status).toBe(201);
  });
});

describe('without an admin key', () => {
  it('has nothing to sign in to, and still refuses cross-site changes to the loopback-open API', async () => {
    const tg = await startGateway({});
    try {
      expect((await send(tg.url, 'GET', '/api/session')).body).toEqual({ admin_key_required: false, signed_in: false });
      expect((await send(tg.url, 'POST', '/api/session', {}, { admin_key: 'x' })).status).toBe(400);
      const forged = await send(tg.url, 'POST', '/api/keys', { origin: 'http://attacker.test' }, { name: 'forged' });
      expect(forged.status).toBe(403);
      expect((await send(tg.url, 'POST', '/api/keys', {}, { name: 'local-script' })).status).toBe(201);
    } finally {
      await tg.stop();
    }
  });
});

describe('GET /api/keys, paged', () => {
  it('answers pages with a cursor and searches names, and still lists everything without a limit', async () => {
    const tg = await startGateway({});
    try {
      for (const name of ['alpha', 'beta', 'gamma', 'alphabet']) expect((await send(tg.url, 'POST', '/api/keys', {}, { name })).status).toBe(201);
      const first = (await send(tg.url, 'GET', '/api/keys?limit=3')).body;
      expect(first.data.map((key: { name: string }) => key.name)).toEqual(['alpha', 'beta', 'gamma']);
      expect(first).toMatchObject({ has_more: true, next_after: expect.any(String) });
      // The id of the last key of a page still works as a cursor, as it did.
      expect((await send(tg.url, 'GET', `/api/keys?limit=3&after=${first.data[2].id}`)).body.data.map((key: { name: string }) => key.name)).toEqual(['alphabet']);
      const second = (await send(tg.url, 'GET', `/api/keys?limit=3&after=${first.next_after}`)).body;
      expect(second).toMatchObject({ has_more: false, next_after: null });
      expect(second.data.map((key: { name: string }) => key.name)).toEqual(['alphabet']);
      expect((await send(tg.url, 'GET', '/api/keys?q=ALPHA&limit=10')).body.data.map((key: { name: string }) => key.name)).toEqual(['alpha', 'alphabet']);
      expect((await send(tg.url, 'GET', '/api/keys')).body.data).toHaveLength(4);
      expect((await send(tg.url, 'GET', '/api/keys?limit=0')).status).toBe(400);
      expect((await send(tg.url, 'GET', '/api/keys?limit=2&after=vk_unknown')).body.error.param).toBe('after');
      expect((await send(tg.url, 'GET', '/api/keys?limit=2&after=c_bm90IGEgY3Vyc29y')).body.error.param).toBe('after');
    } finally {
      await tg.stop();
    }
  });

  it('goes on from where a page ended when the last key of that page was deleted meanwhile', async () => {
    const tg = await startGateway({});
    try {
      for (const name of ['k1', 'k2', 'k3', 'k4', 'k5']) expect((await send(tg.url, 'POST', '/api/keys', {}, { name })).status).toBe(201);
      const first = (await send(tg.url, 'GET', '/api/keys?limit=2')).body;
      expect(first.data.map((key: { name: string }) => key.name)).toEqual(['k1', 'k2']);
      // Another admin deletes k2 (the page's last key, the one the cursor names) and k3 while the client pages.
      expect((await send(tg.url, 'DELETE', `/api/keys/${first.data[1].id}`)).status).toBe(204);
      const k3 = (await send(tg.url, 'GET', '/api/keys?q=k3&limit=1')).body.data[0];
      expect((await send(tg.url, 'DELETE', `/api/keys/${k3.id}`)).status).toBe(204);
      const second = await send(tg.url, 'GET', `/api/keys?limit=2&after=${encodeURIComponent(first.next_after)}`);
      expect(second.status).toBe(200);
      expect(second.body.data.map((key: { name: string }) => key.name)).toEqual(['k4', 'k5']);
      expect(second.body).toMatchObject({ has_more: false, next_after: null });
    } finally {
      await tg.stop();
    }
  });
});
