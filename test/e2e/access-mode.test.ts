import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** An address of this machine that is not loopback: a client connecting to it is "another machine" to the gateway. */
function externalAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((item) => item !== undefined && item.family === 'IPv4' && !item.internal);
  if (!found) throw new Error('this test needs a non-loopback IPv4 interface to connect from');
  return found.address;
}

interface Running {
  gateway: Gateway;
  port: number;
  logs: string[];
  stop(): Promise<void>;
}

let upstream: ScriptedUpstream;
const external = externalAddress();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
});
afterAll(() => upstream.close());

/** A gateway on all interfaces, as `npm start` runs it, with its log lines captured. */
async function start(settings: ConfigInput['settings'] = {}, env: Record<string, string> = {}): Promise<Running> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-access-'));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const gateway = await createGateway({
    config: { settings: { data_dir: dataDir, ...settings }, providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } } },
    env,
    log: pino({ level: 'info' }, sink),
  });
  const url = await gateway.listen({ port: 0, host: '0.0.0.0' });
  const port = Number(new URL(url).port);
  return {
    gateway,
    port,
    logs,
    async stop() {
      await gateway.close(200);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const messages = [{ role: 'user' as const, content: 'hi' }];

function openai(host: string, port: number, apiKey = 'unused', headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `http://${host}:${port}/v1`, apiKey, maxRetries: 0, timeout: 5000, defaultHeaders: headers });
}

describe('zero config: anonymous model calls from this machine only', () => {
  let running: Running;
  beforeAll(async () => {
    running = await start();
  });
  afterAll(() => running.stop());

  it('serves a loopback client without a key', async () => {
    const completion = await openai('127.0.0.1', running.port).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
  });

  it("counts a browser page of another site as no local client, whatever its peer: 401 in each route's shape; a page served from this machine is local", async () => {
    // Browsers send Origin; the gateway answers cross-origin pages (CORS), so a page must not borrow the operator's access.
    const calls = upstream.calls.length;
    const foreign = { origin: 'https://app.example' };
    const chat = await openai('127.0.0.1', running.port, 'unused', foreign).chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(chat).toMatchObject({ status: 401, code: 'virtual_key_required' });
    const list = await openai('127.0.0.1', running.port, 'unused', foreign).models.list().catch((err: unknown) => err);
    expect(list).toMatchObject({ status: 401 });
    const anthropic = new Anthropic({ baseURL: `http://127.0.0.1:${running.port}/anthropic`, apiKey: 'unused', maxRetries: 0, defaultHeaders: foreign });
    const message = await anthropic.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages }).catch((err: unknown) => err);
    expect(message).toBeInstanceOf(Anthropic.AuthenticationError);
    for (const origin of ['null', 'not a url']) {
      const refused = await openai('127.0.0.1', running.port, 'unused', { origin }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).catch((err: unknown) => err);
      expect(refused, origin).toMatchObject({ status: 401 });
    }
    expect(upstream.calls.length).toBe(calls);
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:3000', `http://127.0.0.1:${running.port}`]) {
      const completion = await openai('127.0.0.1', running.port, 'unused', { origin }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(completion.choices[0]?.message.content, origin).toBe('echo: hi');
    }
  });

  it('refuses another machine without a key: 401 naming the setting, in each route shape, before any upstream call', async () => {
    upstream.reset();
    const error = await openai(external, running.port).chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).message).toContain('anonymous_access: any');
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('virtual_key_required');

    const anthropic = new Anthropic({ baseURL: `http://${external}:${running.port}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const refused = await anthropic.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 5, messages }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
    const counted = await anthropic.messages.countTokens({ model: 'openai/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(counted).toBeInstanceOf(Anthropic.AuthenticationError);

    const genai = await fetch(`http://${external}:${running.port}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    expect(genai.status).toBe(401);
    expect(((await genai.json()) as { error: { status: string } }).error.status).toBe('UNAUTHENTICATED');
    expect(upstream.calls).toHaveLength(0);
  });

  it('serves another machine that brings a virtual key', async () => {
    const created = await fetch(`http://127.0.0.1:${running.port}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'remote' }),
    });
    const { key } = (await created.json()) as { key: string };
    const completion = await openai(external, running.port, key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
  });

  it('a forwarded-for header from an untrusted peer changes nothing either way', async () => {
    const fromLoopback = await openai('127.0.0.1', running.port, 'unused', { 'x-forwarded-for': '203.0.113.9' }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(fromLoopback.choices[0]?.message.content).toBe('echo: hi');
    const fromRemote = await openai(external, running.port, 'unused', { 'x-forwarded-for': '127.0.0.1' })
      .chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
      .catch((err: unknown) => err);
    expect(fromRemote).toBeInstanceOf(OpenAI.AuthenticationError);
    // The admin API, open to loopback, warned once that a proxy header arrived from loopback.
    await fetch(`http://127.0.0.1:${running.port}/api/keys`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    await fetch(`http://127.0.0.1:${running.port}/api/keys`, { headers: { forwarded: 'for=203.0.113.9' } });
    const warnings = running.logs.filter((line) => line.includes('came through a proxy'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('trusted_proxies');
  });
});

describe('opened explicitly', () => {
  it('settings.anonymous_access: any serves every client without a key', async () => {
    const running = await start({ anonymous_access: 'any' });
    try {
      const completion = await openai(external, running.port).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(completion.choices[0]?.message.content).toBe('echo: hi');
    } finally {
      await running.stop();
    }
  });

  it('TOLLGATE_ANONYMOUS_ACCESS=any does the same', async () => {
    const running = await start({}, { TOLLGATE_ANONYMOUS_ACCESS: 'any' });
    try {
      const completion = await openai(external, running.port).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(completion.choices[0]?.message.content).toBe('echo: hi');
    } finally {
      await running.stop();
    }
  });
});

describe('behind a trusted proxy', () => {
  let running: Running;
  beforeAll(async () => {
    // The proxy runs on this host: its connections come from loopback, and it names the real client.
    running = await start({ trusted_proxies: ['127.0.0.1'] });
  });
  afterAll(() => running.stop());

  it('the forwarded client decides: remote is refused, local is served', async () => {
    const remote = await openai('127.0.0.1', running.port, 'unused', { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' })
      .chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
      .catch((err: unknown) => err);
    expect(remote).toBeInstanceOf(OpenAI.AuthenticationError);
    const local = await openai('127.0.0.1', running.port, 'unused', { 'x-forwarded-for': '127.0.0.1' }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(local.choices[0]?.message.content).toBe('echo: hi');
  });

  it('the admin API refuses a remote client the proxy forwards', async () => {
    const remote = await fetch(`http://127.0.0.1:${running.port}/api/keys`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(remote.status).toBe(403);
    const local = await fetch(`http://127.0.0.1:${running.port}/api/keys`);
    expect(local.status).toBe(200);
    expect(running.logs.some((line) => line.includes('came through a proxy'))).toBe(false);
  });

  it('a proxy that names the client in X-Real-IP or Forwarded (RFC 7239) only, without X-Forwarded-For, is believed too', async () => {
    // nginx's common `proxy_set_header X-Real-IP $remote_addr;` alone; Forwarded from proxies that speak the RFC.
    for (const header of <Array<Record<string, string>>>[{ 'x-real-ip': '203.0.113.9' }, { forwarded: 'for=203.0.113.9;proto=https' }, { forwarded: 'for="[2001:db8:cafe::17]:4711"' }, { forwarded: 'for=127.0.0.1, for=198.51.100.7' }, { forwarded: 'for=unknown' }]) {
      const chat = await openai('127.0.0.1', running.port, 'unused', header).chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).catch((err: unknown) => err);
      expect(chat, JSON.stringify(header)).toBeInstanceOf(OpenAI.AuthenticationError);
      const admin = await fetch(`http://127.0.0.1:${running.port}/api/keys`, { headers: header });
      expect(admin.status, JSON.stringify(header)).toBe(403);
    }
    for (const header of <Array<Record<string, string>>>[{ 'x-real-ip': '127.0.0.1' }, { forwarded: 'for=127.0.0.1;proto=http' }, { forwarded: 'For="[::1]:5000"' }]) {
      const local = await openai('127.0.0.1', running.port, 'unused', header).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(local.choices[0]?.message.content, JSON.stringify(header)).toBe('echo: hi');
    }
  });

  it('an invalid proxy address is refused with the field named', async () => {
    await expect(start({ trusted_proxies: ['not-an-ip'] })).rejects.toThrow(/trusted_proxies/);
  });
});
