import { readFileSync } from 'node:fs';

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Resolves a secret value that may be a reference: `env:NAME` reads an environment variable, `file:/path`
 * reads a file (trimmed, as mounted secrets usually end in a newline). Anything else is the literal value.
 * Runs once per config version, never per request.
 */
export function resolveSecret(value: string, env: Env, where: string): string {
  if (value.startsWith('env:')) {
    const name = value.slice(4);
    const resolved = env[name];
    if (resolved === undefined || resolved === '') throw new ConfigError(`${where}: environment variable ${name} is not set`);
    return resolved;
  }
  if (value.startsWith('file:')) {
    const path = value.slice(5);
    try {
      return readFileSync(path, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`${where}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  return value;
}
