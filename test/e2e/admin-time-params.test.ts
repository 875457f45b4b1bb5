import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * One rule for every `from` and `to` of the management API (the request log, usage, the audit log and their
 * exports): epoch ms, or an ISO 8601 date or date-time; a time without an offset is read in `tz`, else UTC; anything
 * else is a 400 naming the parameter, whatever time zone the server runs in.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

const ENDPOINTS = ['/api/logs', '/api/logs/export', '/api/usage', '/api/audit', '/api/audit/export'];

/** Runs a test with the gateway's process in another time zone (Node reads TZ when it changes). */
async function inServerZone(zone: string, run: () => Promise<void>): Promise<void> {
  const before = process.env.TZ;
  process.env.TZ = zone;
  try {
    await run();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

let newest: { id: string; arrival: number };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway(openAIConfig(upstream.url));
  const key = await createKey({ name: 'clock' });
  await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const deadline = Date.now() + 5_000;
  for (;;) {
    const page = await api('GET', '/api/logs?limit=1');
    const entry = page.body.data[0];
    if (entry) {
      newest = { id: entry.id, arrival: Number(entry.id.slice(0, 15)) };
      break;
    }
    if (Date.now() > deadline) throw new Error('the request was not logged');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

describe('from and to', () => {
  it('refuse what is not ISO 8601 or epoch ms, on every endpoint, with a 400 naming the parameter', async () => {
    await inServerZone('America/New_York', async () => {
      // Also epoch seconds and a date without dashes: read as milliseconds they selected January 1970, answered with 200.
    const refused = ['11/29/2026', '2026-11-29 10:00 PM', 'Nov 29 2026', 'Sun, 29 Nov 2026 10:00:00 GMT', '2026-11-29T24:00', '2026-11-29T10:00+25:00', '2026-11-29T10:00:00 Z', '29-11-2026', '2026-11-29T10', '1795990000', '20261129'];
      for (const endpoint of ENDPOINTS) {
        for (const name of ['from', 'to']) {
          for (const value of refused) {
            const res = await api('GET', `${endpoint}?${name}=${encodeURIComponent(value)}`);
            expect(res.status, `${endpoint} ${name}=${value}`).toBe(400);
            expect(res.body.error, `${endpoint} ${name}=${value}`).toMatchObject({ code: 'invalid_query', param: name });
            expect(res.body.error.message).toContain(name);
          }
        }
      }
    });
  });

  it('read a date alone as the start of that day, UTC unless tz names a zone', async () => {
    await inServerZone('America/Los_Angeles', async () => {
      const utc = await api('GET', '/api/usage?from=2026-11-29&to=2026-11-30');
      expect(utc.status).toBe(200);
      expect([utc.body.from, utc.body.to]).toEqual(['2026-11-29T00:00:00.000Z', '2026-11-30T00:00:00.000Z']);
      const berlin = await api('GET', '/api/usage?from=2026-11-29&to=2026-11-30&tz=Europe/Berlin');
      expect([Date.parse(berlin.body.from), Date.parse(berlin.body.to)]).toEqual([Date.parse('2026-11-28T23:00:00Z'), Date.parse('2026-11-29T23:00:00Z')]);
      // Santiago's clocks go from 00:00 to 01:00 on 2026-09-06: that day starts at 01:00.
      const santiago = await api('GET', '/api/usage?from=2026-09-06&to=2026-09-07&tz=America/Santiago&interval=hour');
      expect(Date.parse(santiago.body.from)).toBe(Date.parse('2026-09-06T04:00:00Z'));
    });
  });

  it('read a date-time without an offset in tz (else UTC), and one with an offset as written', async () => {
    await inServerZone('Asia/Tokyo', async () => {
      const cases: Array<[string, string]> = [
        ['from=2026-11-29T10:00&to=2026-11-29T11:00', '2026-11-29T10:00:00.000Z'],
        ['from=2026-11-29 10:00:00&to=2026-11-29T11:00', '2026-11-29T10:00:00.000Z'],
        ['from=2026-11-29T10:00:00.5%2B05:30&to=2026-11-29T11:00Z', '2026-11-29T04:30:00.500Z'],
        ['from=2026-11-29T10:00-0800&to=2026-11-30T11:00Z', '2026-11-29T18:00:00.000Z'],
        ['from=2026-11-29T10:00z&to=2026-11-29T11:00Z', '2026-11-29T10:00:00.000Z'],
      ];
      for (const [query, from] of cases) {
        const res = await api('GET', `/api/usage?interval=hour&${query}`);
        expect(res.status, query).toBe(200);
        expect(Date.parse(res.body.from), query).toBe(Date.parse(from));
      }
      const kolkata = await api('GET', '/api/usage?interval=hour&tz=Asia/Kolkata&from=2026-11-29T10:00&to=2026-11-29T11:00');
      expect(Date.parse(kolkata.body.from)).toBe(Date.parse('2026-11-29T04:30:00Z'));
    });
  });

  it('refuse a local time the clocks skipped, an impossible date, and an unknown zone', async () => {
    const gap = await api('GET', '/api/logs?from=2026-03-29T02:30&tz=Europe/Berlin');
    expect(gap.status).toBe(400);
    expect(gap.body.error).toMatchObject({ code: 'invalid_query', param: 'from' });
    expect(gap.body.error.message).toContain('Europe/Berlin');
    // The hour clocks repeat is the earlier one.
    const repeated = await api('GET', '/api/usage?interval=hour&from=2026-10-25T02:30&to=2026-10-25T05:00Z&tz=Europe/Berlin');
    expect(Date.parse(repeated.body.from)).toBe(Date.parse('2026-10-25T00:30:00Z'));
    expect((await api('GET', '/api/audit?to=2026-02-29')).body.error).toMatchObject({ param: 'to' });
    for (const endpoint of ENDPOINTS.filter((path) => path !== '/api/usage')) {
      const res = await api('GET', `${endpoint}?tz=Mars/Olympus_Mons`);
      expect(res.status, endpoint).toBe(400);
      expect(res.body.error, endpoint).toMatchObject({ code: 'invalid_query', param: 'tz' });
    }
    expect((await api('GET', '/api/logs?tz=europe/berlin')).status).toBe(200);
  });

  it('select the request log by the instant they name, in any server zone', async () => {
    await inServerZone('Pacific/Kiritimati', async () => {
      // The newest request's arrival as Kolkata wall-clock time, without an offset: a second before and after it.
      const kolkata = (ms: number): string => new Date(ms + 330 * 60_000).toISOString().slice(0, 19);
      const after = await api('GET', `/api/logs?tz=Asia/Kolkata&from=${kolkata(newest.arrival - 1_000)}`);
      expect(after.body.data.map((e: any) => e.id)).toContain(newest.id);
      const before = await api('GET', `/api/logs?tz=Asia/Kolkata&to=${kolkata(newest.arrival - 1_000)}`);
      expect(before.body.data.map((e: any) => e.id)).not.toContain(newest.id);
      // The same instant with its offset, no tz needed; and the export selects as the list does.
      const withOffset = `${kolkata(newest.arrival - 1_000)}%2B05:30`;
      expect((await api('GET', `/api/logs?from=${withOffset}`)).body.data.map((e: any) => e.id)).toContain(newest.id);
      const exported = await (await fetch(`${tg.url}/api/logs/export?format=jsonl&to=${withOffset}`)).text();
      expect(exported).not.toContain(newest.id);
      // The audit log too, around the key's creation.
      const created = (await api('GET', '/api/audit?action=key.created')).body.data[0];
      const auditAt = `${kolkata(Date.parse(created.at) + 1_000)}%2B05:30`;
      expect((await api('GET', `/api/audit?action=key.created&to=${auditAt}`)).body.data.map((e: any) => e.id)).toContain(created.id);
      expect((await api('GET', `/api/audit?action=key.created&from=${auditAt}`)).body.data).toEqual([]);
    });
  });
});
