import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BATCH_WINDOW_MS, commit, commitSoon, commitSoonUnawaited, commitWaiting } from '../../src/store/commit.js';
import { Store } from '../../src/store/store.js';

let dir: string;
let root: RootDatabase;
let db: Database<string, string>;
let transactions: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-commit-'));
  // As the gateway opens it by default: no fsync, so commits are synchronous.
  root = open({ path: join(dir, 'test.lmdb'), maxDbs: 4, compression: false, noSync: true });
  db = root.openDB<string, string>({ name: 'rows' });
  transactions = 0;
  const real = root.transactionSync.bind(root);
  vi.spyOn(root, 'transactionSync').mockImplementation(((work: () => unknown) => {
    transactions++;
    return real(work);
  }) as typeof root.transactionSync);
});
afterEach(async () => {
  vi.restoreAllMocks();
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('background writes (commitSoon)', () => {
  it('wait for the window, then commit together in one transaction and resolve with their results', async () => {
    const done = [1, 2, 3, 4, 5].map((n) => commitSoon(root, () => (db.put(`k${n}`, `v${n}`), n * 10)));
    expect(db.get('k1')).toBeUndefined();
    expect(transactions).toBe(0);
    expect(await Promise.all(done)).toEqual([10, 20, 30, 40, 50]);
    expect(transactions).toBe(1);
    for (const n of [1, 2, 3, 4, 5]) expect(db.get(`k${n}`)).toBe(`v${n}`);
  });

  it('commit within the window', async () => {
    const started = performance.now();
    await commitSoon(root, () => db.put('k', 'v'));
    const waited = performance.now() - started;
    expect(db.get('k')).toBe('v');
    expect(waited).toBeGreaterThanOrEqual(BATCH_WINDOW_MS - 1);
    expect(waited).toBeLessThan(1_000);
  });

  it('fail alone when their work throws: the others still commit', async () => {
    const first = commitSoon(root, () => db.put('a', '1'));
    const broken = commitSoon(root, () => {
      throw new Error('this write is refused');
    });
    const last = commitSoon(root, () => db.put('c', '3'));
    await expect(broken).rejects.toThrow('this write is refused');
    await Promise.all([first, last]);
    expect(db.get('a')).toBe('1');
    expect(db.get('c')).toBe('3');
    expect(transactions).toBe(1);
  });

  it('commit at once when the batch is full, without waiting out the window', async () => {
    const done: Array<Promise<unknown>> = [];
    for (let i = 0; i < 256; i++) done.push(commitSoon(root, () => db.put(`k${i}`, 'v')));
    expect(transactions).toBe(1);
    expect(db.get('k255')).toBe('v');
    await Promise.all(done);
  });

  it('are not taken along by a write that commits at once (a spend): they keep waiting for their batch', async () => {
    const background = commitSoon(root, () => db.put('log', 'entry'));
    const spent = await commit(root, () => (db.put('spend', '1'), 'charged'));
    expect(spent).toBe('charged');
    expect(transactions).toBe(1);
    expect(db.get('spend')).toBe('1');
    expect(db.get('log')).toBeUndefined();
    await background;
    expect(transactions).toBe(2);
    expect(db.get('log')).toBe('entry');
  });

  it('commit now on commitWaiting (before the environment closes), with the writes waiting for the turn', async () => {
    const background = commitSoon(root, () => db.put('k', 'v'));
    const spend = commit(root, () => db.put('spend', '1'));
    commitWaiting(root);
    expect(db.get('k')).toBe('v');
    expect(db.get('spend')).toBe('1');
    await Promise.all([background, spend]);
  });
});

describe('background writes nothing awaits (commitSoonUnawaited)', () => {
  it('share the window and the transaction of the awaited ones; a write that throws is reported alone', async () => {
    const failed = vi.fn();
    commitSoonUnawaited(root, () => db.put('a', '1'), failed);
    commitSoonUnawaited(
      root,
      () => {
        throw new Error('this write is refused');
      },
      failed,
    );
    const awaited = commitSoon(root, () => db.put('b', '2'));
    commitSoonUnawaited(root, () => db.put('c', '3'), failed);
    expect(db.get('a')).toBeUndefined();
    await awaited;
    expect(transactions).toBe(1);
    expect(['a', 'b', 'c'].map((key) => db.get(key))).toEqual(['1', '2', '3']);
    expect(failed).toHaveBeenCalledTimes(1);
    expect(String(failed.mock.calls[0]?.[0])).toContain('this write is refused');
  });

  it('commit on commitWaiting, and with fsync in the asynchronous transaction that root.committed waits for', async () => {
    const failed = vi.fn();
    commitSoonUnawaited(root, () => db.put('k', 'v'), failed);
    commitWaiting(root);
    expect(db.get('k')).toBe('v');
    const synced = open({ path: join(dir, 'synced.lmdb'), maxDbs: 4, compression: false });
    const rows = synced.openDB<string, string>({ name: 'rows' });
    commitSoonUnawaited(synced, () => rows.put('log', 'entry'), failed);
    commitSoonUnawaited(
      synced,
      () => {
        throw new Error('refused with fsync');
      },
      failed,
    );
    await synced.committed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(rows.get('log')).toBe('entry');
    expect(failed).toHaveBeenCalledTimes(1);
    await synced.close();
  });
});

describe('writes something waits for (commit)', () => {
  it('commit at the end of the event-loop turn, together with the others of that turn', async () => {
    const background = commitSoon(root, () => db.put('log', 'entry'));
    const spends = [1, 2, 3].map((n) => commit(root, () => (db.put(`spend${n}`, String(n)), n)));
    // Not yet: the turn has not ended.
    expect(db.get('spend1')).toBeUndefined();
    expect(await Promise.all(spends)).toEqual([1, 2, 3]);
    expect(transactions).toBe(1);
    // They did not wait for the background window (the earlier background write is still waiting).
    expect(db.get('log')).toBeUndefined();
    await background;
    expect(transactions).toBe(2);
  });

  it('fail alone: one refused write does not undo the others of its turn', async () => {
    const kept = commit(root, () => db.put('kept', 'yes'));
    const refused = commit(root, () => {
      throw new Error('refused');
    });
    await expect(refused).rejects.toThrow('refused');
    await kept;
    expect(db.get('kept')).toBe('yes');
  });
});

describe('with fsync (TOLLGATE_FSYNC=true)', () => {
  it("both kinds use lmdb-js's asynchronous transaction, which waits for the disk off the event loop", async () => {
    const synced = open({ path: join(dir, 'synced.lmdb'), maxDbs: 4, compression: false });
    const rows = synced.openDB<string, string>({ name: 'rows' });
    const sync = vi.spyOn(synced, 'transactionSync');
    await Promise.all([commit(synced, () => rows.put('spend', '1')), commitSoon(synced, () => rows.put('log', 'entry'))]);
    expect(rows.get('spend')).toBe('1');
    expect(rows.get('log')).toBe('entry');
    expect(sync).not.toHaveBeenCalled();
    await synced.close();
  });
});

describe('Store.close', () => {
  it('commits the background writes still waiting, so a clean shutdown loses none', async () => {
    const storeDir = join(dir, 'store');
    const store = await Store.open(storeDir, 'test');
    const rows = store.root.openDB<string, string>({ name: 'rows' });
    const written = commitSoon(store.root, () => rows.put('last', 'entry'));
    await store.close();
    await written;
    const again = await Store.open(storeDir, 'test');
    expect(again.root.openDB<string, string>({ name: 'rows' }).get('last')).toBe('entry');
    await again.close();
  });
});
