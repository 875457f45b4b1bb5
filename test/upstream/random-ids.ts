// Random identifiers for ids that only need to be unique-looking, not secret. Bytes come from one pooled
// randomBytes call because a crypto call per id showed up in benchmark profiles.
import { randomBytes } from 'node:crypto';

const POOL_SIZE = 8192;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

function takeBytes(count: number): Buffer {
  if (offset + count > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + count);
  offset += count;
  return bytes;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` characters from [A-Za-z0-9]. */
export function randomAlphanumeric(length: number): string {
  let id = '';
  for (const byte of takeBytes(length)) id += ALPHANUMERIC[byte % ALPHANUMERIC.length];
  return id;
}

/** `2 * byteCount` lowercase hex characters. */
export function randomHex(byteCount: number): string {
  return takeBytes(byteCount).toString('hex');
}
