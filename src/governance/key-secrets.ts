import { hash, randomBytes } from 'node:crypto';
import { VIRTUAL_KEY_PREFIX } from './types.js';

/** How many leading characters of a secret the record keeps, to recognise a key in lists (`tg-` + 7). */
export const KEY_PREFIX_LENGTH = 10;

/** A new virtual key secret: `tg-` and 43 url-safe base64 characters (32 random bytes). */
export function newKeySecret(): string {
  return `${VIRTUAL_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** sha256 (hex) of a secret: all the store ever keeps of it. */
export function hashSecret(secret: string): string {
  // One-shot `hash` (strings are hashed as UTF-8): every keyed request hashes the secret it presents.
  return hash('sha256', secret, 'hex');
}

export function secretPrefix(secret: string): string {
  return secret.slice(0, KEY_PREFIX_LENGTH);
}

export function newKeyId(): string {
  return `vk_${randomBytes(8).toString('hex')}`;
}

export function newTeamId(): string {
  return `team_${randomBytes(8).toString('hex')}`;
}
