import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * `GET /api/usage?interval=day&tz=...` counts a zone's local days (23 or 25 hours across a clock change), from the
 * hourly rollups, and names each bucket by its local start with the zone's offset. The gateway runs on a clock the
 * test sets, so requests arrive at chosen instants.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.now();
let sent = 0;
const { api } = gatewayApi(() => tg.url);

/** Sends one request that arrives at `iso` (a few minutes from any hour, so its duration cannot move it). */
async function requestAt(iso: string): Promise<void> {
  now = Date.parse(iso);
  const res = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
  expect(res.status).toBe(200);
  await res.text();
  sent++;
}

/** Requests per bucket start, for the model group. */
async function perBucket(query: string): Promise<Record<string, number>> {
  const res = await api('GET', `/api/usage?group_by=model&${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const counts: Record<string, number> = {};
  for (const row of res.body.data) if (row.group === 'openai/gpt-4o-mini') counts[row.start] = (counts[row.start] ?? 0) + row.requests;
  return counts;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway(openAIConfig(upstream.url), {}, { clock: () => now });
  // Berlin, an ordinary day: 00:10 and 23:50 on the 29th, 00:10 on the 30th.
  for (const at of ['2026-11-28T23:10:00Z', '2026-11-29T22:50:00Z', '2026-11-29T23:10:00Z']) await requestAt(at);
  // Berlin, the day clocks go forward (23 hours) and the day they go back (25 hours), the same three times each.
  for (const at of ['2026-03-28T23:10:00Z', '2026-03-29T21:50:00Z', '2026-03-29T22:10:00Z']) await requestAt(at);
  for (const at of ['2026-10-24T22:10:00Z', '2026-10-25T22:50:00Z', '2026-10-25T23:10:00Z']) await requestAt(at);
  // Kolkata (+05:30): 00:10 and 00:40 on 2026-06-15, 23:40 that day.
  for (const at of ['2026-06-14T18:40:00Z', '2026-06-14T19:10:00Z', '2026-06-15T18:10:00Z']) await requestAt(at);
  // Every request is counted as it finishes, just after its answer.
  const deadline = Date.now() + 5_000;
  for (;;) {
    const totals = (await api('GET', '/api/usage?group_by=model&from=2026-01-01&to=2027-01-01')).body.totals;
    if (totals.find((t: any) => t.group === 'openai/gpt-4o-mini')?.requests === sent) break;
    if (Date.now() > deadline) throw new Error('the requests were not counted');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

describe('GET /api/usage with tz', () => {
  it("counts the zone's local days, each named by its local midnight with the offset", async () => {
    expect(await perBucket('interval=day&tz=Europe/Berlin&from=2026-11-29&to=2026-12-01')).toEqual({
      '2026-11-29T00:00:00.000+01:00': 2,
      '2026-11-30T00:00:00.000+01:00': 1,
    });
    // Without tz the days are UTC days, as before.
    expect(await perBucket('interval=day&from=2026-11-28&to=2026-11-30')).toEqual({ '2026-11-28T00:00:00.000Z': 1, '2026-11-29T00:00:00.000Z': 2 });
    const res = await api('GET', '/api/usage?group_by=model&interval=day&tz=Europe/Berlin&from=2026-11-29&to=2026-12-01');
    expect(res.body).toMatchObject({ tz: 'Europe/Berlin', from: '2026-11-29T00:00:00.000+01:00', to: '2026-12-01T00:00:00.000+01:00' });
    expect(res.body.totals.find((t: any) => t.group === 'openai/gpt-4o-mini').requests).toBe(3);
  });

  it('counts a 23-hour and a 25-hour day whole across a clock change', async () => {
    expect(await perBucket('interval=day&tz=Europe/Berlin&from=2026-03-29&to=2026-03-31')).toEqual({
      '2026-03-29T00:00:00.000+01:00': 2,
      '2026-03-30T00:00:00.000+02:00': 1,
    });
    expect(await perBucket('interval=day&tz=Europe/Berlin&from=2026-10-25&to=2026-10-27')).toEqual({
      '2026-10-25T00:00:00.000+02:00': 2,
      '2026-10-26T00:00:00.000+01:00': 1,
    });
  });

  it('names hours by their local start, and in a :30 zone counts an hour on the day it starts in', async () => {
    // UTC hours are Kolkata's half hours: the request at 00:10 is in the hour that began at 23:30 the day before.
    expect(await perBucket('interval=hour&tz=Asia/Kolkata&from=2026-06-14T18:00Z&to=2026-06-15T19:00Z')).toEqual({
      '2026-06-14T23:30:00.000+05:30': 1,
      '2026-06-15T00:30:00.000+05:30': 1,
      '2026-06-15T23:30:00.000+05:30': 1,
    });
    // So 00:00 to 00:30 counts on the day before; nothing is lost or counted twice.
    expect(await perBucket('interval=day&tz=Asia/Kolkata&from=2026-06-14&to=2026-06-16')).toEqual({
      '2026-06-14T00:00:00.000+05:30': 1,
      '2026-06-15T00:00:00.000+05:30': 2,
    });
  });

  it('with tz=UTC reads the daily rollups and writes the offset', async () => {
    expect(await perBucket('interval=day&tz=UTC&from=2026-11-28&to=2026-11-30')).toEqual({ '2026-11-28T00:00:00.000+00:00': 1, '2026-11-29T00:00:00.000+00:00': 2 });
  });

  it('refuses an unknown zone, and more than a year of local days', async () => {
    const unknown = await api('GET', '/api/usage?tz=Europe/Atlantis');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'invalid_query', param: 'tz' });
    const wide = await api('GET', '/api/usage?interval=day&tz=Europe/Berlin&from=2024-01-01&to=2026-01-01');
    expect(wide.status).toBe(400);
    expect(wide.body.error).toMatchObject({ code: 'invalid_query', param: 'from' });
    expect((await api('GET', '/api/usage?interval=day&tz=UTC&from=2024-01-01&to=2026-01-01')).status).toBe(200);
  });
});
