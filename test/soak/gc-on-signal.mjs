// Injected into the gateway process by the soak (`node --import`): SIGUSR2 runs a full garbage collection, so the
// soak can read what memory is retained at idle before and after the load, free of the heap's saw-tooth.
// Only ever sent at idle; the gateway's own code is unchanged.
import process from 'node:process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
process.on('SIGUSR2', () => gc());
