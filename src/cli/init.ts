import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { STARTER_CONFIG } from './starter-config.js';

/**
 * `tollgate init [file]`: writes the starter config. An existing file is never replaced (it may be someone's
 * working config) unless `--force` says so; the file is created exclusively, so a race cannot clobber one either.
 */
export function writeStarterConfig(file: string, force: boolean): { ok: boolean; message: string } {
  const path = resolve(file);
  if (!force && existsSync(path)) return { ok: false, message: `tollgate: ${path} already exists; not overwriting it (use --force to replace it)` };
  try {
    writeFileSync(path, STARTER_CONFIG, { flag: force ? 'w' : 'wx' });
  } catch (err) {
    return { ok: false, message: `tollgate: cannot write ${path}: ${(err as Error).message}` };
  }
  return { ok: true, message: `wrote ${path}\nstart the gateway with it: tollgate --config ${file}` };
}
