import type { Database, RootDatabase } from 'lmdb';
import { openRecords } from './records.js';

interface StoredLayer {
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

  async save(document: unknown, version: number): Promise<void> {
    await this.db.put('api-layer', { document, version, updatedAt: new Date().toISOString() });
  }
}
