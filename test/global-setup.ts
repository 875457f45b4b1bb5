import { readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { SPAWN_MARKER } from './helpers/main-process.js';

/**
 * Marks the run (every process a test spawns inherits the marker, see test/helpers/main-process.ts) and, at the
 * end, fails the run if any marked process is still alive: a test that starts a gateway must also end it. The
 * leftovers are killed so they do not keep ports and data directories.
 */
export default function setup(): () => void {
  const run = randomUUID();
  process.env[SPAWN_MARKER] = run;
  return () => {
    const needle = `${SPAWN_MARKER}=${run}`;
    const left: string[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      let environ: string;
      try {
        environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      } catch {
        continue; // gone meanwhile, or not ours to read
      }
      if (!environ.split('\0').includes(needle)) continue;
      let state = '';
      try {
        state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0] ?? '';
      } catch {
        continue;
      }
      if (state === 'Z') continue; // already dead, waiting for its parent to reap it
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      // Vitest's own workers inherit the marker from this process; they are not test leftovers.
      if (command.includes('vitest')) continue;
      left.push(`${entry}: ${command}`);
      try {
        process.kill(Number(entry), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (left.length === 0) return;
    // Vitest reports an error thrown here but still exits 0; the exit code is what CI reads.
    process.exitCode = 1;
    throw new Error(`processes started by tests outlived the suite (killed now):\n${left.join('\n')}`);
  };
}
