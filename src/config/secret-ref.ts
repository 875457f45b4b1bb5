import { readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULTS } from './defaults.js';
import { isRecord } from '../core/is-record.js';

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Whether a configured value is a reference (`env:NAME`, `file:/path`) rather than the secret itself. */
export function isSecretReference(value: string): boolean {
  return value.startsWith('env:') || value.startsWith('file:');
}

/** Where a secret may come from: references are the operator's (file, environment), never an API caller's. */
export interface SecretOrigin {
  /** False for values set through the management API: `env:` and `file:` are refused there. */
  referencesAllowed: boolean;
  /** The data directory; its `secret.key` (which decrypts every stored key) is never read as a secret. */
  dataDir: string;
  /**
   * Free text rather than a credential (a plugin's options, where `${name}` may be a template the plugin fills in):
   * a `${NAME}` value is taken as written. Elsewhere it is refused (see unexpandedPlaceholder).
   */
  placeholdersAllowed?: boolean;
}

/**
 * The variable a compose or shell placeholder names (`${NAME}`, the whole value), or null. Nothing expands one in a
 * config file or an API body, so such a value would be sent as the credential itself: a header refused upstream, a
 * webhook signed with the wrong secret, an Entra client secret refused at each token fetch, a /metrics token no
 * scraper has.
 */
export function unexpandedPlaceholder(value: string): string | null {
  return /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value.trim())?.[1] ?? null;
}

/** The message for a reference that arrived through the API; names the field, never the value. */
export function referenceRefusedMessage(where: string): string {
  return `${where}: env: and file: references are accepted only in the config file and the environment, not through the API; send the key itself`;
}

function realpathOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** Whether `path` is (by real path, so links do not get around it) the data directory's `secret.key`. */
export function isDataDirSecretKey(path: string, dataDir: string): boolean {
  return realpathOrResolved(path) === realpathOrResolved(join(dataDir, 'secret.key'));
}

/**
 * Resolves a secret value that may be a reference: `env:NAME` reads an environment variable, `file:/path`
 * reads a file (trimmed, as mounted secrets usually end in a newline; an empty one is refused, as an unset variable
 * is). Anything else is the literal value.
 * References are honoured only where `origin` allows them, and a reference to the data directory's
 * `secret.key` (by real path, so links do not get around it) is refused everywhere.
 * Runs once per config version, never per request.
 */
export function resolveSecret(
  value: string,
  env: Env,
  where: string,
  origin: SecretOrigin = { referencesAllowed: true, dataDir: DEFAULTS.dataDir },
): string {
  if (isSecretReference(value) && !origin.referencesAllowed) throw new ConfigError(referenceRefusedMessage(where));
  const placeholder = origin.placeholdersAllowed ? null : unexpandedPlaceholder(value);
  if (placeholder !== null) {
    const instead = origin.referencesAllowed ? `write env:${placeholder} to read the variable` : 'send the value itself';
    throw new ConfigError(`${where}: \${${placeholder}} is not expanded (tollgate does not read shell-style variables); ${instead}`);
  }
  if (value.startsWith('env:')) {
    const name = value.slice(4);
    const resolved = env[name];
    if (resolved === undefined || resolved === '') throw new ConfigError(`${where}: environment variable ${name} is not set`);
    return resolved;
  }
  if (value.startsWith('file:')) {
    const path = value.slice(5);
    if (isDataDirSecretKey(path, origin.dataDir)) {
      throw new ConfigError(`${where}: ${path} is tollgate's own secret.key, which is never used as a provider key`);
    }
    let text: string;
    try {
      text = readFileSync(path, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`${where}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    // As an unset variable is: an empty secret is never meant. A file caught between a writer's truncation and its
    // write (a rotation that is not atomic) is refused, so a running config keeps the secret it has.
    if (text === '') throw new ConfigError(`${where}: ${path} is empty`);
    return text;
  }
  return value;
}

/** The paths the `file:` references of a config document read, wherever in it they sit (keys, tokens, channel secrets). */
export function referencedFiles(document: unknown): string[] {
  const paths = new Set<string>();
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      if (value.startsWith('file:') && value.length > 5) paths.add(value.slice(5));
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (isRecord(value)) Object.values(value).forEach(walk);
  };
  walk(document);
  return [...paths];
}
