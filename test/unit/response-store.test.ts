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
  root = open({ path: join(dir, 'test.lmdb'), maxDbs: 8, compression: false, noSync: true });
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

  describe('turns linked to the turn they continue', () => {
    const turn = (id: string, text: string, previous?: string, expires = now + 1000) => ({
      scope: 'key:a',
      expires_at: expires,
      response: { id, output: [{ id: `out_${id}`, type: 'message', content: `re ${text}` }] },
      input_items: [{ id: `in_${id}`, type: 'message', content: text }],
      ...(previous ? { previous } : {}),
    });
    const texts = (store: ResponseStore, id: string) => {
      const found = store.conversation(store.find(id) as never);
      return 'items' in found ? found.items.map((item) => item.content) : found;
    };

    it('list the whole conversation, within limits of turns and bytes', async () => {
      const store = new ResponseStore(root, () => now, { turns: 3, bytes: 1_000_000 });
      await store.put('r1', turn('r1', 'a'));
      await store.put('r2', turn('r2', 'b', 'r1'));
      await store.put('r3', turn('r3', 'c', 'r2'));
      expect(texts(store, 'r3')).toEqual(['a', 're a', 'b', 're b', 'c']);
      await store.put('r4', turn('r4', 'd', 'r3'));
      expect(texts(store, 'r4')).toEqual({ tooLong: 'turns', limit: 3 });
      const small = new ResponseStore(root, () => now, { turns: 100, bytes: 150 });
      expect(texts(small, 'r4')).toMatchObject({ tooLong: 'bytes' });
    });

    it('a turn expired or deleted is hidden while a later one continues it, and goes with the last of them', async () => {
      const store = new ResponseStore(root, () => now);
      await store.put('r1', turn('r1', 'a', undefined, now + 10));
      await store.put('r2', turn('r2', 'b', 'r1', now + 100));
      await store.put('r3', turn('r3', 'c', 'r2', now + 1000));
      await store.delete('r2', 'key:a');
      now += 20;
      expect(await store.sweep({ maxEntries: null })).toBe(1);
      expect([store.find('r1'), store.find('r2')]).toEqual([null, null]);
      expect(store.findItem('out_r1', 'key:a')).toBeNull();
      expect(texts(store, 'r3')).toEqual(['a', 're a', 'b', 're b', 'c']);
      now += 1000;
      expect(await store.sweep({ maxEntries: null })).toBe(1);
      now -= 1020;
      for (const name of ['responses', 'responses-by-expiry', 'response-items', 'response-links']) expect([...root.openDB({ name }).getKeys()]).toEqual([]);
      expect(store.bytes()).toBe(0);
    });

    it('a turn whose previous one went before it committed keeps the whole conversation', async () => {
      const store = new ResponseStore(root, () => now);
      await store.put('r1', turn('r1', 'a'));
      await store.delete('r1', 'key:a');
      await store.put('r2', turn('r2', 'b', 'r1'), [{ content: 'a' }, { content: 're a' }, { content: 'b' }]);
      expect(texts(store, 'r2')).toEqual(['a', 're a', 'b']);
      expect(store.find('r2')?.previous).toBeUndefined();
      expect([...root.openDB({ name: 'response-links' }).getKeys()]).toEqual([]);
    });

    it('the byte sweep evicts the oldest until the records fit, a chain with its last turn', async () => {
      const store = new ResponseStore(root, () => now);
      const big = (id: string, previous?: string) => ({ ...turn(id, 'x'.repeat(10_000), previous), expires_at: now + Number(id.slice(1)) });
      await store.put('r1', big('r1'));
      await store.put('r2', big('r2', 'r1'));
      await store.put('r3', big('r3'));
      const bytes = store.bytes();
      expect(bytes).toBeGreaterThan(30_000);
      // r1 goes first but is hidden (r2 continues it), r2 then takes it along.
      expect(await store.sweep({ maxEntries: null, maxBytes: bytes - 5_000 })).toBe(2);
      expect(store.bytes()).toBeLessThan(bytes / 2);
      expect(store.find('r3')).not.toBeNull();
      expect([...root.openDB({ name: 'responses' }).getKeys()]).toEqual(['r3']);
    });
  });
});
