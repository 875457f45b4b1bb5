import type { ProviderRuntime, RuntimeConfig } from '../../core/config.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { isRecord } from '../../core/is-record.js';
import { didYouMean } from '../../core/did-you-mean.js';
import { MCP_TOOL_SEPARATOR } from '../../core/mcp.js';
import { mcpPolicySchema } from '../../config/schema.js';
import { keyPatchSchema } from '../../governance/governance-schemas.js';
import { lookupBareModel } from '../../routing/bare-model.js';
import { modelAllowed } from '../../routing/model-patterns.js';
import { isRouteName } from '../../routing/route-patterns.js';
import { mcpServerChoices } from './mcp-server-names.js';

/**
 * A key's `models` and a key's or team's `mcp.allow`, checked against the running config when written (as
 * `mcp.servers`, `plugins` and `model_rate_limits` are): an entry that can match nothing the config can serve was
 * a list that silently refused every call (403), so it is a 400 naming it instead. Only what the config decides is
 * checked; what is open stays open (a configured provider takes model names its catalogue does not list, an MCP
 * server's tools change while it runs). A config change that later leaves an entry matching nothing leaves stored
 * lists as they are: such an entry matches nothing, and requests are refused as for any name outside the list.
 */

/** How many route or provider names a message lists before `...`. */
const LISTED_NAMES = 20;

function listed(names: readonly string[]): string {
  return names.length > LISTED_NAMES ? `${names.slice(0, LISTED_NAMES).join(', ')}, ...` : names.join(', ');
}

/** The model parts a provider can serve, or null when any model name reaches it (see resolveCandidates). */
function servedModels(provider: ProviderRuntime): readonly string[] | null {
  // Without keys a request goes with the client's key or none, for any model; a key without a list serves every model.
  if (provider.keys.length === 0 || provider.keys.some((key) => key.models === null)) return null;
  // Disabled keys count: a key out of rotation is put back by a config change, and its models are the provider's again.
  return [...new Set(provider.keys.flatMap((key) => key.models ?? []))];
}

/** A `*` of a pattern, and one character of any kind (a model name is never empty). */
const STAR = 0;
const ANY = 1;
type GlobToken = string | typeof STAR | typeof ANY;

function globOf(pattern: string): GlobToken[] {
  return Array.from(pattern, (char) => (char === '*' ? STAR : char));
}

/** Past this many states the overlap is not worked out and taken as possible (only very long patterns get there). */
const MAX_OVERLAP_STATES = 2_000_000;

/** Whether some name matches both globs (`*`: any text, ANY: one character): a walk of the two patterns side by side. */
function globsOverlap(a: readonly GlobToken[], b: readonly GlobToken[]): boolean {
  const width = b.length + 1;
  if ((a.length + 1) * width > MAX_OVERLAP_STATES) return true;
  const seen = new Uint8Array((a.length + 1) * width);
  const stack: number[] = [0];
  const push = (i: number, j: number): void => {
    const state = i * width + j;
    if (seen[state] === 0) {
      seen[state] = 1;
      stack.push(state);
    }
  };
  seen[0] = 1;
  while (stack.length > 0) {
    const state = stack.pop() as number;
    const i = Math.floor(state / width);
    const j = state % width;
    if (i === a.length && j === b.length) return true;
    const x = a[i];
    const y = b[j];
    // A `*` may stand for nothing.
    if (x === STAR) push(i + 1, j);
    if (y === STAR) push(i, j + 1);
    if (x === undefined || y === undefined || (x === STAR && y === STAR)) continue;
    // One character both take: a literal matches itself, a `*` or ANY any character.
    if (typeof x === 'string' && typeof y === 'string' && x !== y) continue;
    push(x === STAR ? i : i + 1, y === STAR ? j : j + 1);
  }
  return false;
}

/** Whether a `*` pattern can match a name the config can serve: a route's, or a provider's model. */
function patternMatchesSomething(config: RuntimeConfig, pattern: string): boolean {
  const glob = globOf(pattern);
  // A route pattern (`fast-*`) serves every name it matches, and a key's list is read against the name requested.
  for (const route of config.routes.keys()) if (route.includes('*') ? globsOverlap(glob, globOf(route)) : modelAllowed([pattern], route)) return true;
  for (const provider of config.providers.values()) {
    const models = servedModels(provider);
    if (models === null ? globsOverlap(glob, [...Array.from(provider.name), '/', ANY, STAR]) : models.some((model) => modelAllowed([pattern], `${provider.name}/${model}`))) {
      return true;
    }
  }
  return false;
}

function unknownProvider(config: RuntimeConfig, entry: string, provider: string): string {
  const known = [...config.providers.keys()];
  const near = didYouMean(provider, known);
  const hint = near === null ? '' : ` (did you mean '${quoteInput(near + entry.slice(provider.length))}'?)`;
  return `'${quoteInput(entry)}' names no route and no provider '${quoteInput(provider)}'${hint}; known providers: ${listed(known)}`;
}

function notServed(entry: string, provider: ProviderRuntime, model: string, models: readonly string[]): string {
  const near = model.includes('*') ? null : didYouMean(model, models);
  const hint = near === null ? '' : ` (did you mean '${quoteInput(`${provider.name}/${near}`)}'?)`;
  return `'${quoteInput(entry)}' ${model.includes('*') ? 'matches no model' : 'is no model'} provider '${provider.name}' serves${hint}: its keys serve only ${listed(models)}`;
}

function noRoute(config: RuntimeConfig, entry: string): string {
  const routes = [...config.routes.keys()];
  const near = didYouMean(entry, routes);
  const hint = near === null ? '' : ` (did you mean '${quoteInput(near)}'?)`;
  const known = routes.length > 0 ? `routes: ${listed(routes)}` : 'the config has no routes';
  return `'${quoteInput(entry)}' is no route${hint} and no '<provider>/<model>' name (${known})`;
}

/** Why a `models` entry can match nothing the config can serve, or null when it can match something. */
function unmatchedModelEntry(config: RuntimeConfig, entry: string): string | null {
  if (entry.includes('*')) {
    if (patternMatchesSomething(config, entry)) return null;
    // Say what is wrong with the part before the first `*` when it names a provider: the usual typo.
    const head = entry.slice(0, entry.indexOf('*'));
    const slash = head.indexOf('/');
    if (slash > 0) {
      const provider = config.providers.get(head.slice(0, slash));
      if (!provider) return unknownProvider(config, entry, head.slice(0, slash));
      const models = servedModels(provider);
      if (models !== null) return notServed(entry, provider, entry.slice(slash + 1), models);
    }
    return `'${quoteInput(entry)}' matches no route and no '<provider>/<model>' of a known provider`;
  }
  // A route's name, or a name one of its `*` patterns serves: matched as the client writes it.
  if (isRouteName(config.routes, entry)) return null;
  const slash = entry.indexOf('/');
  const provider = slash > 0 ? config.providers.get(entry.slice(0, slash)) : undefined;
  const model = entry.slice(slash + 1);
  if (provider && model !== '') {
    const models = servedModels(provider);
    return models === null || models.includes(model) ? null : notServed(entry, provider, model, models);
  }
  // A bare name: a request's bare model name is resolved before the key's list is read (to '<provider>/<model>'), so
  // only a route of that name could match it.
  const found = lookupBareModel(config, entry);
  const bare = `'${quoteInput(entry)}' is no route, and a key's list is read against the '<provider>/<model>' a request's bare name resolves to`;
  if (found.kind === 'one') return `${bare}: list '${quoteInput(found.name)}'`;
  if (found.kind === 'several') return `${bare}: list the one meant (${listed(found.names)})`;
  if (slash > 0 && model !== '') return unknownProvider(config, entry, entry.slice(0, slash));
  return noRoute(config, entry);
}

/** An entry the schema refuses gets the schema's own message: these checks look only at well-formed entries. */
const modelEntrySyntax = keyPatchSchema.shape.models;
const allowEntrySyntax = mcpPolicySchema.shape.allow;

/**
 * A key's `models` as written to the management API: every entry must be able to match something the running config
 * can serve, as a request's model is matched at auth (governance/key-models.ts): a route's name (or a name one of its
 * `*` patterns serves), or a `<provider>/<model>` of a known provider (any model of a provider that takes any; one
 * its keys list when all of them list models); a `*` pattern must match one of those. (A routing rule's `route_to`
 * is always one of these: the config refuses any other.)
 */
export function checkModelAllowList(body: unknown, config: RuntimeConfig): void {
  if (!isRecord(body) || !Array.isArray(body.models)) return;
  body.models.forEach((entry: unknown, index) => {
    if (typeof entry !== 'string' || !modelEntrySyntax.safeParse([entry]).success) return;
    const problem = unmatchedModelEntry(config, entry);
    if (problem !== null) throw gatewayError('invalid_value', `Invalid 'models.${index}': ${problem}.`, { param: `models.${index}` });
  });
}

/**
 * A key's or team's `mcp.allow` as written: each entry (`server`, `server__tool`, `server__*`) must name a configured
 * MCP server (disabled ones included), as `mcp.servers` must; an entry of another server matched no tool. A tool's
 * name is not checked: a server's tools are what it offers while it runs, and one that is down offers none. An empty
 * list is how a key or team is allowed no tool.
 */
export function checkMcpAllowNames(body: unknown, config: RuntimeConfig): void {
  if (!isRecord(body) || !isRecord(body.mcp) || !Array.isArray(body.mcp.allow)) return;
  const configured = config.mcp.servers;
  body.mcp.allow.forEach((entry: unknown, index) => {
    if (typeof entry !== 'string' || !allowEntrySyntax.safeParse([entry]).success) return;
    const separator = entry.indexOf(MCP_TOOL_SEPARATOR);
    const server = separator > 0 ? entry.slice(0, separator) : entry;
    if (configured.has(server)) return;
    const near = didYouMean(server, configured.keys());
    const hint = near === null ? '' : ` (did you mean '${near + entry.slice(server.length)}'?)`;
    const what = separator > 0 ? `names the MCP server '${server}', which is not configured` : 'is not a configured MCP server';
    throw gatewayError(
      'invalid_value',
      `Invalid 'mcp.allow.${index}': '${quoteInput(entry)}' ${what}${hint}; ${mcpServerChoices(configured)}. An empty list ("allow": []) allows no tool.`,
      { param: `mcp.allow.${index}` },
    );
  });
}
