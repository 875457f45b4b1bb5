#!/usr/bin/env node
/**
 * The `tollgate` command: `package.json` "bin" points at its compiled form, dist/cli.js, and the single binary runs
 * it too. `tollgate --help` lists what it does.
 */
import { runCli } from './cli/run.js';

// No top-level await: the single binary bundles this file as CommonJS (scripts/build-binary.ts), which has none.
runCli(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`tollgate: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
