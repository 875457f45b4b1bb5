import type { Database, RootDatabase } from 'lmdb';
import { openRecords } from './records.js';

export interface StoredLayer {
  document: unknown;
  version: number;
  updatedAt: string;
}

/** Persists what was configured through the API (secrets already sealed by the caller) and the version counter. */
export class ConfigRepo {
  private readonly db: Database<StoredLayer, string>;

  constructor(root: RootDatabase) {
    this.db = openRecords<StoredLayer, string>(root, { name: 'config' });
  }

  load(): StoredLayer | undefined {
    return this.db.get('api-layer');
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
    return [...this.db.getRange({ start: 'api-layer.set-aside.', end: 'api-layer.set-aside/' })].map(({ key, value }) => ({ name: key, layer: value }));
  }

  async save(document: unknown, version: number): Promise<void> {
    await this.db.put('api-layer', { document, version, updatedAt: new Date().toISOString() });
  }
}
