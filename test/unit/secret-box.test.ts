import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/config/secret-box.js';

const dirs: string[] = [];
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-secret-box-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the data directory key', () => {
  it('is generated once, whole, readable by its owner only, with no temporary file left beside it', () => {
    const dir = dataDir();
    const first = SecretBox.fromEnvOrDataDir({}, dir);
    expect(readdirSync(dir)).toEqual(['secret.key']);
    const path = join(dir, 'secret.key');
    expect(Buffer.from(readFileSync(path, 'utf8'), 'base64')).toHaveLength(32);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // A second start reads the same key: what the first sealed, the second opens.
    const sealed = first.encrypt('sk-live-1234');
    expect(SecretBox.fromEnvOrDataDir({}, dir).decrypt(sealed)).toBe('sk-live-1234');
  });

  it('is not replaced when another process wrote it first, and a stale temporary file of a crashed start does not matter', () => {
    const dir = dataDir();
    writeFileSync(join(dir, `secret.key.${process.pid}.tmp`), 'half');
    const sealed = SecretBox.fromEnvOrDataDir({}, dir).encrypt('sk-x');
    expect(readdirSync(dir)).toEqual(['secret.key']);
    expect(SecretBox.fromEnvOrDataDir({}, dir).decrypt(sealed)).toBe('sk-x');
  });
});
