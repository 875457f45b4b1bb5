import type { Database, DatabaseOptions, Key, RootDatabase } from 'lmdb';

/**
 * The key under which a database of records keeps its records' shapes (msgpackr's shared structures: the field
 * names of each kind of record, stored once). Without it every record carries its own field names: a request-log
 * entry took 583 bytes instead of 214, writing one cost about half as much again and reading one about three times
 * as much (bench/record-shapes.ts).
 * lmdb-js's iterations start above symbol keys, so no range or count walk ever sees this entry; the database's
 * statistics do (see recordCount). Records written before a database had it (inline shapes) still read.
 *
 * The semantic cache's index-builder worker (index-builder-worker.mjs) opens `cache-entries` with the same key.
 */
export const RECORD_SHAPES_KEY = Symbol.for('structures');

/** Opens a database whose values are records (objects), keeping their shapes once per database. */
export function openRecords<V, K extends Key>(root: RootDatabase, options: DatabaseOptions & { name: string }): Database<V, K> {
  return root.openDB<V, K>({ ...options, sharedStructuresKey: RECORD_SHAPES_KEY });
}

/** How many records a database holds, from its statistics (no walk over the keys), not counting its shapes entry. */
export function recordCount(db: Database<unknown, Key>): number {
  const { entryCount } = db.getStats() as { entryCount: number };
  return db.doesExist(RECORD_SHAPES_KEY) ? entryCount - 1 : entryCount;
}

/** The bytes of the pages a database holds (branch, leaf and overflow pages), from its statistics. */
export function pageBytes(db: Database<unknown, Key>): number {
  const stats = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
  return (stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages) * stats.pageSize;
}
