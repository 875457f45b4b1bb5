import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let primary: ScriptedUpstream;
let backup: ScriptedUpstream;
let tg: RunningGateway;
let alice: { id: string; key: string };
let limited: { id: string; key: string };
const ids: Record<string, string> = {};

const PRICES = { m: { input_per_mtok: 100_000, output_per_mtok: 200_000 } };

const { api, createKey, clientFor } = gatewayApi(() => tg.url);

/** The request id of a call, answered or refused. */
async function idOf(call: Promise<{ _request_id?: string | null }>): Promise<string> {
  try {
    return (await call)._request_id as string;
  } catch (err) {
    return (err as InstanceType<typeof OpenAI.APIError>).headers?.get('x-request-id') as string;
  }
}

async function logged(filter: string): Promise<any[]> {
  const res = await api('GET', `/api/logs?limit=500${filter}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

beforeAll(async () => {
  primary = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
  backup = await startOpenAIUpstream({ apiKey: 'sk-b', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${primary.url}/v1`, api_key: 'sk-a', prices: PRICES },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-b', prices: PRICES },
    },
    routes: { chat: { targets: [{ model: 'openai/m' }], fallbacks: ['backup/m'], retry: { max_attempts: 2, initial_delay_ms: 0 } } },
  });
  const team = await api('POST', '/api/teams', { name: 'research' });
  alice = await createKey({ name: 'alice', team: team.body.id });
  limited = await createKey({ name: 'limited', rate_limit: 1 });
  const hi = [{ role: 'user' as const, content: 'hi' }];
  ids.success = await idOf(clientFor(alice.key).chat.completions.create({ model: 'chat', messages: hi, user: 'user-7', metadata: { app: 'search' }, store: true }).withResponse().then((r) => ({ _request_id: r.request_id })));
  const stream = await clientFor(alice.key).chat.completions.create({ model: 'chat', messages: hi, stream: true });
  for await (const _ of stream) void _;
  primary.enqueue({ kind: 'error', status: 500 });
  ids.fallback = await idOf(clientFor(alice.key).chat.completions.create({ model: 'chat', messages: hi }).withResponse().then((r) => ({ _request_id: r.request_id })));
  await clientFor(limited.key).chat.completions.create({ model: 'chat', messages: hi });
  ids.limited = await idOf(clientFor(limited.key).chat.completions.create({ model: 'chat', messages: hi }));
  ids.unknownKey = await idOf(clientFor('tg-unknown-key').chat.completions.create({ model: 'chat', messages: hi }));
  primary.enqueue({ kind: 'error', status: 400, code: 'context_length_exceeded', message: 'This prompt is far too long for the model' });
  ids.upstream400 = await idOf(clientFor(alice.key).chat.completions.create({ model: 'openai/m', messages: hi }));
  ids.formula = await idOf(clientFor(alice.key).chat.completions.create({ model: '=HYPERLINK("http://x")', messages: hi }));
  // Every terminal event is written just after its answer.
  const deadline = Date.now() + 5_000;
  while ((await logged('')).length < 8 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
});
afterAll(async () => {
  await tg.stop();
  await primary.close();
  await backup.close();
});

describe('the request log records what each request did', () => {
  it('an answered request: dialect, path, key, team, route, attempts, latencies, tokens, cost and tags', async () => {
    const entry = (await api('GET', `/api/logs/${ids.success}`)).body;
    expect(entry).toMatchObject({
      id: ids.success,
      dialect: 'openai',
      path: '/v1/chat/completions',
      operation: 'chat',
      key_id: alice.id,
      route: 'chat',
      model: 'chat',
      provider: 'openai',
      upstream_model: 'm',
      status: 200,
      fallback: false,
      user: 'user-7',
      metadata: { app: 'search' },
      attempts: [{ provider: 'openai', model: 'm', status: 200, ok: true, error_code: null }],
    });
    expect(entry.team_id).toBeTruthy();
    expect(entry.prompt_tokens).toBeGreaterThan(0);
    expect(entry.cost_usd).toBeGreaterThan(0);
    expect(entry.upstream_ms).toBeGreaterThanOrEqual(0);
    expect(entry.overhead_ms).toBeGreaterThan(0);
    expect(entry.duration_ms).toBeGreaterThanOrEqual(entry.upstream_ms);
    expect(entry).not.toHaveProperty('request_body');
  });

  it('a fallback: both attempts, the failed one with its status', async () => {
    const entry = (await api('GET', `/api/logs/${ids.fallback}`)).body;
    expect(entry).toMatchObject({ provider: 'backup', fallback: true, status: 200 });
    expect(entry.attempts.map((a: any) => [a.provider, a.status, a.ok])).toEqual([
      ['openai', 500, false],
      ['backup', 200, true],
    ]);
  });

  it('a stream has its time to first token', async () => {
    const [stream] = await logged('&key_id=' + alice.id).then((all) => all.filter((e) => e.stream));
    expect(stream.first_token_ms).toBeGreaterThanOrEqual(0);
    expect(stream.first_token_ms).toBeLessThanOrEqual(stream.duration_ms);
  });

  it('refusals and upstream errors are logged with their type, code and message', async () => {
    expect((await api('GET', `/api/logs/${ids.limited}`)).body).toMatchObject({ status: 429, error_code: 'rate_limit_exceeded', key_id: limited.id });
    expect((await api('GET', `/api/logs/${ids.unknownKey}`)).body).toMatchObject({ status: 401, error_code: 'invalid_api_key', key_id: null });
    const upstream = (await api('GET', `/api/logs/${ids.upstream400}`)).body;
    expect(upstream).toMatchObject({ status: 400, provider: 'openai' });
    expect(upstream.error_message).toContain('far too long');
  });
});

describe('GET /api/logs filters', () => {
  it('by status code and by status class', async () => {
    expect((await logged('&status=429')).map((e) => e.id)).toEqual([ids.limited]);
    const clientErrors = (await logged('&status=4xx')).map((e) => e.id);
    expect(new Set(clientErrors)).toEqual(new Set([ids.limited, ids.unknownKey, ids.upstream400, ids.formula]));
  });

  it('by key, team, provider, route, model and error text', async () => {
    expect((await logged(`&key_id=${limited.id}`)).map((e) => e.status)).toEqual([429, 200]);
    const team = (await api('GET', `/api/logs/${ids.success}`)).body.team_id;
    expect((await logged(`&team_id=${team}`)).length).toBe(5);
    expect((await logged('&provider=backup')).map((e) => e.id)).toEqual([ids.fallback]);
    // Refused by the rate limit or auth before routing: no route. Three of alice's and the limited key's first.
    expect((await logged('&route=chat')).length).toBe(4);
    // Requested as `m` or served by upstream model `m`: the five that reached the primary or the backup.
    expect((await logged('&model=m')).map((e) => e.upstream_model)).toEqual(['m', 'm', 'm', 'm', 'm']);
    expect((await logged('&q=FAR%20TOO%20LONG')).map((e) => e.id)).toEqual([ids.upstream400]);
  });

  it('by time range', async () => {
    const all = await logged('');
    const middle = all[3];
    const at = Date.parse(middle.at);
    expect((await logged(`&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).length).toBe(all.length);
    expect(await logged(`&from=${Date.now() + 60_000}`)).toEqual([]);
    const older = await logged(`&to=${at}`);
    expect(older.every((e) => Date.parse(e.at) <= at)).toBe(true);
  });

  it('reads a time without a zone as UTC (as it answers), whatever time zone the server runs in', async () => {
    const zone = process.env.TZ;
    // Node reads TZ when it changes: the gateway in this process now runs at UTC+5:30.
    process.env.TZ = 'Asia/Kolkata';
    try {
      const newest = (await logged(''))[0];
      const arrival = Number(newest.id.slice(0, 15));
      // The UTC wall-clock time a second after and before the newest request arrived, written without a zone.
      const zoneless = (ms: number): string => new Date(ms).toISOString().slice(0, -1);
      expect((await logged(`&to=${zoneless(arrival + 1_000)}`))[0]?.id).toBe(newest.id);
      expect((await logged(`&from=${zoneless(arrival - 1_000)}`)).map((e) => e.id)).toContain(newest.id);
      // The same for usage, whose buckets are UTC: the hour the request arrived in, named without a zone.
      const hour = Math.floor(arrival / 3_600_000) * 3_600_000;
      const usage = await api('GET', `/api/usage?group_by=provider&interval=hour&from=${zoneless(hour)}&to=${zoneless(hour + 3_600_000)}`);
      expect(usage.body.data.map((row: any) => row.start)).toContain(new Date(hour).toISOString());
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('pages with a cursor', async () => {
    const first = await api('GET', '/api/logs?limit=3');
    expect(first.body.data).toHaveLength(3);
    const second = await api('GET', `/api/logs?limit=3&before=${first.body.next_before}`);
    const all = await logged('');
    expect([...first.body.data, ...second.body.data].map((e: any) => e.id)).toEqual(all.slice(0, 6).map((e) => e.id));
  });

  it('refuses a bad filter with a clear 400', async () => {
    const res = await api('GET', '/api/logs?status=teapot');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_query', param: 'status' });
    expect((await api('GET', '/api/logs?from=yesterday')).body.error.param).toBe('from');
  });

  it('refuses a parameter it does not know, where a misspelt filter answered (and exported) the whole log', async () => {
    for (const [path, param] of [
      ['/api/logs?team=research', 'team'],
      ['/api/logs/export?format=csv&key=vk_1', 'key'],
      ['/api/usage?groupby=key', 'groupby'],
      ['/api/usage?start=2026-11-01', 'start'],
      ['/api/audit?actions=config.patched', 'actions'],
      ['/api/audit/export?format=jsonl&since=2026-11-01', 'since'],
    ] as const) {
      const res = await api('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.error, path).toMatchObject({ code: 'invalid_query', param });
      expect(res.body.error.message, path).toContain(`'${param}'`);
    }
    // Every parameter each one documents is taken.
    const all = 'from=2026-11-01&to=2026-12-01&tz=UTC';
    expect((await api('GET', `/api/logs?${all}&key_id=k&team_id=t&model=m&provider=p&route=r&status=5xx&q=x&limit=5&before=001795928498167-169691`)).status).toBe(200);
    expect((await fetch(`${tg.url}/api/logs/export?${all}&format=csv&key_id=k&team_id=t&model=m&provider=p&route=r&status=5xx&q=x`)).status).toBe(200);
    expect((await api('GET', `/api/usage?${all}&group_by=key&interval=hour`)).status).toBe(200);
    expect((await api('GET', `/api/audit?${all}&action=a&target=t&limit=5&before=001795928498167-169691`)).status).toBe(200);
    expect((await fetch(`${tg.url}/api/audit/export?${all}&format=jsonl&action=a&target=t`)).status).toBe(200);
  });
});

describe('GET /api/usage', () => {
  it('sums spend, tokens, requests and errors per key', async () => {
    const res = await api('GET', '/api/usage?group_by=key&interval=day');
    expect(res.status).toBe(200);
    const byKey = new Map<string, any>(res.body.totals.map((t: any) => [t.group, t]));
    expect(byKey.get(alice.id)).toMatchObject({ requests: 5, errors: 2 });
    expect(byKey.get(limited.id)).toMatchObject({ requests: 2, errors: 1 });
    expect(byKey.get('none')).toMatchObject({ requests: 1, errors: 1 });
    // The usage matches the request log's cost to the cent.
    const logCost = (await logged(`&key_id=${alice.id}`)).reduce((sum, e) => sum + e.cost_usd, 0);
    expect(byKey.get(alice.id).spend_usd).toBeCloseTo(logCost, 6);
  });

  it('per provider and hour', async () => {
    const res = await api('GET', '/api/usage?group_by=provider&interval=hour');
    const rows = res.body.data;
    expect(rows.every((r: any) => new Date(r.start).getUTCMinutes() === 0)).toBe(true);
    const backupRow = rows.find((r: any) => r.group === 'backup');
    expect(backupRow).toMatchObject({ requests: 1, errors: 0 });
    expect(backupRow.output_tokens).toBeGreaterThan(0);
  });

  it('per model: the provider and model that answered, a refusal under its route or none', async () => {
    const res = await api('GET', '/api/usage?group_by=model');
    const totals = new Map<string, any>(res.body.totals.map((row: any) => [row.group, row]));
    // The fallback's answer (backup/m) is its own group, not merged with the primary's model of the same name.
    expect(totals.get('backup/m')).toMatchObject({ requests: 1, errors: 0 });
    expect(totals.get('openai/m').requests).toBeGreaterThanOrEqual(3);
    // The names clients sent with refused requests never become groups.
    expect([...totals.keys()].filter((group) => !['openai/m', 'backup/m', 'chat', 'none'].includes(group))).toEqual([]);
  });

  it("per model: the log filtered by a group's name holds the answered requests that group counts", async () => {
    const totals = new Map<string, any>((await api('GET', '/api/usage?group_by=model')).body.totals.map((row: any) => [row.group, row]));
    for (const group of ['openai/m', 'backup/m']) {
      const answered = await logged(`&model=${encodeURIComponent(group)}&status=2xx`);
      expect(answered.length, group).toBe(totals.get(group).requests);
      expect(answered.every((e) => `${e.provider}/${e.upstream_model}` === group), group).toBe(true);
    }
    expect((await logged('&model=backup/m')).map((e) => e.id)).toEqual([ids.fallback]);
  });

  it('refuses an unknown grouping', async () => {
    const res = await api('GET', '/api/usage?group_by=colour');
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('group_by');
  });
});

describe('exports', () => {
  it('JSON lines with the same filters as the list', async () => {
    const res = await fetch(`${tg.url}/api/logs/export?format=jsonl&status=4xx`);
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await res.text()).trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((e) => e.id)).toEqual((await logged('&status=4xx')).map((e) => e.id));
  });

  it('CSV with a header, quoted fields and formulas defused', async () => {
    const res = await fetch(`${tg.url}/api/logs/export?format=csv`);
    expect(res.headers.get('content-type')).toContain('text/csv');
    const text = await res.text();
    const rows = text.trim().split('\r\n');
    expect(rows[0]?.split(',').slice(0, 4)).toEqual(['id', 'at', 'dialect', 'path']);
    // Every field an entry has in JSON lines has its column.
    const header = new Set(rows[0]?.split(','));
    const entries = (await (await fetch(`${tg.url}/api/logs/export?format=jsonl`)).text()).trim().split('\n').map((line) => JSON.parse(line));
    const missing = new Set(entries.flatMap((entry) => Object.keys(entry)).filter((field) => !header.has(field)));
    expect([...missing]).toEqual([]);
    expect(rows.length - 1).toBe((await logged('')).length);
    const formulaRow = rows.find((row) => row.startsWith(ids.formula as string)) as string;
    expect(formulaRow).toContain(`"'=HYPERLINK(""http://x"")"`);
  });

  it('the audit log as JSON lines and CSV', async () => {
    expect((await api('PATCH', '/api/config', { settings: { log_retention_days: 60 } })).status).toBe(200);
    expect((await api('PATCH', '/api/config', { settings: { log_retention_days: 90 } })).status).toBe(200);
    const jsonl = (await (await fetch(`${tg.url}/api/audit/export?format=jsonl`)).text()).trim();
    const audit = (await api('GET', '/api/audit?limit=500')).body.data;
    expect(jsonl.split('\n').map((line) => JSON.parse(line).id)).toEqual(audit.map((e: any) => e.id));
    const csv = (await (await fetch(`${tg.url}/api/audit/export?format=csv`)).text()).trim().split('\r\n');
    expect(csv[0]).toBe('id,at,version,action,target,actor,before,after');
    expect(csv.length - 1).toBe(audit.length);
  });

  it('refuses an unknown format', async () => {
    expect((await api('GET', '/api/logs/export?format=xml')).status).toBe(400);
  });
});

describe('retention', () => {
  it('removes old log records and leaves spend and usage alone', async () => {
    const usageBefore = (await api('GET', '/api/usage?group_by=key')).body.totals;
    const keyBefore = (await api('GET', `/api/keys/${alice.id}`)).body;
    // Everything written so far is "old" for a cut-off a minute from now.
    const deleted = await tg.gateway.governance.trimRequestLog({ olderThan: new Date(Date.now() + 60_000), maxEntries: null });
    expect(deleted).toBeGreaterThanOrEqual(8);
    expect(await logged('')).toEqual([]);
    expect((await api('GET', '/api/usage?group_by=key')).body.totals).toEqual(usageBefore);
    expect((await api('GET', `/api/keys/${alice.id}`)).body).toMatchObject({ spend: keyBefore.spend, total_spend: keyBefore.total_spend });
  });
});

describe('calls refused before the pipeline', () => {
  it('a body that is not JSON and an invalid Anthropic request are logged and counted too', async () => {
    const bad = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": "chat", ' });
    expect(bad.status).toBe(400);
    const anthropic = await fetch(`${tg.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'x', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(anthropic.status).toBe(400);
    const jsonId = bad.headers.get('x-request-id') as string;
    const anthropicId = anthropic.headers.get('x-request-id') as string;
    let entries: any[] = [];
    const deadline = Date.now() + 5_000;
    while (entries.length < 2 && Date.now() < deadline) {
      entries = (await logged('&status=400')).filter((e) => e.id === jsonId || e.id === anthropicId);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const byId = new Map(entries.map((e) => [e.id, e]));
    expect(byId.get(jsonId)).toMatchObject({ dialect: 'openai', path: '/v1/chat/completions', status: 400, error_code: 'invalid_json', attempts: [] });
    expect(byId.get(anthropicId)).toMatchObject({ dialect: 'anthropic', path: '/anthropic/v1/messages', model: 'claude-x', status: 400, error_type: 'invalid_request_error' });
    // Counted in usage and metrics, without disturbing the in-flight gauge.
    const metrics = await (await fetch(`${tg.url}/metrics`)).text();
    // Refused before any provider, under no route: the model label is `none`, never the name the client sent.
    expect(metrics).toMatch(/^tollgate_requests_total\{provider="none",model="none",status="400"\} [1-9]\d*$/m);
    expect(metrics).not.toContain('model="claude-x"');
    expect(metrics).toMatch(/^tollgate_inflight_requests 0$/m);
  });

  it('a management API error is not a model call', async () => {
    const res = await api('POST', '/api/keys', { name: 42 });
    expect(res.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const all = await logged('');
    expect(all.filter((e) => e.path?.startsWith('/api'))).toEqual([]);
  });
});

describe('bodies, when the operator turns them on', () => {
  it('keeps them size-capped with secrets redacted', async () => {
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const withBodies = await startGateway({
      providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } },
      settings: { log_bodies: { enabled: true, max_bytes: 400, redact: ['secret-\\d+'] } },
    });
    try {
      const content = `my key is sk-proj-abcdefghijklmnopqrstuvwx and code secret-4242 ${'long '.repeat(200)}`;
      const answer = await withBodies.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content }] }).withResponse();
      let entry: any;
      const deadline = Date.now() + 5_000;
      do {
        entry = (await jsonRequest(withBodies.url, 'GET', `/api/logs/${answer.request_id}`)).body;
        if (!entry.request_body) await new Promise((resolve) => setTimeout(resolve, 20));
      } while (!entry.request_body && Date.now() < deadline);
      expect(entry.request_body).toContain('[REDACTED]');
      expect(entry.request_body).not.toContain('sk-proj-abcdefghijklmnopqrstuvwx');
      expect(entry.request_body).not.toContain('secret-4242');
      expect(entry.request_body).toMatch(/…\[truncated \d+ bytes\]$/);
      expect(Buffer.byteLength(entry.request_body)).toBeLessThan(460);
      // The upstream echoes the prompt: the answer's copy of the key is redacted too.
      expect(answer.data.choices[0]?.message.content).toContain('sk-proj-abcdefghijklmnopqrstuvwx');
      expect(entry.response_body).toContain('my key is [REDACTED]');
      expect(entry.response_body).not.toContain('sk-proj-abcdefghijklmnopqrstuvwx');
    } finally {
      await withBodies.stop();
      await up.close();
    }
  });
});
