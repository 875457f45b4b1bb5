import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResponseStore } from '../../src/store/response-store.js';

let dir: string;
let root: RootDatabase;
let now = 1_000_000;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'response-store-'));
  root = open({ path: join(dir, 'test.lmdb'), maxDbs: 4, compression: false, noSync: true });
});
afterEach(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

const record = (scope: string, expires: number) => ({ scope, expires_at: expires, response: { id: 'x' }, input_items: [] });

describe('ResponseStore', () => {
  it('reads a write back before it commits, only for its scope, and not once expired', async () => {
    const store = new ResponseStore(root, () => now);
    const put = store.put('resp_1', record('key:a', now + 100));
    expect(store.get('resp_1', 'key:a')).not.toBeNull();
    expect(store.get('resp_1', 'key:b')).toBeNull();
    await put;
    expect(store.get('resp_1', 'key:a')?.scope).toBe('key:a');
    now += 100;
    expect(store.get('resp_1', 'key:a')).toBeNull();
    now -= 100;
  });

  it('the sweep deletes what expired, then the soonest to expire beyond the limit, in batches', async () => {
    const store = new ResponseStore(root, () => now);
    for (let i = 0; i < 10; i++) await store.put(`resp_${i}`, record('anonymous', now + (i - 3) * 1000));
    expect(await store.sweep({ maxEntries: null, batch: 2 })).toBe(4);
    expect(store.find('resp_4')).not.toBeNull();
    expect(await store.sweep({ maxEntries: 3, batch: 2 })).toBe(3);
    expect(['resp_4', 'resp_5', 'resp_6'].map((id) => store.find(id))).toEqual([null, null, null]);
    expect(['resp_7', 'resp_8', 'resp_9'].every((id) => store.find(id) !== null)).toBe(true);
  });

  it('a delete is its scope\'s only', async () => {
    const store = new ResponseStore(root, () => now);
    await store.put('resp_1', record('key:a', now + 1000));
    expect(await store.delete('resp_1', 'key:b')).toBe(false);
    expect(await store.delete('resp_1', 'key:a')).toBe(true);
    expect(store.find('resp_1')).toBeNull();
  });

  it('finds an output item by its id for its scope, until its Response is deleted or swept', async () => {
    const store = new ResponseStore(root, () => now);
    const withItems = (id: string, expires: number) => ({ scope: 'key:a', expires_at: expires, response: { id, output: [{ id: `msg_${id}`, type: 'message' }] }, input_items: [{ id: `in_${id}`, type: 'message' }] });
    const put = store.put('resp_1', withItems('resp_1', now + 1000));
    expect(store.findItem('msg_resp_1', 'key:a')).toEqual({ id: 'msg_resp_1', type: 'message' });
    await put;
    expect(store.findItem('in_resp_1', 'key:a')).toBeNull();
    expect(store.findItem('msg_resp_1', 'key:b')).toBeNull();
    await store.delete('resp_1', 'key:a');
    expect(store.findItem('msg_resp_1', 'key:a')).toBeNull();
    await store.put('resp_2', withItems('resp_2', now + 10));
    now += 20;
    expect(await store.sweep({ maxEntries: null })).toBe(1);
    now -= 20;
    expect(store.findItem('msg_resp_2', 'key:a')).toBeNull();
    expect([...root.openDB<string, string>({ name: 'response-items' }).getKeys()]).toEqual([]);
  });
});
