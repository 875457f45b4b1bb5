/**
 * Runs the gateway from the TypeScript sources (`node --import tsx src/main.ts`, as the tests do); the same command
 * line as the compiled `tollgate` (src/cli.ts), flags included. See src/cli/serve.ts for start-up and shutdown.
 */
import { runCli } from './cli/run.js';

// No top-level await: the single binary bundles this file as CommonJS (scripts/build-binary.ts), which has none.
runCli(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`tollgate: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
