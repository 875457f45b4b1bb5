import type { GatewayError } from '../core/errors.js';
import { isSensitiveHeader, maskDocument, maskUrl, maskWebhookUrl } from './present.js';
import type { ConfigDocument, ProviderConfig } from './schema.js';
import { maskSecret } from './secret-box.js';
import { isSecretReference } from './secret-ref.js';
import { NO_PLUGIN_SECRETS, restoreMaskedPluginEntries, type PluginSecrets } from './plugin-secrets.js';
import { gatewayError } from '../core/errors.js';
import { authClientSecret } from './entra-auth.js';

const MASKED = /^\*{4}/;
/** A base URL whose userinfo was masked by `maskUrl`. */
const MASKED_USERINFO = /^[a-z]+:\/\/\*{4}@/i;
/** A URL with a query value masked by `maskWebhookUrl` or `maskUrl`. */
const MASKED_QUERY = /^[a-z]+:\/\/[^?#]*\?(?:[^#]*&)?[^=&#]+=\*{4}(?:[&#]|$)/i;

/**
 * A value shown masked that stands for an `env:`/`file:` reference of the config file, sent back in a section the API
 * replaces the file's with as a whole (the collector's headers, the MCP servers): the API cannot hold the reference,
 * and saying so beats refusing a masked value, or a reference, the caller never chose.
 */
export function referenceHeldByFile(where: string): GatewayError {
  return gatewayError(
    'conflict',
    `${where} is read from an env:/file: reference in the config file, which the API cannot hold, and what the API sets here replaces the file's as a whole. Change it in the file, or send the value itself.`,
    { param: where },
  );
}

function maskedValueError(where: string): GatewayError {
  return gatewayError('masked_secret', `${where} is a masked secret that matches no stored value; send the real value (or, for a key, its id and the masked value as read).`, { param: where });
}

/**
 * A key value as a client sends it: the stored value when it is that value's masked form (`****abcd`, as read), the
 * value itself when it is not masked; a masked value that stands for nothing (or for no stored key: a new key) is
 * refused rather than stored as if it were the key.
 */
export function restoredKeyValue(value: string, stored: string | undefined, where: string): string {
  if (!MASKED.test(value)) return value;
  if (stored === undefined || maskSecret(stored) !== value) throw maskedValueError(where);
  return stored;
}

/**
 * The stored base URL a masked one read from the API stands for. The view shows the URL requests go to, which may
 * be the stored one with the vendor's version path completed (`http://****@host` read as `http://****@host/v1`):
 * that extension is kept on the stored URL's own credentials.
 */
function unmaskedBaseUrl(masked: string, stored: string): string | null {
  const storedMasked = maskUrl(stored);
  if (storedMasked === masked) return stored;
  const prefix = storedMasked.replace(/\/+$/, '');
  if (masked.startsWith(`${prefix}/`)) return `${stored.replace(/\/+$/, '')}${masked.slice(prefix.length)}`;
  return null;
}

/**
 * A client that read config from the API and writes it back sends masked secrets (`****abcd`). Each is
 * swapped for the stored value it stands for: keys by id, credential headers by name. A masked value that
 * stands for nothing is refused rather than stored as if it were a key. `lower` is the provider as the config
 * file defines it: what the API shows of it (a credential header, a base URL) may come back too.
 */
export function restoreMaskedProvider(name: string, next: ProviderConfig, previous: ProviderConfig | undefined, lower?: ProviderConfig): ProviderConfig {
  const fallbackBaseUrl = lower?.base_url;
  if (next.api_key && MASKED.test(next.api_key)) throw maskedValueError(`providers.${name}.api_key`);
  const auth = restoredAuth(name, next, previous, lower);
  let baseUrl = next.base_url;
  if (baseUrl !== undefined && (MASKED_USERINFO.test(baseUrl) || MASKED_QUERY.test(baseUrl))) {
    const masked = baseUrl;
    let restored: string | null = null;
    for (const candidate of [previous?.base_url, fallbackBaseUrl]) {
      if (candidate !== undefined) restored ??= unmaskedBaseUrl(masked, candidate);
    }
    if (restored === null) throw maskedValueError(`providers.${name}.base_url`);
    baseUrl = restored;
  }
  const keys = next.keys?.map((key, i) => {
    if (!MASKED.test(key.value)) return key;
    const stored = key.id ? previous?.keys?.find((candidate) => candidate.id === key.id) : undefined;
    if (!stored || maskSecret(stored.value) !== key.value) throw maskedValueError(`providers.${name}.keys.${i}.value`);
    return { ...key, value: stored.value };
  });
  let headers = next.headers;
  if (headers) {
    headers = { ...headers };
    for (const [header, value] of Object.entries(headers)) {
      // The file's reference, shown as it is written: it stays the file's (a change to what it reads is the file's too).
      if (isSecretReference(value) && lower?.headers?.[header] === value) {
        delete headers[header];
        continue;
      }
      if (!isSensitiveHeader(header) || !MASKED.test(value)) continue;
      const stored = previous?.headers?.[header];
      if (stored !== undefined && maskSecret(stored) === value) {
        headers[header] = stored;
        continue;
      }
      // The file's header, shown masked: it stays the file's (a later save of the file changes it), not copied here.
      const fromFile = lower?.headers?.[header];
      if (fromFile === undefined || maskSecret(fromFile) !== value) throw maskedValueError(`providers.${name}.headers.${header}`);
      delete headers[header];
    }
  }
  const { auth: _written, ...rest } = next;
  return { ...rest, ...(auth ? { auth } : {}), ...(baseUrl !== undefined ? { base_url: baseUrl } : {}), ...(keys ? { keys } : {}), ...(headers ? { headers } : {}) };
}

/** Whether two `auth`s name the same identity in the same way, their client secrets aside. */
type EntraAuth = Extract<NonNullable<ProviderConfig['auth']>, { type: 'entra' }>;

function sameIdentity(a: EntraAuth, b: EntraAuth): boolean {
  const rest = (auth: EntraAuth): string => {
    const { client_secret: _secret, ...fields } = auth;
    return JSON.stringify(Object.entries(fields).sort(([x], [y]) => x.localeCompare(y)));
  };
  return rest(a) === rest(b);
}

/** Whether a client secret written back is how `stored` was shown: as written (a reference), or masked. */
function showsSecret(shown: string | undefined, stored: string | undefined): boolean {
  if (shown === stored) return true;
  return shown !== undefined && stored !== undefined && MASKED.test(shown) && !isSecretReference(stored) && maskSecret(stored) === shown;
}

/**
 * `auth` written back as read: its client secret, shown masked, stands for the stored one (the API layer's, else the
 * file's). The file's own `auth` read back unchanged (its reference, its secret masked, its token or certificate
 * file) is left to the file (undefined), as a file's header is: copied into the API layer, which wins over the file,
 * it would outlive the file's next save (a secret rotated there would never be used), and the API takes no paths.
 * Changed, it is the API's, the file's secret copied.
 */
function restoredAuth(name: string, next: ProviderConfig, previous: ProviderConfig | undefined, lower?: ProviderConfig): ProviderConfig['auth'] {
  const auth = next.auth;
  if (!auth || auth.type !== 'entra') return auth;
  const secret = auth.client_secret;
  const own = authClientSecret(previous?.auth);
  if (secret !== undefined && MASKED.test(secret) && own !== undefined && !isSecretReference(own) && maskSecret(own) === secret) return { ...auth, client_secret: own };
  const fromFile = lower?.auth?.type === 'entra' ? lower.auth : undefined;
  if (fromFile && sameIdentity(auth, fromFile) && showsSecret(secret, fromFile.client_secret)) return undefined;
  if (secret === undefined || !MASKED.test(secret)) return auth;
  if (fromFile?.client_secret !== undefined && showsSecret(secret, fromFile.client_secret)) return { ...auth, client_secret: fromFile.client_secret };
  throw maskedValueError(`providers.${name}.auth.client_secret`);
}

/**
 * `lower` is the file layer: a masked base URL read from the effective view may stand for the file's. A plugin's
 * secret options (which `pluginSecrets` names) shown masked stand for the stored entry's of the same name: the API's
 * list, else the file's (the API's list replaces the file's whole, so one read from the file is copied).
 */
export function restoreMaskedDocument(next: ConfigDocument, previous: ConfigDocument, lower?: ConfigDocument, pluginSecrets: PluginSecrets = NO_PLUGIN_SECRETS): ConfigDocument {
  const alerts = next.alerts ? restoreMaskedAlerts(next.alerts, previous.alerts ?? lower?.alerts ?? {}) : undefined;
  const mcp = next.mcp ? restoreMaskedMcp(next.mcp, previous.mcp ?? lower?.mcp ?? {}) : undefined;
  const settings = restoredSettings(next.settings, previous, lower);
  const plugins = next.plugins
    ? restoreMaskedPluginEntries(next.plugins, previous.plugins ?? lower?.plugins ?? [], pluginSecrets, (value) => MASKED.test(value), (where, stored) =>
        typeof stored === 'string' && isSecretReference(stored) ? referenceHeldByFile(where) : maskedValueError(where),
      )
    : undefined;
  next = { ...next, ...(alerts ? { alerts } : {}), ...(mcp ? { mcp } : {}), ...(settings ? { settings } : {}), ...(plugins ? { plugins } : {}) };
  if (!next.providers) return next;
  const providers: NonNullable<ConfigDocument['providers']> = {};
  for (const [name, provider] of Object.entries(next.providers)) {
    providers[name] = restoreMaskedProvider(name, provider, previous.providers?.[name], lower?.providers?.[name]);
  }
  return { ...next, providers };
}

/** Whether `shown` is how a view showed `stored`: the API layer's mask (`****abcd`), or the effective view's `***`. */
function showsStored(shown: string, stored: string): boolean {
  return shown === '***' || maskSecret(stored) === shown;
}

/**
 * The settings' secrets written back as read: the /metrics token and the trace collector's URL and headers, shown
 * masked (`****abcd` in the API layer, `***` in the effective view), stand for the stored ones. A token shown from the
 * file or the environment is left to them (the API's settings apply field by field); the collector's headers are
 * replaced whole by the API's, so one shown from the file is copied.
 */
function restoredSettings(settings: ConfigDocument['settings'], previous: ConfigDocument, lower: ConfigDocument | undefined): ConfigDocument['settings'] {
  if (!settings) return settings;
  let out = settings;
  const endpoint = settings.tracing?.endpoint;
  if (typeof endpoint === 'string' && settings.tracing) out = { ...out, tracing: { ...settings.tracing, endpoint: restoredEndpoint(endpoint, previous, lower) } };
  const token = settings.metrics?.bearer_token;
  if (token !== undefined && (token === '***' || MASKED.test(token))) {
    const { bearer_token: _masked, ...metrics } = out.metrics ?? {};
    const stored = previous.settings?.metrics?.bearer_token;
    const fromFile = lower?.settings?.metrics?.bearer_token;
    if (stored !== undefined && showsStored(token, stored)) out = { ...out, metrics: { ...metrics, bearer_token: stored } };
    // The view's `***` with no token of the API's stands for the one the file or the environment gives.
    else if ((fromFile !== undefined && showsStored(token, fromFile)) || token === '***') {
      const { metrics: _metrics, ...rest } = out;
      out = Object.keys(metrics).length > 0 ? { ...rest, metrics } : rest;
    } else throw maskedValueError('settings.metrics.bearer_token');
  }
  const headers = out.tracing?.headers;
  if (headers && out.tracing) {
    const restored: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value !== '***' && !MASKED.test(value)) {
        restored[name] = value;
        continue;
      }
      const stored = previous.settings?.tracing?.headers?.[name] ?? lower?.settings?.tracing?.headers?.[name];
      if (stored === undefined || !showsStored(value, stored)) throw maskedValueError(`settings.tracing.headers.${name}`);
      // The API's headers replace the file's whole, and the API cannot hold the file's reference.
      if (isSecretReference(stored)) throw referenceHeldByFile(`settings.tracing.headers.${name}`);
      restored[name] = stored;
    }
    out = { ...out, tracing: { ...out.tracing, headers: restored } };
  }
  return out;
}

/** A trace collector's URL written back as read (masked) stands for the stored one of the API layer or the file. */
function restoredEndpoint(endpoint: string, previous: ConfigDocument, lower: ConfigDocument | undefined): string {
  if (!MASKED_USERINFO.test(endpoint) && !MASKED_QUERY.test(endpoint)) return endpoint;
  for (const stored of [previous.settings?.tracing?.endpoint, lower?.settings?.tracing?.endpoint]) {
    if (typeof stored === 'string' && maskWebhookUrl(stored) === endpoint) return stored;
  }
  throw maskedValueError('settings.tracing.endpoint');
}

/** The mcp section written back as read: masked server secrets (token, headers, env) stand for the stored ones. */
export function restoreMaskedMcp(next: NonNullable<ConfigDocument['mcp']>, previous: NonNullable<ConfigDocument['mcp']>): NonNullable<ConfigDocument['mcp']> {
  if (!next.servers) return next;
  const servers = restoreNamedItems(next.servers, previous.servers, (name, stored) => maskDocument({ mcp: { servers: { [name]: stored } } }).mcp?.servers?.[name], 'mcp.servers');
  return { ...next, servers };
}

/**
 * The alerts section a client read (secrets masked) and writes back: every value that equals the masked form of
 * the stored channel of the same name at the same place is the stored value again. Which fields are secret is
 * the masking's business (`maskDocument`), so a channel type with new secret fields needs nothing here.
 */
export function restoreMaskedAlerts(next: NonNullable<ConfigDocument['alerts']>, previous: NonNullable<ConfigDocument['alerts']>): NonNullable<ConfigDocument['alerts']> {
  if (!next.channels) return next;
  const channels = restoreNamedItems(next.channels, previous.channels, (name, stored) => maskDocument({ alerts: { channels: { [name]: stored } } }).alerts?.channels?.[name], 'alerts.channels');
  return { ...next, channels };
}

/** Items by name (alert channels, MCP servers), each restored against the stored item of its name and its masked form. */
function restoreNamedItems<T>(next: Record<string, T>, previous: Record<string, T> | undefined, maskedOf: (name: string, stored: T) => unknown, where: string): Record<string, T> {
  const out: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(next)) {
    const stored = previous?.[name];
    out[name] = restoreLeaves(item, stored === undefined ? undefined : maskedOf(name, stored), stored, `${where}.${name}`);
  }
  return out as Record<string, T>;
}

function restoreLeaves(next: unknown, masked: unknown, stored: unknown, where: string): unknown {
  if (typeof next === 'string') {
    if (typeof masked === 'string' && typeof stored === 'string' && next === masked && masked !== stored) return stored;
    if (MASKED.test(next) || MASKED_USERINFO.test(next) || MASKED_QUERY.test(next)) {
      // Shown masked as read (`GET /api/mcp` shows what the reference gave), stored as the file's reference.
      if (typeof stored === 'string' && isSecretReference(stored)) throw referenceHeldByFile(where);
      throw maskedValueError(where);
    }
    return next;
  }
  if (Array.isArray(next)) return next.map((item, i) => restoreLeaves(item, Array.isArray(masked) ? masked[i] : undefined, Array.isArray(stored) ? stored[i] : undefined, `${where}.${i}`));
  if (next && typeof next === 'object') {
    const out: Record<string, unknown> = {};
    const m = masked && typeof masked === 'object' ? (masked as Record<string, unknown>) : {};
    const s = stored && typeof stored === 'object' ? (stored as Record<string, unknown>) : {};
    for (const [key, value] of Object.entries(next)) out[key] = restoreLeaves(value, m[key], s[key], `${where}.${key}`);
    return out;
  }
  return next;
}
