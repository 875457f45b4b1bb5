import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, type Env } from './secret-ref.js';

const PREFIX = 'enc:v1:';

/**
 * Encrypts secrets at rest (AES-256-GCM). The key comes from TOLLGATE_SECRET_KEY, or is generated on first
 * start and kept in the data directory (mode 0600), so a copied LMDB file alone does not reveal keys.
 */
export class SecretBox {
  /**
   * @param mismatch what a stored secret that does not open with this key means, naming the key actually used: the
   * operator who moved a data directory without its secret.key must not be told about a variable they never set.
   */
  private constructor(
    private readonly key: Buffer,
    private readonly mismatch: string,
  ) {}

  static fromEnvOrDataDir(env: Env, dataDir: string): SecretBox {
    const configured = env.TOLLGATE_SECRET_KEY;
    const path = join(dataDir, 'secret.key');
    // Any passphrase works: it is stretched to 32 bytes by hashing.
    if (configured) {
      return new SecretBox(
        createHash('sha256').update(configured).digest(),
        `TOLLGATE_SECRET_KEY is not the key they were stored with (an earlier TOLLGATE_SECRET_KEY, or ${path} if it was unset then); set the one they were stored with`,
      );
    }
    const generated = !existsSync(path);
    if (generated) createKeyFile(path);
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new ConfigError(`${path}: expected a base64-encoded 32-byte key`);
    const restore = `restore the secret.key this data directory was written with, or set TOLLGATE_SECRET_KEY to the passphrase they were stored with`;
    return new SecretBox(
      key,
      generated
        ? `${path} was missing (a new key was generated there), and they were stored with another key; ${restore}`
        : `TOLLGATE_SECRET_KEY is unset and ${path} is not the key they were stored with; ${restore}`,
    );
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${data.toString('base64')}`;
  }

  decrypt(sealed: string): string {
    if (!sealed.startsWith(PREFIX)) return sealed;
    const [iv, tag, data] = sealed.slice(PREFIX.length).split(':');
    if (!iv || !tag || data === undefined) throw new ConfigError('stored secret is malformed');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new ConfigError(`the secrets set through the API and stored in the data directory cannot be decrypted: ${this.mismatch}`);
    }
  }
}

/**
 * Writes a new random key to `path` so that it is either absent or whole and on disk: every secret stored after it
 * is encrypted with it, and LMDB syncs those to disk, so a key lost to a power cut (or half written) would make them
 * all unreadable. Written to a file of its own, synced, then linked into place (a link fails if the name exists, so
 * two processes starting on one data dir at once both end up with the first one's key), and the directory synced.
 */
function createKeyFile(path: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  const file = openSync(temporary, 'w', 0o600);
  try {
    writeSync(file, randomBytes(32).toString('base64'));
    fsyncSync(file);
  } finally {
    closeSync(file);
  }
  try {
    linkSync(temporary, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temporary);
  }
  const directory = openSync(dirname(path), 'r');
  try {
    fsyncSync(directory);
  } finally {
    closeSync(directory);
  }
}

/** Whether a stored value is one `SecretBox.encrypt` sealed. */
export function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** Shows a secret as its last four characters; references (env:, file:) name no secret and are shown whole. */
export function maskSecret(raw: string): string {
  if (raw.startsWith('env:') || raw.startsWith('file:')) return raw;
  return raw.length >= 12 ? `****${raw.slice(-4)}` : '****';
}
