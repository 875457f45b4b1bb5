// A log shipper (a cron job feeding Splunk, Datadog, ClickHouse or S3) polls the export with the cursor of its
// last call (`written_after`) and must get every record exactly once: records are written when a request ENDS,
// so one that arrived before a poll and ended after it (a long stream) is still shipped by the next poll; the
// cursor survives a restart; retention trimming what was shipped changes nothing, and trimming what was not yet
// shipped is said (410 log_cursor_trimmed), never skipped in silence.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway | null = null;
let dataDir: string;

const config = (url: string) => ({ providers: { openai: { base_url: `${url}/v1`, api_key: 'sk-up' } } });

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-shipping-e2e-'));
});
afterAll(async () => {
  await tg?.stop();
  await upstream.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function client(): OpenAI {
  return new OpenAI({ baseURL: `${tg!.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
}

/** A quick request; resolves with the x-request-id the client got. */
async function quick(): Promise<string> {
  const { response } = await client().chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  return response.headers.get('x-request-id') as string;
}

/** A stream of several seconds: resolves with its id once its first chunk came, and `done` once it ended. */
async function longStream(): Promise<{ id: string; done: Promise<void> }> {
  const { data: stream, response } = await client()
    .chat.completions.create({ model: 'openai/slow-chunks-250', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight' }] })
    .withResponse();
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next();
  const done = (async () => {
    for (;;) if ((await iterator.next()).done) return;
  })();
  return { id: response.headers.get('x-request-id') as string, done };
}

/** The shipper: only the documented interface. Pages of 2 until the gateway says there is no more; resumes from `cursor`. */
const shipped: string[] = [];
let cursor = '0';
async function poll(extra = ''): Promise<{ status: number; body?: any }> {
  for (;;) {
    const res = await fetch(`${tg!.url}/api/logs/export?format=jsonl&limit=2&written_after=${cursor}${extra}`);
    if (res.status !== 200) return { status: res.status, body: await res.json() };
    const text = await res.text();
    for (const line of text.split('\n').filter(Boolean)) shipped.push((JSON.parse(line) as { id: string }).id);
    cursor = res.headers.get('x-tollgate-next-written-after') as string;
    expect(cursor).toMatch(/^\d+$/);
    if (res.headers.get('x-tollgate-has-more') !== 'true') return { status: 200 };
  }
}

const waitLogged = async (ids: string[]): Promise<void> => {
  for (const id of ids) {
    const deadline = Date.now() + 5_000;
    while ((await fetch(`${tg!.url}/api/logs/${id}`)).status !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
};

describe('shipping the request log with written_after', () => {
  it('ships every record exactly once across long streams, a restart and retention', async () => {
    tg = await startGateway(config(upstream.url), {}, { dataDir });
    const sent: string[] = [];
    // A long stream arrives first, then quick requests end before it.
    const long1 = await longStream();
    sent.push(long1.id, await quick(), await quick());
    expect((await poll()).status).toBe(200);
    // The stream was not over at that poll: not shipped yet, the quick ones were.
    expect(shipped).not.toContain(long1.id);
    expect(shipped).toEqual(sent.slice(1));
    await long1.done;
    sent.push(await quick());
    await waitLogged([long1.id]);
    expect((await poll()).status).toBe(200);
    expect(shipped).toContain(long1.id);

    // The list answers the same, in write order, with the cursor to go on from.
    const list = (await (await fetch(`${tg.url}/api/logs?written_after=0&limit=500`)).json()) as any;
    expect(list.data.map((entry: { id: string }) => entry.id)).toEqual(shipped);
    expect(String(list.next_written_after)).toBe(cursor);
    expect(list.has_more).toBe(false);
    expect(list.data.map((entry: { write_seq: number }) => entry.write_seq)).toEqual([...list.data.map((entry: { write_seq: number }) => entry.write_seq)].sort((a, b) => a - b));

    // A stream running across a restart's poll, and a restart: the cursor goes on.
    const long2 = await longStream();
    sent.push(long2.id);
    await long2.done;
    await tg.stop();
    tg = await startGateway(config(upstream.url), {}, { dataDir });
    sent.push(await quick());
    await waitLogged(sent);
    expect((await poll()).status).toBe(200);

    // Retention trims records already shipped: nothing to say, the next ones come as before.
    await tg.gateway.governance.trimRequestLog({ olderThan: null, maxEntries: 2 });
    sent.push(await quick());
    await waitLogged(sent.slice(-1));
    expect((await poll()).status).toBe(200);
    expect([...shipped].sort()).toEqual([...sent].sort());
    expect(new Set(shipped).size).toBe(shipped.length);

    // Retention trims a record written after the shipper's cursor before it was shipped: said, not skipped.
    const lost = await quick();
    const kept = await quick();
    await waitLogged([lost, kept]);
    // The oldest by arrival goes first: with two kept, `lost` goes.
    await tg.gateway.governance.trimRequestLog({ olderThan: null, maxEntries: 1 });
    const refused = await poll();
    expect(refused.status).toBe(410);
    expect(refused.body.error).toMatchObject({ code: 'log_cursor_trimmed', param: 'written_after' });
    expect(shipped).not.toContain(kept);
    // The shipper that accepts the gap takes what is left.
    expect((await poll('&allow_gaps=true')).status).toBe(200);
    expect(shipped.slice(-1)).toEqual([kept]);
    expect(new Set(shipped).size).toBe(shipped.length);
  }, 60_000);

  it('refuses a cursor the log never reached and mixing write order with arrival times', async () => {
    const ahead = await fetch(`${tg!.url}/api/logs/export?written_after=9000000000000000`);
    expect(ahead.status).toBe(400);
    expect(((await ahead.json()) as any).error).toMatchObject({ code: 'invalid_query', param: 'written_after' });
    const mixed = await fetch(`${tg!.url}/api/logs?written_after=0&from=2026-01-01`);
    expect(mixed.status).toBe(400);
    expect(((await mixed.json()) as any).error).toMatchObject({ code: 'invalid_query', param: 'from' });
    const bad = await fetch(`${tg!.url}/api/logs?written_after=abc`);
    expect(bad.status).toBe(400);
  });

  it('goes on when the data directory is restored from a backup or wiped, instead of skipping what its new numbers reuse', async () => {
    await tg!.stop();
    const backup = mkdtempSync(join(tmpdir(), 'tollgate-shipping-backup-'));
    cpSync(dataDir, backup, { recursive: true });
    tg = await startGateway(config(upstream.url), {}, { dataDir });
    const afterBackup = await quick();
    await waitLogged([afterBackup]);
    expect((await poll()).status).toBe(200);
    expect(shipped.at(-1)).toBe(afterBackup);

    // Restored from the backup: what it writes now is shipped, though the log has fewer records than before.
    await tg.stop();
    rmSync(dataDir, { recursive: true, force: true });
    cpSync(backup, dataDir, { recursive: true });
    rmSync(backup, { recursive: true, force: true });
    tg = await startGateway(config(upstream.url), {}, { dataDir });
    const afterRestore = await quick();
    await waitLogged([afterRestore]);
    expect((await poll()).status).toBe(200);
    expect(shipped.at(-1)).toBe(afterRestore);

    // Wiped (an emptyDir lost with its pod): the new log's records are shipped from its first.
    await tg.stop();
    rmSync(dataDir, { recursive: true, force: true });
    dataDir = mkdtempSync(join(tmpdir(), 'tollgate-shipping-e2e-'));
    tg = await startGateway(config(upstream.url), {}, { dataDir });
    const fresh = [await quick(), await quick()];
    await waitLogged(fresh);
    expect((await poll()).status).toBe(200);
    expect(shipped.slice(-2)).toEqual(fresh);
    expect(new Set(shipped).size).toBe(shipped.length);
  }, 60_000);

  it('answers a call a bounded amount of bodies: records with 1 MiB bodies come a few at a time, each once, in the list too', async () => {
    await tg?.stop();
    tg = await startGateway({ ...config(upstream.url), settings: { log_bodies: { enabled: true, max_bytes: 1_048_576 } } }, {}, { dataDir });
    const start = (await (await fetch(`${tg.url}/api/logs?written_after=0&allow_gaps=true&limit=500`)).json()) as any;
    let at = String(start.next_written_after);
    const big = 'x '.repeat(600_000);
    const sent: string[] = [];
    for (let i = 0; i < 12; i++) {
      const { response } = await client().chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: big }] }).withResponse();
      sent.push(response.headers.get('x-request-id') as string);
    }
    await waitLogged(sent);
    const got: string[] = [];
    let calls = 0;
    for (;;) {
      const res = await fetch(`${tg.url}/api/logs/export?format=jsonl&written_after=${at}`);
      expect(res.status).toBe(200);
      const text = await res.text();
      calls++;
      // 1 MiB of request body each (the echoed answer too): no call holds more than some 4 MiB of them.
      expect(text.length).toBeLessThan(20_000_000);
      for (const line of text.split('\n').filter(Boolean)) got.push((JSON.parse(line) as { id: string }).id);
      at = res.headers.get('x-tollgate-next-written-after') as string;
      if (res.headers.get('x-tollgate-has-more') !== 'true') break;
    }
    expect(got).toEqual(sent);
    expect(calls).toBeGreaterThan(1);

    // The newest-first list (and so each page of the whole export) is bounded the same way.
    const listed: string[] = [];
    let before = '';
    for (;;) {
      const res = await fetch(`${tg.url}/api/logs?limit=500${before ? `&before=${before}` : ''}`);
      const text = await res.text();
      expect(text.length).toBeLessThan(20_000_000);
      const page = JSON.parse(text) as { data: Array<{ id: string }>; next_before: string | null };
      listed.push(...page.data.map((entry) => entry.id));
      if (page.next_before === null) break;
      before = page.next_before;
    }
    expect(listed.slice(0, 12)).toEqual([...sent].reverse());
    const exported = (await (await fetch(`${tg.url}/api/logs/export?format=jsonl`)).text()).split('\n').filter(Boolean);
    expect(exported.map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(listed);
    // 30 s alone on a loaded two-core machine (twelve 1 MiB requests logged whole, then read back in several ways).
  }, 150_000);

  it('moves the cursor past a gap it was told to take, though retention left nothing after it: the next poll is not refused again', async () => {
    // A gateway idle longer than its retention while its shipper was down: every record it had is deleted unread.
    await tg?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    dataDir = mkdtempSync(join(tmpdir(), 'tollgate-shipping-e2e-'));
    tg = await startGateway(config(upstream.url), {}, { dataDir });
    const gone = [await quick(), await quick()];
    await waitLogged(gone);
    await tg.gateway.governance.trimRequestLog({ olderThan: null, maxEntries: 0 });
    const exportAt = (at: string, extra = ''): Promise<Response> => fetch(`${tg!.url}/api/logs/export?format=jsonl&written_after=${at}${extra}`);
    expect((await exportAt('0')).status).toBe(410);
    // The operator takes the gap, as the 410 says: nothing is left to ship.
    const gap = await exportAt('0', '&allow_gaps=true');
    expect(gap.status).toBe(200);
    expect(await gap.text()).toBe('');
    expect(gap.headers.get('x-tollgate-has-more')).toBe('false');
    const at = gap.headers.get('x-tollgate-next-written-after') as string;
    // The cron job's next run, without allow_gaps: nothing new, and no 410 again.
    const next = await exportAt(at);
    expect(next.status).toBe(200);
    expect(await next.text()).toBe('');
    // The list says the same.
    const listed = (await (await fetch(`${tg.url}/api/logs?written_after=0&allow_gaps=true`)).json()) as any;
    expect(String(listed.next_written_after)).toBe(at);
    // A record written since is shipped from there.
    const fresh = await quick();
    await waitLogged([fresh]);
    const after = await exportAt(at);
    expect(after.status).toBe(200);
    expect((await after.text()).split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: string }).id)).toEqual([fresh]);
  }, 60_000);
});
