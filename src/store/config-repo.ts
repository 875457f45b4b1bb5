import type { Database, RootDatabase } from 'lmdb';
import { openRecords } from './records.js';

export interface StoredLayer {
  document: unknown;
  version: number;
  updatedAt: string;
}

/** The last config version given out, whatever the change (the API, a save of the file, a start). */
interface VersionMark {
  version: number;
}

/** Persists what was configured through the API (secrets already sealed by the caller) and the version counter. */
export class ConfigRepo {
  private readonly db: Database<StoredLayer | VersionMark, string>;

  constructor(root: RootDatabase) {
    this.db = openRecords<StoredLayer | VersionMark, string>(root, { name: 'config' });
  }

  load(): StoredLayer | undefined {
    return this.db.get('api-layer') as StoredLayer | undefined;
  }

  /**
   * The highest version given out so far (0 when none was): a config applied from the file is versioned without
   * saving the API layer, so the layer's own version can be behind it.
   */
  lastVersion(): number {
    const mark = this.db.get('version');
    return Math.max(mark?.version ?? 0, this.load()?.version ?? 0);
  }

  /**
   * Keeps `version` as the last given out, so the next start counts on from it: otherwise versions given to file
   * saves were given again after a restart, and an ETag read before it could match a different config (If-Match
   * then let a stale write through) while the audit log held two different changes under one version.
   * Written at once: the start that gives a version is not async.
   */
  keepVersion(version: number): void {
    this.db.putSync('version', { version });
  }

  /**
   * Keeps a stored layer the gateway could not take whole under a name of its own (`api-layer.set-aside.<version>`),
   * before anything can save over it; returns that name. Written at once: the start is not async here.
   */
  setAside(layer: StoredLayer): string {
    const name = `api-layer.set-aside.${layer.version}`;
    this.db.putSync(name, layer);
    return name;
  }

  /** The layers set aside (see setAside), by name. */
  setAsideLayers(): Array<{ name: string; layer: StoredLayer }> {
    return [...this.db.getRange({ start: 'api-layer.set-aside.', end: 'api-layer.set-aside/' })].map(({ key, value }) => ({ name: key, layer: value as StoredLayer }));
  }

  async save(document: unknown, version: number): Promise<void> {
    await this.db.put('api-layer', { document, version, updatedAt: new Date().toISOString() });
  }
}
