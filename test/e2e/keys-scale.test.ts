import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { GovernanceStore } from '../../src/governance/governance-store.js';
import { Store } from '../../src/store/store.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { maxLoopHold } from '../helpers/own-time.js';

/**
 * GET /api/keys with 20,000 virtual keys. Every page read, masked and sorted all the keys (the ids are random, the
 * order is by creation), holding the event loop about half a second whatever the page, so paging did not help; and
 * the Spend page fetched every key (11 MB) to name its groups. A page now costs what it holds, and `ids` with
 * `fields` answer just the keys asked for.
 */

const KEYS = 20_000;
/** How long a page or an ids query may hold the gateway's event loop (every proxied request waits meanwhile). */
const MAX_LAG_MS = 50;
let tg: RunningGateway;
let dataDir: string;
const { api } = gatewayApi(() => tg.url);

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-keys-scale-'));
  const store = await Store.open(dataDir, 'test');
  const governance = new GovernanceStore(store.root, new EventBus());
  // Created through the store, a thousand at a time (lmdb-js commits each batch's writes together).
  for (let batch = 0; batch < KEYS / 1_000; batch++) {
    const made: Promise<unknown>[] = [];
    for (let k = 0; k < 1_000; k++) made.push(governance.createKey({ name: `bulk-${String(batch * 1_000 + k).padStart(5, '0')}`, budget: 5, metadata: { owner: 'load' } }));
    await Promise.all(made);
  }
  await store.close();
  tg = await startGateway({}, {}, { dataDir });
}, 180_000);
afterAll(async () => {
  await tg?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * GET `path`, with the longest the event loop was held while it was served (the gateway runs in this process), on the
 * thread's own clock (maxLoopHold: a gap the scheduler made while a neighbour had the CPU is not the gateway's), the
 * least of three tries (a try can still catch a GC or a page fault; a handler that holds the loop does so every time).
 */
async function timedGet(path: string): Promise<{ status: number; type: string | null; body: any; bytes: number; lagMs: number }> {
  let best: Awaited<ReturnType<typeof timedGetOnce>> | undefined;
  for (let i = 0; i < 3; i++) {
    const got = await timedGetOnce(path);
    if (!best || got.lagMs < best.lagMs) best = got;
    if (best.lagMs < MAX_LAG_MS) break;
  }
  return best!;
}

async function timedGetOnce(path: string): Promise<{ status: number; type: string | null; body: any; bytes: number; lagMs: number }> {
  const { value: result, holdMs: lagMs } = await maxLoopHold(async () => {
    const response = await fetch(`${tg.url}${path}`);
    // Its chunks kept as they come, joined and decoded after: doing that to 11 MB here, in the gateway's process,
    // would be lag of the test's own.
    const chunks: Uint8Array[] = [];
    for await (const chunk of response.body!) chunks.push(chunk);
    return { status: response.status, type: response.headers.get('content-type'), chunks };
  });
  const text = Buffer.concat(result.chunks).toString('utf8');
  return { status: result.status, type: result.type, body: JSON.parse(text), bytes: text.length, lagMs };
}

describe('GET /api/keys with 20,000 keys', () => {
  let all: Array<{ id: string; name: string; created_at: string }>;
  let whole: Awaited<ReturnType<typeof timedGet>>;

  beforeAll(async () => {
    // The whole listing, as existing callers get it: the order the pages must follow (creation, then id).
    whole = await timedGet('/api/keys');
    all = whole.body.data;
  }, 60_000);

  it('still answers every key, in creation order, without a limit (existing callers), never holding the event loop for long', () => {
    // Sent as it is read: built and serialized whole, the 11 MB answer held the event loop about half a second.
    expect(whole.status).toBe(200);
    expect(whole.type).toBe('application/json; charset=utf-8');
    expect(Object.keys(whole.body)).toEqual(['object', 'data']);
    expect(whole.body.object).toBe('list');
    expect(whole.lagMs).toBeLessThan(MAX_LAG_MS);
    expect(all).toHaveLength(KEYS);
    const sorted = [...all].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
    expect(all.map((key) => key.id)).toEqual(sorted.map((key) => key.id));
    expect(all[0]).toMatchObject({ budget: 5, metadata: { owner: 'load' }, spend: 0 });
    expect(all[0]).not.toHaveProperty('key_hash');
  });

  it('serves a page, first or deep, without holding the event loop: the cost is the page, not every key', async () => {
    const first = await timedGet('/api/keys?limit=100');
    expect(first.status).toBe(200);
    expect(first.body.data.map((key: { id: string }) => key.id)).toEqual(all.slice(0, 100).map((key) => key.id));
    expect(first.body).toMatchObject({ has_more: true, next_after: expect.stringMatching(/^c_/) });
    expect(first.lagMs).toBeLessThan(MAX_LAG_MS);

    const deep = await timedGet(`/api/keys?limit=100&after=${all[18_999]!.id}`);
    expect(deep.status).toBe(200);
    expect(deep.body.data.map((key: { id: string }) => key.id)).toEqual(all.slice(19_000, 19_100).map((key) => key.id));
    expect(deep.body.data[0]).toEqual(all[19_000]);
    expect(deep.lagMs).toBeLessThan(MAX_LAG_MS);

    const last = await timedGet(`/api/keys?limit=100&after=${all[KEYS - 51]!.id}`);
    expect(last.body.data).toHaveLength(50);
    expect(last.body).toMatchObject({ has_more: false, next_after: null });
  }, 60_000);

  it('finds keys with q across all of them without holding the event loop', async () => {
    const found = await timedGet('/api/keys?limit=100&q=BULK-19999');
    expect(found.body.data.map((key: { name: string }) => key.name).sort()).toEqual(['bulk-19999']);
    expect(found.body.has_more).toBe(false);
    expect(found.lagMs).toBeLessThan(MAX_LAG_MS);
  }, 60_000);

  it('answers just the keys asked for with ids, and only the fields asked for with fields', async () => {
    const wanted = [all[19_999]!, all[3]!, all[10_000]!, ...all.slice(5_000, 5_496)];
    const ids = [...wanted.map((key) => key.id), 'vk_deleted0000000'];
    const res = await timedGet(`/api/keys?ids=${ids.join(',')}&fields=id,name`);
    expect(res.status).toBe(200);
    // In the order asked; an id that names no key (deleted since) is left out.
    expect(res.body).toEqual({ object: 'list', data: wanted.map((key) => ({ id: key.id, name: key.name })) });
    expect(res.lagMs).toBeLessThan(MAX_LAG_MS);

    const whole = await timedGet(`/api/keys?ids=${all[7]!.id}`);
    expect(whole.body.data).toEqual([all[7]]);

    // A projection of every key: a small answer for a script that needs names.
    const names = await timedGet('/api/keys?fields=name');
    expect(names.body.data).toHaveLength(KEYS);
    expect(names.body.data[0]).toEqual({ id: all[0]!.id, name: all[0]!.name });
    expect(names.bytes).toBeLessThan(1_000_000);
    expect(names.lagMs).toBeLessThan(MAX_LAG_MS);
    const found = await timedGet('/api/keys?q=bulk-1999&fields=name');
    expect(found.body.data.map((key: { name: string }) => key.name).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `bulk-1999${i}`));

    const page = await timedGet(`/api/keys?limit=2&after=${all[0]!.id}&fields=name,team`);
    expect(page.body).toEqual({ object: 'list', data: all.slice(1, 3).map((key) => ({ id: key.id, name: key.name, team: null })), has_more: true, next_after: expect.stringMatching(/^c_/) });
  }, 60_000);

  it('refuses too many ids, ids with a page, and unknown or secret fields, with a 400 naming the parameter', async () => {
    const tooMany = await api('GET', `/api/keys?ids=${all.slice(0, 501).map((key) => key.id).join(',')}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({ type: 'invalid_request_error', param: 'ids' });
    expect(tooMany.body.error.message).toContain('500');
    for (const query of [`ids=${all[0]!.id}&limit=5`, `ids=${all[0]!.id}&after=${all[1]!.id}`, `ids=${all[0]!.id}&q=bulk`]) {
      const res = await api('GET', `/api/keys?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.param, query).toBe('ids');
    }
    for (const fields of ['key_hash', 'name,secret', 'budget,nope']) {
      const res = await api('GET', `/api/keys?fields=${fields}`);
      expect(res.status, fields).toBe(400);
      expect(res.body.error.param, fields).toBe('fields');
    }
  });
});
