// Injected into a gateway process by a test (`node --import`): holds the cache's semantic index load (its first read,
// the index file's sidecar) until the file named by TOLLGATE_TEST_RELEASE_INDEX exists, so a test can observe the
// gateway while the load is in progress, for as long as it needs, instead of racing a fast load.
import { existsSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

const release = process.env.TOLLGATE_TEST_RELEASE_INDEX;
const readFile = fsPromises.readFile;
fsPromises.readFile = async function heldReadFile(path, ...rest) {
  if (release && String(path).endsWith('.hnsw.meta.json')) {
    while (!existsSync(release)) await sleep(20);
  }
  return readFile.call(this, path, ...rest);
};
// ES modules that imported `readFile` by name see the replacement too.
syncBuiltinESMExports();
