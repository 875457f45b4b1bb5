import { tracingChannel } from 'node:diagnostics_channel';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import type { StageTraceMessage } from '../../src/core/trace-channels.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
    routes: { chat: { targets: [{ model: 'openai/priced-model' }] } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const { api, createKey, clientFor } = gatewayApi(() => tg.url);

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** The request's log entry, by the x-request-id the client got (the subscriber writes it just after the answer). */
async function logEntry(requestId: string): Promise<any> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = await api('GET', `/api/logs/${encodeURIComponent(requestId)}`);
    if (found.status === 200) return found.body;
    if (Date.now() > deadline) throw new Error(`no log entry for ${requestId} (last status ${found.status})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sends a request that must fail, and returns its status and the request id the error carried. */
async function refused(request: Promise<unknown>): Promise<{ status: number; requestId: string; code: string }> {
  try {
    await request;
  } catch (err) {
    const error = err as InstanceType<typeof OpenAI.APIError>;
    return { status: error.status as number, requestId: error.headers?.get('x-request-id') as string, code: error.code as string };
  }
  throw new Error('the request was not refused');
}

describe('every request reaches the request log, refused ones included', () => {
  it('a request refused by auth is logged with its status and code', async () => {
    const { status, requestId, code } = await refused(clientFor('tg-not-a-real-key').chat.completions.create({ model: 'chat', messages: hi }));
    expect([status, code]).toEqual([401, 'invalid_api_key']);
    expect(await logEntry(requestId)).toMatchObject({ id: requestId, status: 401, error_code: 'invalid_api_key', key_id: null, cost_usd: 0, model: 'chat' });
  });

  it('a request refused by the rate limit is logged under its key', async () => {
    const { id, key } = await createKey({ name: 'limited', rate_limit: 1 });
    await clientFor(key).chat.completions.create({ model: 'chat', messages: hi });
    const { status, requestId, code } = await refused(clientFor(key).chat.completions.create({ model: 'chat', messages: hi }));
    expect([status, code]).toEqual([429, 'rate_limit_exceeded']);
    expect(await logEntry(requestId)).toMatchObject({ status: 429, error_code: 'rate_limit_exceeded', key_id: id });
    // Only the answered request reached the upstream.
    expect(upstream.calls.filter((call) => call.path.endsWith('/chat/completions'))).toHaveLength(1);
  });

  it('a request refused by the budget is logged under its key and team, costing nothing', async () => {
    const team = await api('POST', '/api/teams', { name: 'log-team' });
    const { id, key } = await createKey({ name: 'poor', budget: 1, team: team.body.id });
    const { status, requestId, code } = await refused(clientFor(key).chat.completions.create({ model: 'chat', messages: hi, max_tokens: 2 }));
    expect([status, code]).toEqual([429, 'budget_exceeded']);
    expect(await logEntry(requestId)).toMatchObject({ status: 429, error_code: 'budget_exceeded', key_id: id, team_id: team.body.id, cost_usd: 0, route: 'chat' });
    expect(upstream.calls).toHaveLength(0);
  });

  it('an answered request is logged with its route, tokens and cost, and its terminal event says the same', async () => {
    const team = await api('POST', '/api/teams', { name: 'rich-team' });
    const { id, key } = await createKey({ name: 'rich', budget: 100, team: team.body.id });
    const completed: GatewayEvents['request.completed'][] = [];
    const stop = tg.gateway.bus.on('request.completed', (event) => completed.push(event));
    try {
      const { data, response } = await clientFor(key).chat.completions.create({ model: 'chat', messages: hi, max_tokens: 2 }).withResponse();
      expect(data.choices[0]?.message.content).toBe('echo: hi');
      const requestId = response.headers.get('x-request-id') as string;
      expect(await logEntry(requestId)).toMatchObject({ status: 200, key_id: id, team_id: team.body.id, route: 'chat', provider: 'openai', cost_usd: 2, completion_tokens: 2 });
      expect(completed.find((event) => event.requestId === requestId)).toMatchObject({
        status: 200,
        cancelled: false,
        keyId: id,
        teamId: team.body.id,
        route: 'chat',
        costUsd: 2,
        attempts: 1,
        usage: { output_tokens: 2 },
      });
    } finally {
      stop();
    }
  });

  it('a stream the client leaves is a 499 in its terminal event and its log entry, with what it used so far charged', async () => {
    const { id, key } = await createKey({ name: 'leaver', budget: 1_000 });
    upstream.enqueue({ kind: 'slow-chunks', delayMs: 150 });
    const completed: GatewayEvents['request.completed'][] = [];
    const stop = tg.gateway.bus.on('request.completed', (event) => completed.push(event));
    try {
      const controller = new AbortController();
      const { data: stream, response } = await clientFor(key)
        .chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'one two three four five six' }], stream: true, max_tokens: 20 }, { signal: controller.signal })
        .withResponse();
      const requestId = response.headers.get('x-request-id') as string;
      let chunks = 0;
      try {
        for await (const _chunk of stream) if (++chunks === 2) controller.abort();
      } catch {
        // The SDK may raise the abort or just end the iteration: either way the client has left.
      }
      expect(chunks).toBe(2);
      const entry = await logEntry(requestId);
      expect(entry).toMatchObject({ status: 499, cancelled: true, key_id: id });
      expect(entry.completion_tokens).toBeGreaterThan(0);
      expect(entry.cost_usd).toBeGreaterThan(0);
      const event = completed.find((candidate) => candidate.requestId === requestId);
      expect(event).toMatchObject({ status: 499, cancelled: true, keyId: id });
      expect(event?.costUsd).toBe(entry.cost_usd);
    } finally {
      stop();
    }
  });
});

describe('a stream cut off by the gateway shutting down', () => {
  it('is logged as cut by the gateway (503 shutting_down, cancelled) and charged before the store closes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-shutdown-'));
    const config = { providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } } };
    try {
      const first = await startGateway(config, {}, { dataDir });
      const created = (await (await fetch(`${first.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'cut-off' }) })).json()) as { id: string; key: string };
      // Two chunks ("echo:" and more), then the upstream stalls: the stream outlives the shutdown's grace period.
      upstream.enqueue({ kind: 'stall-after', chunks: 3 });
      const response = await fetch(`${first.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${created.key}` },
        body: JSON.stringify({ model: 'openai/priced-model', messages: hi, stream: true, max_tokens: 20 }),
      });
      const requestId = response.headers.get('x-request-id') as string;
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let received = '';
      while (!received.includes('echo:')) received += new TextDecoder().decode((await reader.read()).value);
      // The grace period ends with the stream still open: the gateway cuts its connection and closes the store.
      await first.gateway.close(200);
      await reader.cancel().catch(() => undefined);

      const second = await startGateway(config, {}, { dataDir });
      try {
        const entry = await fetch(`${second.url}/api/logs/${encodeURIComponent(requestId)}`);
        expect(entry.status).toBe(200);
        const logged = (await entry.json()) as { status: number; cancelled: boolean; completion_tokens: number; cost_usd: number };
        expect(logged).toMatchObject({ status: 503, cancelled: true, error_code: 'shutting_down' });
        expect(logged.completion_tokens).toBeGreaterThan(0);
        const key = (await (await fetch(`${second.url}/api/keys/${created.id}`)).json()) as { spend: number; requests: number };
        expect(key.requests).toBe(1);
        expect(key.spend).toBe(logged.cost_usd);
        expect(key.spend).toBeGreaterThan(0);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('an answer the gateway fails to write', () => {
  // A plugin that sets a response header Node refuses to send: the client gets the dialect's 500 (plugin_failed: the
  // plugin's isolation finds the header before the answer's writer meets it, see plugin-audit-bad-header).
  const BAD_HEADER = `export default { name: 'bad-header', create: () => ({ name: 'bad-header', run(ctx, next) { ctx.responseHeaders['x-note'] = 'a\\r\\nb'; return next(); } }) };\n`;
  let dir: string;
  let faulty: RunningGateway;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-write-fault-'));
    mkdirSync(join(dir, 'plugins'));
    writeFileSync(join(dir, 'plugins', 'bad-header.mjs'), BAD_HEADER);
    faulty = await startGateway(
      { providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } }, plugins: [{ name: 'bad-header', path: 'plugins/bad-header.mjs' }] },
      {},
      { configPath: join(dir, 'tollgate.yaml') },
    );
  });
  afterAll(async () => {
    await faulty.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([false, true])('is logged with the 500 the client got, not as answered or left (stream: %s)', async (stream) => {
    const response = await fetch(`${faulty.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/priced-model', messages: hi, stream }),
    });
    expect(response.status).toBe(500);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('plugin_failed');
    const requestId = response.headers.get('x-request-id') as string;
    const deadline = Date.now() + 5_000;
    let entry: any;
    for (;;) {
      const found = await fetch(`${faulty.url}/api/logs/${encodeURIComponent(requestId)}`);
      if (found.status === 200) {
        entry = await found.json();
        break;
      }
      if (Date.now() > deadline) throw new Error(`no log entry for ${requestId}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(entry).toMatchObject({ status: 500, cancelled: false, error_code: 'plugin_failed' });
    const metrics = await (await fetch(`${faulty.url}/metrics`)).text();
    expect(metrics).not.toMatch(/^tollgate_requests_total\{[^}]*status="(200|499)"\}/m);
  });
});

describe('a tracing channel per stage', () => {
  it('publishes start, end, asyncStart and asyncEnd for each stage a request passes, with its id and outcome', async () => {
    const seen: Array<[string, string, string | undefined]> = [];
    const handlers = (stage: string) => ({
      start: (message: unknown) => seen.push([stage, 'start', (message as StageTraceMessage).requestId]),
      end: (message: unknown) => seen.push([stage, 'end', (message as StageTraceMessage).requestId]),
      asyncStart: (message: unknown) => seen.push([stage, 'asyncStart', (message as StageTraceMessage).requestId]),
      asyncEnd: (message: unknown) => seen.push([stage, 'asyncEnd', (message as StageTraceMessage).outcome]),
      error: () => seen.push([stage, 'error', undefined]),
    });
    const subscribed = ['auth', 'route', 'call'].map((stage) => {
      const channel = tracingChannel(`tollgate:stage:${stage}`);
      const handler = handlers(stage);
      channel.subscribe(handler);
      return () => channel.unsubscribe(handler);
    });
    try {
      const { response } = await clientFor('anonymous').chat.completions.create({ model: 'chat', messages: hi }).withResponse();
      const requestId = response.headers.get('x-request-id') as string;
      expect(seen.filter(([, phase]) => phase === 'start').map(([stage, , id]) => [stage, id])).toEqual([
        ['auth', requestId],
        ['route', requestId],
        ['call', requestId],
      ]);
      // The innermost stage answered; the outer ones passed the request on. Each ended once.
      expect(seen.filter(([, phase]) => phase === 'asyncEnd')).toEqual([
        ['call', 'asyncEnd', 'answered'],
        ['route', 'asyncEnd', 'passed'],
        ['auth', 'asyncEnd', 'passed'],
      ]);
      expect(seen.some(([, phase]) => phase === 'error')).toBe(false);

      seen.length = 0;
      upstream.enqueue({ kind: 'error', status: 400, message: 'bad' });
      await expect(clientFor('anonymous').chat.completions.create({ model: 'chat', messages: hi })).rejects.toMatchObject({ status: 400 });
      expect(seen.filter(([, phase]) => phase === 'error').map(([stage]) => stage)).toEqual(['call', 'route', 'auth']);
    } finally {
      for (const unsubscribe of subscribed) unsubscribe();
    }
  });
});
