// Reading a request-log record decodes it whole, its logged bodies (log_bodies, up to 1 MiB each) included, whether
// or not it matches the filter. A page looked at up to 10,000 records: a log shipper or a dashboard filtering for
// something rare over records with large bodies held the event loop for seconds (10-14 s with 256 KiB bodies), and
// every request through the gateway waited. A page now also ends once it has read about 4 MiB of bodies, with its
// cursor, so the filter takes more, short calls (4 MiB: up to some 70 ms a call here, 130-150 ms with 16 MiB). Retention, which read such records 1,000 at
// a time to delete them, takes as few at a time.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { ownNow } from '../helpers/own-time.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;
/** Records of about 1 MiB of logged request body each: some 200 MiB to read through. */
const BIG = 200;
let needle: string;
let start: string;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } }, settings: { log_bodies: { enabled: true, max_bytes: 1_048_576 } } });
  const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
  start = String(((await (await fetch(`${tg.url}/api/logs?written_after=0&allow_gaps=true`)).json()) as { next_written_after: number }).next_written_after);
  const big = 'x '.repeat(530_000);
  for (let sent = 0; sent < BIG; sent += 4) {
    await Promise.all(Array.from({ length: 4 }, () => client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: big }] })));
  }
  // The one record the filter is for, written last.
  const { response } = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  needle = response.headers.get('x-request-id') as string;
  const deadline = Date.now() + 10_000;
  while ((await fetch(`${tg.url}/api/logs/${needle}`)).status !== 200 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}, 300_000);
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

/** Calls `url(cursor)` until the answer says there is no more, measuring the longest the gateway's event loop was held by one call. */
async function pageThrough(url: (cursor: string | null) => string, next: (body: any) => string | null): Promise<{ ids: string[]; calls: number; lagMs: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let calls = 0;
  let lagMs = 0;
  do {
    // On the thread's own clock (test/helpers/own-time.ts): under the whole suite on two cores the wall clock read
    // 500-700 ms for what takes the gateway a tenth of that.
    let last = ownNow();
    let held = 0;
    const probe = setInterval(() => {
      const now = ownNow();
      held = Math.max(held, now - last - 5);
      last = now;
    }, 5);
    const res = await fetch(url(cursor));
    const body = (await res.json()) as any;
    clearInterval(probe);
    held = Math.max(held, ownNow() - last - 5);
    expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(200);
    lagMs = Math.max(lagMs, held);
    calls++;
    ids.push(...body.data.map((entry: { id: string }) => entry.id));
    cursor = next(body);
  } while (cursor !== null && calls < 500);
  return { ids, calls, lagMs };
}

describe('a filtered page over records with large logged bodies', () => {
  it('reads a bounded amount of bodies a call: a shipper with a rare filter gets its record without holding the event loop', async () => {
    const shipped = await pageThrough(
      (cursor) => `${tg.url}/api/logs?written_after=${cursor ?? start}&model=openai/gpt-4o&limit=500`,
      (body) => (body.has_more ? String(body.next_written_after) : null),
    );
    expect(shipped.ids).toEqual([needle]);
    expect(shipped.calls).toBeGreaterThan(1);
    expect(shipped.lagMs).toBeLessThan(300);
  }, 120_000);

  it('does the same for the newest-first list (and so the export) with a filter nothing matches', async () => {
    const listed = await pageThrough(
      (cursor) => `${tg.url}/api/logs?provider=anthropic&limit=500${cursor ? `&before=${cursor}` : ''}`,
      (body) => body.next_before,
    );
    expect(listed.ids).toEqual([]);
    expect(listed.calls).toBeGreaterThan(1);
    expect(listed.lagMs).toBeLessThan(300);
  }, 120_000);

  it('has retention delete such records without holding the event loop (it read 1,000 whole records a batch)', async () => {
    let last = ownNow();
    let lagMs = 0;
    const probe = setInterval(() => {
      const now = ownNow();
      lagMs = Math.max(lagMs, now - last - 5);
      last = now;
    }, 5);
    const deleted = await tg.gateway.governance.trimRequestLog({ olderThan: null, maxEntries: 1 });
    clearInterval(probe);
    expect(deleted).toBeGreaterThanOrEqual(BIG);
    expect(lagMs).toBeLessThan(300);
    // The newest record is the one kept; a shipper from the start is told of the gap.
    const left = (await (await fetch(`${tg.url}/api/logs?limit=500`)).json()) as { data: Array<{ id: string }> };
    expect(left.data.map((entry) => entry.id)).toEqual([needle]);
    expect((await fetch(`${tg.url}/api/logs?written_after=${start}`)).status).toBe(410);
  }, 120_000);
});
