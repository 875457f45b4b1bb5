import { parseArgs } from 'node:util';
import { didYouMean } from '../core/did-you-mean.js';

/** What the command line asked for, parsed and checked; nothing has run yet. */
export type Command =
  | { kind: 'serve'; config: string | undefined; port: string | undefined; host: string | undefined }
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'init'; file: string; force: boolean }
  | { kind: 'check-config'; file: string };

/** A command line that cannot run, said in one line; the caller adds the usage hint and exits 2. */
export class UsageError extends Error {}

export const HELP = `Usage: tollgate [options]               run the gateway
       tollgate init [file] [--force]  write a commented starter config (default: tollgate.config.yaml;
                                       --force overwrites one that exists)
       tollgate check-config <file>    validate a config file as the gateway does at start

Options:
  -c, --config <file>  the config file (YAML or JSON; default: tollgate.config.yaml in the working
                       directory when present); same as TOLLGATE_CONFIG
  -p, --port <n>       the port to listen on (default 8080); same as PORT
      --host <addr>    the address to listen on (default 0.0.0.0); same as HOST
  -h, --help           show this help
  -v, --version        print the version

A flag wins over its environment variable, which wins over the config file. Provider keys come from the
config file or the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...). Docs: README.md.
`;

const SUBCOMMANDS = ['init', 'check-config'];

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  port: { type: 'string', short: 'p' },
  host: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  force: { type: 'boolean' },
} as const;

/** A port as the gateway takes it (PORT's rule): a whole number from 1 to 65535. */
function checkPort(raw: string): string {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) throw new UsageError(`--port must be a whole number from 1 to 65535, got '${raw}'`);
  return raw;
}

/** Parses `argv` (without node and the script): a subcommand, or flags for running the gateway. */
export function parseCommand(argv: readonly string[]): Command {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    const unknown = /^Unknown option '(--?[^'=]+)/.exec((err as Error).message)?.[1];
    if (unknown === undefined) throw new UsageError((err as Error).message);
    const meant = unknown.startsWith('--') ? didYouMean(unknown.slice(2), Object.keys(OPTIONS)) : null;
    throw new UsageError(`unknown option '${unknown}'${meant ? `; did you mean '--${meant}'?` : ''}`);
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  // An empty value (`--config "$CONFIG"` with the variable unset) read as no flag at all, so the gateway started
  // on no config file, or on every interface (0.0.0.0) for `--host ""`, instead of on what the operator meant.
  for (const flag of ['config', 'port', 'host'] as const) {
    if (values[flag] === '') throw new UsageError(`--${flag} was given an empty value`);
  }
  const [subcommand, ...rest] = positionals;
  if (subcommand === 'init' || subcommand === 'check-config') {
    // Flags that only running the gateway reads were silently dropped here (`init --port 9000` wrote a config
    // without the port); said instead, like --force without init.
    for (const flag of ['port', 'host'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with running the gateway, not with ${subcommand}`);
    }
  }
  if (subcommand === 'init') {
    if (rest.length > 1) throw new UsageError('init takes at most one file');
    // `init --config my.yaml` wrote tollgate.config.yaml: the file named either way is the one written.
    return { kind: 'init', file: oneFile('init', rest[0], values.config) ?? 'tollgate.config.yaml', force: values.force ?? false };
  }
  if (subcommand === 'check-config') {
    if (values.force) throw new UsageError('--force goes with init');
    const file = oneFile('check-config', rest[0], values.config);
    if (file === undefined || rest.length > 1) throw new UsageError('check-config takes one file: tollgate check-config <file>');
    return { kind: 'check-config', file };
  }
  if (subcommand !== undefined) {
    const meant = didYouMean(subcommand, SUBCOMMANDS);
    throw new UsageError(`unknown command '${subcommand}'${meant ? `; did you mean '${meant}'?` : ''}`);
  }
  if (values.force) throw new UsageError('--force goes with init');
  return { kind: 'serve', config: values.config, port: values.port === undefined ? undefined : checkPort(values.port), host: values.host };
}

/** The file a subcommand takes, as its argument or as --config; two different files are refused, not one of them picked. */
function oneFile(subcommand: string, positional: string | undefined, flag: string | undefined): string | undefined {
  if (positional !== undefined && flag !== undefined && positional !== flag) {
    throw new UsageError(`${subcommand} takes one file, but was given '${positional}' and --config '${flag}'`);
  }
  if (positional === '') throw new UsageError(`${subcommand} was given an empty file name`);
  return positional ?? flag;
}
