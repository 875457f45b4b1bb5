/**
 * Credentials a stdio MCP server is given on its command line. Servers take them there as often as in their
 * environment: the reference Postgres server its database URL (`server-postgres postgresql://user:password@host/db`),
 * others `--api-key <value>` or `--token=<value>`. They are kept out of what tollgate shows of a server (`last_error`
 * on the unauthenticated `/health`, the config `/api/config` and `/api/mcp` show, the audit log, logs) as its `env`
 * values are.
 */

/** An argument that is a URL (`postgresql://...`, `https://...`). */
const URL_ARG = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
/** A flag whose value is a credential: `--api-key`, `--token`, `--db-password`, `-auth`. */
const SECRET_FLAG = /^--?[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|auth|credential)[A-Za-z0-9_.-]*$/i;
const MASK = '****';

/**
 * One argument read for credentials: `prefix` (a flag's `--name=`) then `value`, which is a credential whole
 * (`secret`: a credential flag's value, given after it or after `=`) or may be a URL carrying some.
 */
function readArg(args: readonly string[], i: number): { prefix: string; value: string; secret: boolean } {
  const arg = args[i] ?? '';
  const previous = i > 0 ? args[i - 1] : undefined;
  if (previous !== undefined && SECRET_FLAG.test(previous) && !arg.startsWith('-')) return { prefix: '', value: arg, secret: true };
  const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
  if (eq > 0) return { prefix: arg.slice(0, eq + 1), value: arg.slice(eq + 1), secret: SECRET_FLAG.test(arg.slice(0, eq)) };
  return { prefix: '', value: arg, secret: false };
}

function parseUrl(text: string): URL | null {
  if (!URL_ARG.test(text)) return null;
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** A percent-encoded URL part decoded (a malformed escape: as written). */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** Every credential in the arguments (a URL's user, password and query values, as written and decoded). */
export function argSecrets(args: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const { value, secret } = readArg(args, i);
    if (secret) values.push(value);
    const url = secret ? null : parseUrl(value);
    if (!url) continue;
    values.push(url.username, url.password, decoded(url.username), decoded(url.password), ...url.searchParams.values());
  }
  return [...new Set(values.filter((value) => value !== ''))];
}

/**
 * The arguments as the API shows them (see maskDocument): a credential flag's value `****`, a URL argument as
 * `maskUrl` writes it (its user, password and query values masked).
 */
export function maskArgs(args: readonly string[], maskUrl: (url: string) => string): string[] {
  return args.map((arg, i) => {
    const { prefix, value, secret } = readArg(args, i);
    if (secret) return `${prefix}${MASK}`;
    const url = parseUrl(value);
    if (!url || (url.username === '' && url.password === '' && url.search === '')) return arg;
    return `${prefix}${maskUrl(value)}`;
  });
}
