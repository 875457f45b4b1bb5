import type OpenAI from 'openai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * What reaches the request log, /metrics and the client from text a client or an upstream controls: a provider key
 * an upstream echoes, a key pasted into `user`, `metadata` or the model name; a known key's refusals named in the
 * log; refusals that cannot use up the model label; a route's breaker cool-down in the breaker gauge.
 */
const PROVIDER_KEY = 'sk-proj-UPSTREAMSECRET0123456789abcdef';
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let narrow: { id: string; key: string };
let teamId = '';

const { api, createKey, clientFor } = gatewayApi(() => tg.url);

async function entryOf(requestId: string): Promise<any> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const res = await api('GET', `/api/logs/${requestId}`);
    if (res.status === 200) return res.body;
    if (Date.now() > deadline) throw new Error(`no log entry for ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function refusal(call: Promise<unknown>): Promise<{ status: number; id: string; message: string }> {
  try {
    await call;
  } catch (err) {
    const error = err as InstanceType<typeof OpenAI.APIError>;
    return { status: error.status as number, id: error.headers?.get('x-request-id') as string, message: error.message };
  }
  throw new Error('the call was answered');
}

async function metrics(): Promise<string> {
  return (await fetch(`${tg.url}/metrics`)).text();
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: PROVIDER_KEY, chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: PROVIDER_KEY } },
    routes: {
      chat: { targets: [{ model: 'openai/m' }] },
      // Opens after two failures and turns half-open after 300 ms; the global default cool-down is 30 s.
      // Retries after a back-off of up to 500 ms (full jitter).
      patient: { targets: [{ model: 'openai/patient' }], retry: { max_attempts: 2, initial_delay_ms: 500 } },
      fragile: { targets: [{ model: 'openai/fragile' }], retry: { max_attempts: 1 }, breaker: { consecutive_failures: 2, cooldown_ms: 300 } },
    },
  });
  teamId = (await api('POST', '/api/teams', { name: 'research' })).body.id;
  narrow = await createKey({ name: 'narrow', team: teamId, models: ['openai/*'] });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

describe('secrets in what clients and upstreams write', () => {
  it('keeps a provider key an upstream echoes out of the answer, the log and the metrics', async () => {
    upstream.enqueue({ kind: 'error', status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: `Incorrect API key provided: ${PROVIDER_KEY}.` });
    const refused = await refusal(clientFor(narrow.key).chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'hi' }] }));
    expect(refused.message).toContain('Incorrect API key provided: [REDACTED].');
    expect(refused.message).not.toContain(PROVIDER_KEY);
    const entry = await entryOf(refused.id);
    expect(entry.error_message).toBe('Incorrect API key provided: [REDACTED].');
    expect(JSON.stringify(entry)).not.toContain(PROVIDER_KEY);
    const exported = await (await fetch(`${tg.url}/api/logs/export?format=csv`)).text();
    expect(exported).not.toContain(PROVIDER_KEY);
    expect(await metrics()).not.toContain(PROVIDER_KEY);
  });

  it('redacts a key pasted into user, metadata or the model name in the log', async () => {
    const answered = await clientFor(narrow.key)
      .chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'hi' }], user: `me ${narrow.key}`, metadata: { token: PROVIDER_KEY, app: 'search' }, store: true })
      .withResponse();
    const entry = await entryOf(answered.response.headers.get('x-request-id') as string);
    expect(entry.user).toBe('me [REDACTED]');
    expect(entry.metadata).toEqual({ token: '[REDACTED]', app: 'search' });
    const named = await clientFor(narrow.key).chat.completions.create({ model: `openai/${narrow.key}`, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    const namedEntry = await entryOf(named.response.headers.get('x-request-id') as string);
    expect(namedEntry).toMatchObject({ model: 'openai/[REDACTED]', upstream_model: '[REDACTED]' });
    expect(JSON.stringify([entry, namedEntry])).not.toContain(narrow.key);
    // Nor in a metric label (the attempt and breaker series carry the upstream model name).
    expect(await metrics()).not.toContain(narrow.key);
  });
});

describe('a key pasted into the model name of a /genai URL', () => {
  it('is redacted from the path in the log and its export, as from the model name', async () => {
    // The Gen AI clients name the model in the URL, so the path carries what the model name carries.
    const secret = narrow.key;
    const path = `/genai/v1beta/models/openai%2F${secret}:generateContent`;
    const headers = { 'content-type': 'application/json', 'x-goog-api-key': narrow.key };
    const answered = await fetch(`${tg.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) });
    expect(answered.status).toBe(200);
    // One refused before the pipeline (its body is not JSON) takes the other way to the log.
    const refused = await fetch(`${tg.url}${path}`, { method: 'POST', headers, body: '{"contents":' });
    expect(refused.status).toBe(400);
    for (const response of [answered, refused]) {
      const entry = await entryOf(response.headers.get('x-request-id') as string);
      expect(entry.model).toBe('openai/[REDACTED]');
      expect(entry.path).toMatch(/^\/genai\/v1beta\/models\/openai(\/|%2F)\[REDACTED\]:generateContent$/);
      expect(JSON.stringify(entry)).not.toContain(secret);
    }
    for (const format of ['jsonl', 'csv']) expect(await (await fetch(`${tg.url}/api/logs/export?format=${format}`)).text()).not.toContain(secret);
  });
});

describe('refusals in the log and the metrics', () => {
  it("names a known key's refusals (a model it may not use, disabled) with its key and team", async () => {
    const notAllowed = await refusal(clientFor(narrow.key).chat.completions.create({ model: 'other/m', messages: [{ role: 'user', content: 'hi' }] }));
    expect(notAllowed.status).toBe(403);
    expect(await entryOf(notAllowed.id)).toMatchObject({ status: 403, key_id: narrow.id, team_id: teamId, error_code: 'model_not_allowed' });
    const off = await createKey({ name: 'off', team: teamId });
    expect((await api('PATCH', `/api/keys/${off.id}`, { disabled: true })).status).toBe(200);
    const disabled = await refusal(clientFor(off.key).chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'hi' }] }));
    expect(disabled.status).toBe(401);
    expect(await entryOf(disabled.id)).toMatchObject({ status: 401, key_id: off.id, team_id: teamId, error_code: 'key_disabled' });
    const listed = await api('GET', `/api/logs?key_id=${off.id}`);
    expect(listed.body.data.map((entry: { id: string }) => entry.id)).toEqual([disabled.id]);
  });

  it('labels refused requests by route or none, so invented model names cannot use up the model label', async () => {
    const stranger = clientFor('tg-not-a-key-0000000000000000');
    for (let i = 0; i < 250; i++) await refusal(stranger.chat.completions.create({ model: `invented-${i}`, messages: [{ role: 'user', content: 'hi' }] }));
    await refusal(stranger.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }));
    await clientFor(narrow.key).chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    const text = await metrics();
    expect(text).not.toContain('invented-');
    expect(text).toMatch(/^tollgate_requests_total\{provider="none",model="none",status="401"\} (\d+)$/m);
    expect(Number(/^tollgate_requests_total\{provider="none",model="none",status="401"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(250);
    expect(text).toMatch(/^tollgate_requests_total\{provider="none",model="chat",status="401"\} 1$/m);
    // The real model keeps its own series.
    expect(text).toMatch(/^tollgate_requests_total\{provider="openai",model="m",status="200"\} [1-9]/m);
    expect(text).not.toContain('model="other"');
  });

  it("turns the breaker gauge half-open after the route's cool-down, not the global one", async () => {
    const client = clientFor(narrow.key);
    for (let i = 0; i < 2; i++) {
      upstream.enqueue({ kind: 'error', status: 500 });
      await refusal(client.chat.completions.create({ model: 'fragile', messages: [{ role: 'user', content: 'hi' }] }));
    }
    expect(await metrics()).toMatch(/^tollgate_breaker_state\{provider="openai",model="fragile"\} 2$/m);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await metrics()).toMatch(/^tollgate_breaker_state\{provider="openai",model="fragile"\} 1$/m);
    const health = await api('GET', '/api/routes/fragile/health');
    expect(JSON.stringify(health.body)).toContain('half-open');
  });

  it('refuses a cursor that is not an entry id, and a time range that ends before it starts', async () => {
    for (const path of ['/api/logs?before=garbage', '/api/logs?before=%00', '/api/audit?before=zzzz']) {
      const res = await api('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_query', param: 'before' });
    }
    const inverted = await api('GET', `/api/logs?from=${Date.now()}&to=${Date.now() - 100_000}`);
    expect(inverted.status).toBe(400);
    expect(inverted.body.error.param).toBe('from');
    // A cursor the API handed out still pages on.
    const first = await api('GET', '/api/logs?limit=1');
    expect(first.body.next_before).toMatch(/^\d{15}-\d{6}$/);
    expect((await api('GET', `/api/logs?limit=1&before=${first.body.next_before}`)).status).toBe(200);
  });

  it("counts a retry's back-off as upstream time, not as the gateway's overhead", async () => {
    const entries: any[] = [];
    for (let i = 0; i < 4; i++) {
      upstream.enqueue({ kind: 'error', status: 500 });
      const answered = await clientFor(narrow.key).chat.completions.create({ model: 'patient', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      entries.push(await entryOf(answered.response.headers.get('x-request-id') as string));
    }
    // The gateway's own time stays well under the back-off it would include if miscounted (a loaded CI machine has
    // read 46 ms of overhead here; the longest back-off is over 100 ms, below).
    for (const entry of entries) {
      expect(entry.attempts).toHaveLength(2);
      expect(entry.overhead_ms).toBeLessThan(80);
      expect(entry.upstream_ms).toBeGreaterThanOrEqual(entry.duration_ms - 81);
    }
    // The back-offs were long enough to tell (four uniform picks up to 500 ms all under 100 ms: 0.16%), and the
    // longest one is upstream time: counted as overhead, it would be most of that request's.
    const longest = entries.reduce((a, b) => (b.duration_ms > a.duration_ms ? b : a));
    expect(longest.duration_ms).toBeGreaterThan(100);
    expect(longest.overhead_ms).toBeLessThan(longest.duration_ms / 2);
  });
});

describe('a provider key a Gemini upstream echoes in its error details', () => {
  it('is redacted from the details a /genai client is shown, as from the message', async () => {
    const geminiKey = 'AIzaSyECHOEDSECRET0123456789abcdefghijk';
    // Google names the consumer in a PERMISSION_DENIED error; an upstream that quotes the key it was sent there.
    const echoing = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const sent = String(request.headers['x-goog-api-key']);
        response.writeHead(403, { 'content-type': 'application/json' });
        response.end(JSON.stringify({
          error: {
            code: 403,
            message: `Permission denied: consumer 'api_key:${sent}' has been suspended.`,
            status: 'PERMISSION_DENIED',
            details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CONSUMER_SUSPENDED', metadata: { consumer: `api_key:${sent}`, service: 'generativelanguage.googleapis.com' } }],
          },
        }));
      });
    });
    await new Promise<void>((resolve) => echoing.listen(0, '127.0.0.1', resolve));
    const gemini = await startGateway({ providers: { gemini: { base_url: `http://127.0.0.1:${(echoing.address() as AddressInfo).port}/v1beta`, api_key: geminiKey } } });
    try {
      const response = await fetch(`${gemini.url}/genai/v1beta/models/gemini%2Fgemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
      });
      expect(response.status).toBe(403);
      const body = (await response.json()) as { error: { message: string; details?: Array<{ metadata?: Record<string, string> }> } };
      expect(body.error.message).toContain("consumer 'api_key:[REDACTED]'");
      expect(body.error.details?.[0]?.metadata).toEqual({ consumer: 'api_key:[REDACTED]', service: 'generativelanguage.googleapis.com' });
      expect(JSON.stringify(body)).not.toContain(geminiKey);
    } finally {
      await gemini.stop();
      echoing.close();
    }
  });
});
