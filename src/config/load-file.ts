import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { DEFAULTS } from './defaults.js';
import { configFileSchema, describeIssues, type ConfigFile } from './schema.js';
import { ConfigError, type Env } from './secret-ref.js';

export interface LoadedFile {
  /** The file read, or null when there is none (yet). */
  path: string | null;
  /** Where the config file is or would be; watched so that creating it later applies it too. */
  watchPath: string;
  config: ConfigFile;
}

/** Why a config file could not be read, in words (the errno alone for the rest). */
const READ_PROBLEMS: Record<string, string> = {
  EISDIR: 'it is a directory, not a file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
};

/**
 * Reads a config file's text; a file that exists but cannot be read (a directory, no permission) is a ConfigError
 * naming it, so the start and `check-config` say so in one line instead of a stack trace.
 */
export function readConfigText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`${path}: cannot read the config file: ${(code !== undefined && READ_PROBLEMS[code]) || (err as Error).message}`);
  }
}

/** Parses config text into a document, not yet validated (YAML is a superset of JSON, so one parser reads both). */
export function parseConfigSyntax(text: string, where: string): unknown {
  try {
    return parseYaml(text) ?? {};
  } catch (err) {
    // The parser's message goes on to quote the offending line, which may hold a key: keep its first line (line and column).
    const first = ((err as Error).message.split('\n', 1)[0] ?? '').replace(/:\s*$/, '');
    throw new ConfigError(`${where}: not valid YAML/JSON: ${first}`);
  }
}

/** Parses and validates config text. */
export function parseConfigText(text: string, where: string): ConfigFile {
  return parseConfigDocument(parseConfigSyntax(text, where), where);
}

/** Validates a config document, applying the schema's defaults. */
export function parseConfigDocument(raw: unknown, where: string): ConfigFile {
  const result = configFileSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(`${where}: ${describeIssues(result.error, configFileSchema)}`);
  return result.data;
}

/**
 * Finds the config file: `TOLLGATE_CONFIG` names one explicitly (and then it must exist); otherwise
 * `tollgate.config.yaml` in the working directory is used when present. No file is a valid, empty config.
 * `namedBy` is what an error calls the explicit name: `--config` when the command line gave it.
 */
export function loadConfigFile(env: Env, cwd = process.cwd(), namedBy = 'TOLLGATE_CONFIG'): LoadedFile {
  const explicit = env.TOLLGATE_CONFIG;
  const path = resolve(cwd, explicit || DEFAULTS.configFile);
  if (!existsSync(path)) {
    if (explicit) throw new ConfigError(`${namedBy}: file not found: ${path}`);
    return { path: null, watchPath: path, config: {} };
  }
  return { path, watchPath: path, config: parseConfigText(readConfigText(path), path) };
}
