import { checkConfigFile } from './check-config.js';
import { HELP, parseCommand, UsageError, type Command } from './args.js';
import { writeStarterConfig } from './init.js';
import { describeStartFailure, serve } from './serve.js';
import { VERSION } from '../version.js';

/** The environment the gateway reads, with the command line's flags applied over their variables. */
function envWithFlags(command: Extract<Command, { kind: 'serve' }>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (command.config !== undefined) env.TOLLGATE_CONFIG = command.config;
  if (command.port !== undefined) env.PORT = command.port;
  if (command.host !== undefined) env.HOST = command.host;
  return env;
}

/** Ends the process with `code` once stdout and stderr have taken what was written to them. */
async function exitWhenWritten(code: number): Promise<void> {
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise<void>((done) => stream.write('', () => done()))));
  process.exit(code);
}

/**
 * The `tollgate` command (src/cli.ts, src/main.ts, the single binary): runs the gateway, or one of the small
 * commands around it. Sets `process.exitCode` (0 ok, 1 failed, 2 bad usage) rather than exiting, so output drains;
 * a started gateway keeps the process alive until it is stopped.
 */
export async function runCli(argv: readonly string[]): Promise<void> {
  let command: Command;
  try {
    command = parseCommand(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tollgate: ${err.message}\nRun 'tollgate --help' for usage.\n`);
    process.exitCode = 2;
    return;
  }
  switch (command.kind) {
    case 'help':
      process.stdout.write(HELP);
      return;
    case 'version':
      process.stdout.write(`${VERSION}\n`);
      return;
    case 'init': {
      const outcome = writeStarterConfig(command.file, command.force);
      (outcome.ok ? process.stdout : process.stderr).write(`${outcome.message}\n`);
      process.exitCode = outcome.ok ? 0 : 1;
      return;
    }
    case 'check-config': {
      // Failed until the check says otherwise: a process that ends with the check unfinished is no pass.
      process.exitCode = 1;
      const report = await checkConfigFile(command.file, process.env);
      for (const warning of report.warnings) process.stdout.write(`warning: ${warning}\n`);
      if (report.errors.length === 0) process.stdout.write(`OK ${report.file}\n`);
      for (const error of report.errors) process.stderr.write(`error: ${error}\n`);
      // Exits rather than waiting for the event loop to empty: a plugin module the check imported may hold it open
      // (a timer, a pool, a connection), which kept a CI step waiting forever after it printed its verdict.
      await exitWhenWritten(report.errors.length === 0 ? 0 : 1);
      return;
    }
    case 'serve':
      try {
        await serve(envWithFlags(command), {
          config: command.config !== undefined ? '--config' : 'TOLLGATE_CONFIG',
          port: command.port !== undefined ? '--port' : 'PORT',
          host: command.host !== undefined ? '--host' : 'HOST',
        });
      } catch (err) {
        process.stderr.write(`${describeStartFailure(err)}\n`);
        process.exit(1);
      }
  }
}
