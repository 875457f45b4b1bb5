import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { BehaviorSubject, type Observable } from 'rxjs';
import { z } from 'zod';
import { quoteInput } from '../core/quote-input.js';
import { redactSecrets } from '../core/redact-secrets.js';
import type { EventBus } from '../bus/bus.js';
import type { GatewayError } from '../core/errors.js';
import type { AuditFilter, AuditLog, AuditPage } from '../store/audit-log.js';
import type { ConfigRepo, StoredLayer } from '../store/config-repo.js';
import { salvageLayer } from './salvage-layer.js';
import { apiPartOf, resolveAtStart } from './refit-layer.js';
import type { Log } from '../log.js';
import { configJsonSchema, type PluginOptionsSchema } from './json-schema.js';
import { documentFromView, effectiveFingerprint, isEffectiveView, viewProviderStubs, withoutInheritedFields } from './from-view.js';
import { applyMergePatch } from './merge-patch.js';
import { sameEffect } from './same-effect.js';
import { DEFAULTS } from './defaults.js';
import { cacheView, guardrailsView, mapSecrets, maskDocument, providerView, routeView, settingsView } from './present.js';
import { resolveRuntimeConfig, type ConfigLayers } from './runtime.js';
import { freezeRuntimeConfig } from './read-only.js';
import { type AlertsConfig, type ConfigFileStatus, type ConfigWarning, type PluginEntryConfig, type RuntimeConfig } from '../core/config.js';
import {
  configFileSchema,
  describeIssues,
  providerKeySchema,
  providerNameSchema,
  providerSchema,
  routeNameSchema,
  routeSchema,
  settingsSchema,
  type ConfigDocument,
  type ProviderConfig,
} from './schema.js';
import { isSealed, type SecretBox } from './secret-box.js';
import { referenceHeldByFile, restoreMaskedAlerts, restoreMaskedDocument, restoreMaskedProvider, restoredKeyValue } from './unmask.js';
import { isSecretOption, mapOptionStrings, maskPluginEntries, NO_PLUGIN_SECRETS, optionAt, type PluginSecrets } from './plugin-secrets.js';
import { ConfigError, isSecretReference, referencedFiles, referenceRefusedMessage, type Env } from './secret-ref.js';
import type { Actor, AuditEntry, ProviderKeyView, ProviderView, RouteView } from './views.js';
import type { ConfigSource } from '../core/config.js';
import { isRecord } from '../core/is-record.js';
import { vendorById } from '../providers/registry.js';
import { gatewayError } from '../core/errors.js';
import { authClientSecret } from './entra-auth.js';

export interface EffectiveConfigView {
  version: number;
  /** Precedence, highest first. */
  precedence: ConfigSource[];
  file: string | null;
  settings: Record<string, unknown>;
  providers: ProviderView[];
  routes: RouteView[];
  /** What will not work as written (e.g. a fallback to a provider with no key). */
  warnings: ConfigWarning[];
  /** Usage-based routing rules in effect, in order. */
  routing_rules: unknown[];
  /** Custom pipeline plugins in effect, in order, as configured. */
  plugins: unknown[];
  /** The response cache's top-level settings in effect (routes, keys and teams may override them). */
  cache: Record<string, unknown>;
  /** The top-level guardrails in effect (routes, keys and teams add and skip rules). */
  guardrails: Record<string, unknown>;
  /** The last rejected save of the config file, until a later save is accepted. */
  file_rejection: { file: string; at: string; reason: string } | null;
}

export interface ConfigServiceDeps {
  env: Env;
  bus: EventBus;
  log: Log;
  repo: ConfigRepo;
  audit: AuditLog;
  box: SecretBox;
  file: { path: string | null; document: ConfigDocument };
}

const PRECEDENCE: ConfigSource[] = ['api', 'file', 'env', 'builtin'];

const keyPatchSchema = z.strictObject({
  value: providerKeySchema.shape.value.optional(),
  weight: providerKeySchema.shape.weight.unwrap().optional(),
  models: z.array(z.string().min(1)).nullable().optional(),
  disabled: z.boolean().optional(),
});

function validate<T>(schema: z.ZodType<T>, body: unknown, prefix: string): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const param = [prefix, ...(first?.path.map((segment) => quoteInput(String(segment), 100)) ?? [])].filter(Boolean).join('.') || null;
  throw gatewayError('invalid_config', `Invalid configuration: ${describeIssues(result.error, schema).replace(/^/, prefix ? `${prefix}.` : '')}`, { param: param });
}

function referenceRefused(where: string): GatewayError {
  return gatewayError('invalid_config', `Invalid configuration: ${referenceRefusedMessage(where)}.`, { param: where });
}

/**
 * `env:` and `file:` references read the gateway's environment and files: they belong to the operator's
 * config file, never to an API caller (who could otherwise send any file or variable upstream as a key or a
 * header). A header read back as the API shows it holds the file's own reference (`fromFile`), which is let
 * through: it stays the file's (see restoreMaskedProvider).
 */
function refuseReferences(name: string, provider: ProviderConfig, prefix: string, fromFile: ProviderConfig | undefined): void {
  // The vertex adapter reads a key that looks like a path as a service-account file: a reference by another name.
  const readsPaths = vendorById(provider.type ?? name)?.format === 'vertex';
  const check = (value: string, where: string): void => {
    if (isSecretReference(value)) throw referenceRefused(where);
    if (readsPaths && !value.trimStart().startsWith('{') && (value.startsWith('/') || value.endsWith('.json'))) {
      throw gatewayError('invalid_config', `Invalid configuration: ${where}: a path to a service-account file is accepted only in the config file and the environment; send the JSON itself.`, { param: where });
    }
  };
  if (provider.api_key !== undefined) check(provider.api_key, `${prefix}.api_key`);
  const authSecret = authClientSecret(provider.auth);
  if (authSecret !== undefined) check(authSecret, `${prefix}.auth.client_secret`);
  provider.keys?.forEach((key, i) => check(key.value, `${prefix}.keys.${i}.value`));
  for (const [header, value] of Object.entries(provider.headers ?? {})) {
    if (isSecretReference(value) && fromFile?.headers?.[header] !== value) throw referenceRefused(`${prefix}.headers.${header}`);
  }
}

/** Whether any string in the value is an `env:`/`file:` secret reference. */
function hasSecretReference(value: unknown): boolean {
  if (typeof value === 'string') return isSecretReference(value);
  if (Array.isArray(value)) return value.some(hasSecretReference);
  if (isRecord(value)) return Object.values(value).some(hasSecretReference);
  return false;
}

function refuseDocumentReferences(document: ConfigDocument, file: ConfigDocument): void {
  for (const [name, provider] of Object.entries(document.providers ?? {})) refuseReferences(name, provider, `providers.${name}`, file.providers?.[name]);
  document.plugins?.forEach((entry, index) => refusePluginReferences(entry, index, file));
}

/**
 * A plugin option sent through the API may not be a reference either. One that is the file's own reference at the same
 * place (the file's plugin list read back with a change) cannot be kept: the API's list replaces the file's whole.
 */
function refusePluginReferences(entry: PluginEntryConfig, index: number, file: ConfigDocument): void {
  const fromFile = file.plugins?.find((candidate) => candidate.name === entry.name)?.options;
  mapOptionStrings(entry.options, (value, path) => {
    if (!isSecretReference(value)) return value;
    const where = ['plugins', index, 'options', ...path].join('.');
    if (optionAt(fromFile, path) === value) throw referenceHeldByFile(where);
    throw referenceRefused(where);
  });
}

/**
 * The API layer keeps a provider's `api_key` as its first key (so that keys have ids). A merge patch that sets
 * `api_key` sets the provider's one key, as the field reads: the keys stored before are replaced, not left in rotation
 * beside it (a renewed key patched in would otherwise have its revoked predecessor still called). A patch that sets
 * `keys` too gets both, as the config file does.
 */
function withoutKeysAnApiKeyReplaces(api: ConfigDocument, patch: Record<string, unknown>): ConfigDocument {
  if (!isRecord(patch.providers) || !api.providers) return api;
  const providers = { ...api.providers };
  for (const [name, entry] of Object.entries(patch.providers)) {
    const stored = providers[name];
    if (stored?.keys && isRecord(entry) && typeof entry.api_key === 'string' && entry.keys === undefined) {
      const { keys: _replaced, ...rest } = stored;
      providers[name] = rest;
    }
  }
  return { ...api, providers };
}

const START_ONLY_SETTINGS = ['host', 'port', 'data_dir'] as const;

/**
 * Sections of a layer merged over the lower layers entry by entry (by name, or setting by setting): empty, they set
 * nothing. (Not so `alerts`, `mcp` or `guardrails`: the API's replaces the file's whole, so even an empty one counts.)
 */
const MERGED_SECTIONS = ['providers', 'routes', 'settings'] as const;

/**
 * A layer without the merged sections that are empty (`routes: {}`, what a merge patch deleting the file's route leaves),
 * nor the empty objects within them (`settings.upstream_timeouts: {}`), however deep. Arrays are kept as they are.
 */
function withoutEmptySections(layer: ConfigDocument): ConfigDocument {
  const out: Record<string, unknown> = { ...layer };
  for (const section of MERGED_SECTIONS) {
    const value = withoutEmptyObjects(out[section]);
    if (value === undefined) delete out[section];
    else out[section] = value;
  }
  return out as ConfigDocument;
}

/** An object without its members that are empty objects once theirs are dropped; undefined when nothing is left. */
function withoutEmptyObjects(value: unknown): unknown {
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    const kept = withoutEmptyObjects(member);
    if (kept !== undefined) out[key] = kept;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * Drops the fields the API adds when it shows an item (`name`, `source`, a key's `models: null`), so that what
 * a client reads it can write back. A `name` that disagrees with the URL is refused.
 */
function withoutReadOnlyFields(body: unknown, name: string, kind: 'provider' | 'route'): unknown {
  if (!isRecord(body)) return body;
  if (body.name !== undefined && body.name !== name) {
    throw gatewayError('invalid_config', `The body names ${kind} '${String(body.name)}' but the URL names '${name}'.`, { param: 'name' });
  }
  const { name: _name, source: _source, ...rest } = body;
  if (kind === 'provider' && Array.isArray(rest.keys)) {
    // Keys shown from the file or the environment are not the API's to write: they stay where they are.
    rest.keys = rest.keys.filter((key: unknown) => !isRecord(key) || key.source === undefined || key.source === 'api').map((key: unknown) => {
      if (!isRecord(key)) return key;
      const { source: _keySource, ...keyRest } = key;
      if (keyRest.models === null) delete keyRest.models;
      return keyRest;
    });
  }
  return rest;
}

/** The first line of an error, without a trailing colon: YAML errors go on to quote the file, which may hold secrets. */
/** A query of the audit log: a page size (1-500, default 50), the cursor, and the filters. */
type AuditQuery = { limit?: number; before?: string } & AuditFilter;

function auditQuery(query: AuditQuery): { limit: number; before: string | undefined; filter: AuditFilter } {
  const { limit, before, ...filter } = query;
  return { limit: Math.min(Math.max(Math.trunc(limit ?? 50) || 50, 1), 500), before, filter };
}

function oneLine(message: string): string {
  const first = message.split('\n', 1)[0]?.trim() ?? '';
  return (first.endsWith(':') ? first.slice(0, -1) : first).slice(0, 500);
}

function actorLabel(actor: Actor): string {
  return `${actor.kind}:${actor.id}`;
}

function newKeyId(): string {
  return `key_${randomBytes(6).toString('hex')}`;
}

/**
 * The live configuration: three layers (API over file over environment, over built-in defaults) resolved
 * into one immutable RuntimeConfig at a time. Every change is validated whole before it replaces the running
 * config, persisted (API layer, secrets sealed), versioned, audited and emitted as `config.changed`.
 * Requests keep the RuntimeConfig they started with.
 */
export class ConfigService {
  private layers: ConfigLayers;
  private readonly subject: BehaviorSubject<RuntimeConfig>;
  private queue: Promise<unknown> = Promise.resolve();
  /** Set by the gateway: loads and compiles what a config version needs (plugins) before it becomes current. */
  private prepare: ((next: RuntimeConfig) => Promise<void>) | null = null;
  /** Shared by every published config: a rejected save changes the status, not the config. */
  private readonly fileStatus: ConfigFileStatus = { rejection: null };
  readonly filePath: string | null;

  constructor(private readonly deps: ConfigServiceDeps) {
    const stored = deps.repo.load();
    // Counted on from the last version given out (a file save's too), and kept, so no version is ever given twice.
    const startVersion = deps.repo.lastVersion() + 1;
    const start = resolveAtStart({ api: stored ? this.unseal(stored) : {}, file: deps.file.document }, deps.env, startVersion);
    deps.repo.keepVersion(startVersion);
    if (stored && start.dropped.length > 0) {
      // Nothing set through the API is lost: the layer as stored is kept aside before the next change saves over it.
      const keptAs = deps.repo.setAside(stored);
      deps.log.error(
        { dropped: start.dropped, keptAs },
        `stored API configuration: ${start.dropped.length} part(s) no longer fit the config file and environment it starts with and were left out (each named with why); the rest is in force`,
      );
    }
    this.layers = { api: start.api, file: deps.file.document };
    this.filePath = deps.file.path;
    const initial: RuntimeConfig = { ...start.config, fileStatus: this.fileStatus };
    this.subject = new BehaviorSubject(freezeRuntimeConfig(initial));
    this.logWarnings(initial, []);
  }

  /**
   * Registers the step every new config version goes through before it is published: it may load modules (so it
   * is async) and refuses the change by throwing a ConfigError naming the field. Changes are serialized, so
   * versions are prepared one at a time and in order.
   */
  setPreparer(prepare: (next: RuntimeConfig) => Promise<void>): void {
    // Frozen before the gateway compiles it: plugins' create() gets this very object (see read-only.ts).
    this.prepare = (next) => prepare(freezeRuntimeConfig(next));
  }

  current(): RuntimeConfig {
    return this.subject.getValue();
  }

  get changes(): Observable<RuntimeConfig> {
    return this.subject.asObservable();
  }

  describe(): EffectiveConfigView {
    const config = this.current();
    return {
      version: config.version,
      precedence: PRECEDENCE,
      file: this.filePath,
      settings: settingsView(config.settings),
      providers: [...config.providers.values()].map(providerView),
      routes: [...config.routes.values()].map(routeView),
      routing_rules: structuredClone([...config.routingRules]),
      plugins: structuredClone(maskPluginEntries(config.plugins, this.pluginSecrets)),
      cache: cacheView(config.cache),
      guardrails: guardrailsView(config.guardrails),
      warnings: config.warnings.map((warning) => ({ ...warning })),
      file_rejection: this.fileRejection(),
    };
  }

  /** The last rejected save of the config file (its time and why), or null once a later save was accepted. */
  fileRejection(): { file: string; at: string; reason: string } | null {
    const rejection = this.fileStatus.rejection;
    return rejection ? { file: rejection.file, at: rejection.at, reason: rejection.reason } : null;
  }

  /** The files the config file's `file:` references read: a change to one is a change to the config. */
  fileReferences(): string[] {
    return referencedFiles(this.layers.file);
  }

  apiLayer(): ConfigDocument {
    return maskDocument(this.layers.api, this.pluginSecrets);
  }

  /** The JSON Schema of the config document, with the options schemas of the plugins the running config loaded. */
  jsonSchema(): object {
    return configJsonSchema(this.pluginSchemas(this.current()));
  }

  /** Where the options schemas of loaded plugins come from (the gateway's plugin host). */
  setPluginSchemas(source: (config: RuntimeConfig) => readonly PluginOptionsSchema[]): void {
    this.pluginSchemas = source;
  }

  private pluginSchemas: (config: RuntimeConfig) => readonly PluginOptionsSchema[] = () => [];

  /** Where the secret options of loaded plugins come from (the gateway's plugin host): masked when shown, sealed when stored. */
  setPluginSecrets(source: PluginSecrets): void {
    this.pluginSecrets = source;
  }

  private pluginSecrets: PluginSecrets = NO_PLUGIN_SECRETS;

  // ---- whole document -------------------------------------------------------------------------------

  /**
   * `ifMatch`: the versions (If-Match entity tags) the caller read and edited; when given, the change applies only
   * if the config is still at one of them, else a 412 (a concurrent change would otherwise be silently undone).
   */
  replaceApiLayer(body: unknown, actor: Actor, ifMatch: readonly number[] | null = null): Promise<EffectiveConfigView> {
    if (isEffectiveView(body)) return this.replaceFromView(body, actor, ifMatch);
    const document = this.documentOrThrow(body);
    return this.change(actor, 'config.replaced', 'config', (api) => this.withKeyIds(restoreMaskedDocument(document, api, this.layers.file, this.pluginSecrets)), ifMatch).then(() =>
      this.describe(),
    );
  }

  /**
   * `POST /api/config/validate`: what `PUT /api/config` would say of `body` (the same 400 naming the field, or
   * the warnings of the config it would make), applying nothing: no new version, no audit entry, no event.
   * Plugin modules are not loaded by a dry run; one that fails to load is refused by the PUT itself.
   */
  validateApiLayer(body: unknown): Promise<{ valid: true; warnings: ConfigWarning[] }> {
    return this.serialized(async () => {
      const next = isEffectiveView(body)
        ? this.planFromView(body).next
        : this.resolveChecked(this.withKeyIds(restoreMaskedDocument(this.documentOrThrow(body), this.layers.api, this.layers.file, this.pluginSecrets)), this.current().version + 1);
      return { valid: true as const, warnings: next.warnings.map((warning) => ({ ...warning })) };
    });
  }

  /** A whole config document as `PUT /api/config` takes it: validated, with no `env:`/`file:` references. */
  private documentOrThrow(body: unknown): ConfigDocument {
    const document = validate(configFileSchema, body, '');
    refuseDocumentReferences(document, this.layers.file);
    return document;
  }

  /**
   * `PUT /api/config` with what `GET /api/config` answered: the API layer becomes what the view holds beyond
   * the file, environment and defaults. Sent back unchanged, nothing changes (no new version, no audit entry).
   */
  private replaceFromView(view: Record<string, unknown>, actor: Actor, ifMatch: readonly number[] | null): Promise<EffectiveConfigView> {
    return this.serialized(async () => {
      this.checkVersion(ifMatch);
      const { api, next, running } = this.planFromView(view);
      return effectiveFingerprint(next) === effectiveFingerprint(running) ? null : { api, version: running.version };
    }).then(async (plan) => {
      // Planned against `version`: applied only if no other change came in between.
      if (plan) await this.change(actor, 'config.replaced', 'config', () => plan.api, ifMatch === null ? null : [plan.version]);
      return this.describe();
    });
  }

  /** The API layer an effective view stands for and the config it resolves to (checked, not applied). */
  private planFromView(view: Record<string, unknown>): { api: ConfigDocument; next: RuntimeConfig; running: RuntimeConfig } {
    const running = this.current();
    const stubs = viewProviderStubs(view, this.layers.file);
    const baselineWith = (settings: unknown): RuntimeConfig => {
      const parsed = settingsSchema.safeParse(settings ?? {});
      try {
        return resolveRuntimeConfig({ api: { providers: stubs, ...(parsed.success ? { settings: parsed.data } : {}) }, file: this.layers.file }, this.deps.env, 0);
      } catch (err) {
        if (err instanceof ConfigError) throw gatewayError('invalid_config', `Invalid configuration: ${err.message}`, { param: err.message.split(':')[0] ?? null });
        throw err;
      }
    };
    const document = this.documentOrThrow(documentFromView(view, baselineWith, running, (entries) => maskPluginEntries(entries, this.pluginSecrets)));
    // The view does not show the MCP servers and the alerts (their own endpoints and pages edit them): a view written
    // back (the settings page's save) never holds them, so the API's sections are kept, not deleted.
    const hidden: ConfigDocument = {
      ...(!('mcp' in view) && this.layers.api.mcp ? { mcp: this.layers.api.mcp } : {}),
      ...(!('alerts' in view) && this.layers.api.alerts ? { alerts: this.layers.api.alerts } : {}),
    };
    const api = this.withKeyIds({ ...restoreMaskedDocument(document, this.layers.api, this.layers.file, this.pluginSecrets), ...hidden });
    return { api, next: this.resolveChecked(api, running.version), running };
  }

  /**
   * The config an API layer resolves to, or the 400 a change to it gets: start-only settings refused, the
   * resolved config's errors naming their field. Publishes nothing.
   */
  private resolveChecked(api: ConfigDocument, version: number): RuntimeConfig {
    for (const setting of START_ONLY_SETTINGS) {
      if (api.settings?.[setting] !== undefined) {
        throw gatewayError('invalid_config', `settings.${setting} is read once at start; set it in the config file or the environment.`, { param: `settings.${setting}` });
      }
    }
    try {
      return { ...resolveRuntimeConfig({ ...this.layers, api }, this.deps.env, version), fileStatus: this.fileStatus };
    } catch (err) {
      if (err instanceof ConfigError) throw gatewayError('invalid_config', `Invalid configuration: ${err.message}`, { param: err.message.split(':')[0] ?? null });
      throw err;
    }
  }

  patchApiLayer(body: unknown, actor: Actor, ifMatch: readonly number[] | null = null): Promise<EffectiveConfigView> {
    if (!isRecord(body)) throw gatewayError('invalid_config', 'A merge patch must be a JSON object.');
    return this.change(actor, 'config.patched', 'config', (api) => {
      const document = validate(configFileSchema, applyMergePatch(withoutKeysAnApiKeyReplaces(api, body), body), '');
      refuseDocumentReferences(document, this.layers.file);
      return this.withKeyIds(restoreMaskedDocument(document, api, this.layers.file, this.pluginSecrets));
    }, ifMatch).then(() => this.describe());
  }

  // ---- providers ------------------------------------------------------------------------------------

  listProviders(): ProviderView[] {
    return [...this.current().providers.values()].map(providerView);
  }

  getProvider(name: string): ProviderView {
    const provider = this.current().providers.get(name);
    if (!provider) throw this.notFound('provider', name);
    return providerView(provider);
  }

  async putProvider(name: string, body: unknown, actor: Actor): Promise<{ view: ProviderView; created: boolean }> {
    validate(providerNameSchema, name, 'name');
    const parsed = validate(providerSchema, withoutReadOnlyFields(body, name, 'provider'), `providers.${name}`);
    refuseReferences(name, parsed, `providers.${name}`, this.layers.file.providers?.[name]);
    const created = !this.current().providers.has(name);
    const stored = this.layers.api.providers?.[name];
    const own = this.withoutInherited(name, parsed, stored);
    const entry = this.providerWithKeyIds(restoreMaskedProvider(name, own, stored, this.layers.file.providers?.[name]), stored);
    // Nothing left of the body but what the provider inherits, and the API sets nothing for it: the file's or the
    // environment's provider (or tollgate's own) read and written back stays theirs, not taken into the API layer.
    const inheritsAll = !created && Object.keys(entry).length === 0;
    await this.change(actor, created ? 'provider.created' : 'provider.replaced', `providers.${name}`, (api) =>
      inheritsAll && api.providers?.[name] === undefined ? api : { ...api, providers: { ...api.providers, [name]: entry } },
    );
    return { view: this.getProvider(name), created };
  }

  /**
   * A provider body without the values it only repeats from the file, the environment and `settings` (see
   * withoutInheritedFields): the provider's own `GET` answer written back sets nothing it inherits. What it inherits
   * is what the running layers give it with the API's entry for it emptied (a provider only the API defines keeps its
   * type); a body that does not resolve so is kept whole, for the change itself to refuse.
   */
  private withoutInherited(name: string, body: ProviderConfig, stored: ProviderConfig | undefined): ProviderConfig {
    const lowerDefines = this.layers.file.providers?.[name] !== undefined || vendorById(name) !== undefined;
    const type = body.type ?? stored?.type;
    const stub: ProviderConfig = lowerDefines || type === undefined ? {} : { type };
    let inherited: ProviderView | undefined;
    try {
      const api: ConfigDocument = { ...this.layers.api, providers: { ...this.layers.api.providers, [name]: stub } };
      const base = resolveRuntimeConfig({ ...this.layers, api }, this.deps.env, this.current().version).providers.get(name);
      inherited = base ? providerView(base) : undefined;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
    }
    return withoutInheritedFields(body, inherited, stored, !lowerDefines);
  }

  /**
   * Removes what the API set for a provider. Returns the provider as it stands afterwards when the file, the
   * environment or tollgate itself still defines it, or null when it is gone.
   */
  async deleteProvider(name: string, actor: Actor): Promise<ProviderView | null> {
    if (!this.layers.api.providers?.[name]) {
      const existing = this.current().providers.get(name);
      if (!existing) throw this.notFound('provider', name);
      throw this.conflict(`Provider '${name}' is defined by ${existing.source === 'file' ? 'the config file' : existing.source === 'env' ? 'environment variables' : 'tollgate itself'}; change it there.`);
    }
    await this.removeFromApiLayer('providers', name, actor, 'provider.deleted');
    const remaining = this.current().providers.get(name);
    return remaining ? providerView(remaining) : null;
  }

  async addProviderKey(name: string, body: unknown, actor: Actor): Promise<ProviderKeyView> {
    const provider = this.current().providers.get(name);
    if (!provider) throw this.notFound('provider', name);
    const key = validate(providerKeySchema, body, `providers.${name}.keys`);
    if (isSecretReference(key.value)) throw referenceRefused(`providers.${name}.keys.value`);
    restoredKeyValue(key.value, undefined, `providers.${name}.keys.value`);
    const id = key.id ?? newKeyId();
    if (provider.keys.some((k) => k.id === id)) throw this.conflict(`Provider '${name}' already has a key with id '${id}'.`);
    await this.change(actor, 'provider_key.created', `providers.${name}.keys.${id}`, (api) => {
      // Checked again in turn: two adds of the same id at once both passed the check above and both were stored.
      const now = this.current().providers.get(name);
      if (!now) throw this.notFound('provider', name);
      if (now.keys.some((k) => k.id === id)) throw this.conflict(`Provider '${name}' already has a key with id '${id}'.`);
      const entry = api.providers?.[name] ?? {};
      return { ...api, providers: { ...api.providers, [name]: { ...entry, keys: [...(entry.keys ?? []), { ...key, id }] } } };
    });
    return this.keyView(name, id);
  }

  async patchProviderKey(name: string, id: string, body: unknown, actor: Actor): Promise<ProviderKeyView> {
    this.apiKeyOrThrow(name, id);
    const patch = validate(keyPatchSchema, body, `providers.${name}.keys.${id}`);
    if (patch.value !== undefined && isSecretReference(patch.value)) throw referenceRefused(`providers.${name}.keys.${id}.value`);
    await this.change(actor, 'provider_key.updated', `providers.${name}.keys.${id}`, (api) => this.mapApiKeys(api, name, (keys) =>
      keys.map((key) => {
        if (key.id !== id) return key;
        // A masked value sent back as read (with a new weight, say) stands for the stored key.
        const value = patch.value === undefined ? key.value : restoredKeyValue(patch.value, key.value, `providers.${name}.keys.${id}.value`);
        const next = { ...key, value, ...(patch.weight ? { weight: patch.weight } : {}) };
        if (patch.disabled === true) next.disabled = true;
        else if (patch.disabled === false) delete next.disabled;
        if (patch.models === null) delete next.models;
        else if (patch.models) next.models = patch.models;
        return next;
      }),
    ));
    return this.keyView(name, id);
  }

  async deleteProviderKey(name: string, id: string, actor: Actor): Promise<void> {
    this.apiKeyOrThrow(name, id);
    await this.change(actor, 'provider_key.deleted', `providers.${name}.keys.${id}`, (api) =>
      this.mapApiKeys(api, name, (keys) => keys.filter((key) => key.id !== id)),
    );
  }

  // ---- routes ---------------------------------------------------------------------------------------

  listRoutes(): RouteView[] {
    return [...this.current().routes.values()].map(routeView);
  }

  getRoute(name: string): RouteView {
    const route = this.current().routes.get(name);
    if (!route) throw this.notFound('route', name);
    return routeView(route);
  }

  async putRoute(name: string, body: unknown, actor: Actor): Promise<{ view: RouteView; created: boolean }> {
    validate(routeNameSchema, name, 'name');
    const route = validate(routeSchema, withoutReadOnlyFields(body, name, 'route'), `routes.${name}`);
    const created = !this.current().routes.has(name);
    await this.change(actor, created ? 'route.created' : 'route.replaced', `routes.${name}`, (api) => ({
      ...api,
      routes: { ...api.routes, [name]: route },
    }));
    return { view: this.getRoute(name), created };
  }

  /** Removes a route set through the API; returns the file's route of that name when one shows again, else null. */
  async deleteRoute(name: string, actor: Actor): Promise<RouteView | null> {
    if (!this.layers.api.routes?.[name]) {
      if (!this.current().routes.has(name)) throw this.notFound('route', name);
      throw this.conflict(`Route '${name}' is defined in the config file; change it there.`);
    }
    await this.removeFromApiLayer('routes', name, actor, 'route.deleted');
    const remaining = this.current().routes.get(name);
    return remaining ? routeView(remaining) : null;
  }

  // ---- alerts ---------------------------------------------------------------------------------------

  /** The alerts section requests are governed by: the API's when set (it replaces the file's as a whole), else the file's. */
  alertsSection(): { source: 'api' | 'file' | 'none'; section: AlertsConfig } {
    if (this.layers.api.alerts) return { source: 'api', section: this.layers.api.alerts };
    if (this.layers.file.alerts) return { source: 'file', section: this.layers.file.alerts };
    return { source: 'none', section: {} };
  }

  /**
   * Changes the API layer's alerts section (`null` removes it, so the file's applies again). `mutate` gets the
   * section in force: the API's, else a copy of the file's, which the API layer then owns.
   */
  async changeAlerts(actor: Actor, action: string, target: string, mutate: (section: AlertsConfig) => AlertsConfig | null, options: { whole?: boolean } = {}): Promise<void> {
    await this.change(actor, action, target, (api) => {
      const { source, section } = this.alertsSection();
      if (source === 'file' && !options.whole && hasSecretReference(section)) {
        throw this.conflict(
          "The alerts section comes from the config file and reads secrets from env:/file: references, which the API cannot hold. Change alerts in the file, or PUT /api/alerts with the whole section (secrets as values) to replace the file's.",
        );
      }
      const next = mutate(structuredClone(section));
      if (next === null) {
        const { alerts: _removed, ...rest } = api;
        return rest;
      }
      const document = validate(configFileSchema, { alerts: next }, '');
      return { ...api, alerts: restoreMaskedAlerts(document.alerts ?? {}, section) };
    });
  }

  // ---- audit and file -------------------------------------------------------------------------------

  audit(query: AuditQuery): AuditEntry[] {
    const { limit, before, filter } = auditQuery(query);
    return this.deps.audit.list(limit, before, filter);
  }

  /** One page of `audit` with its cursor, reading a bounded part of the log (see AuditLog.page). */
  auditPage(query: AuditQuery): AuditPage {
    const { limit, before, filter } = auditQuery(query);
    return this.deps.audit.page(limit, before, filter);
  }

  /**
   * Applies a new config file content. A file that does not parse or validate is logged and ignored: the
   * running config stays as it was and the gateway keeps serving.
   */
  reloadFile(read: () => ConfigDocument, routesOf: () => string[] = () => []): Promise<boolean> {
    return this.serialized(async () => {
      const path = this.filePath ?? '(config file)';
      let document: ConfigDocument;
      let next: RuntimeConfig;
      let written: RuntimeConfig['settings'];
      const running = this.current().settings;
      let unchanged = false;
      try {
        document = read();
        // Resolved in the running data directory: what derives from it (the embedding models' folder) moves only at a
        // restart, with the store. The file's own value is still read to say it changed.
        const inRunningDataDir: ConfigDocument = { ...document, settings: { ...document.settings, data_dir: running.dataDir } };
        const resolved = resolveRuntimeConfig({ ...this.layers, file: inRunningDataDir }, this.deps.env, this.current().version + 1);
        written = { ...resolved.settings, dataDir: this.deps.env.TOLLGATE_DATA_DIR || document.settings?.data_dir || DEFAULTS.dataDir };
        // The running config describes what runs: the address and data directory stay until a restart.
        next = { ...resolved, settings: { ...written, host: running.host, port: running.port, dataDir: running.dataDir }, fileStatus: this.fileStatus };
        // Nothing to load for a save that changes nothing in effect (see keepFileWithoutChange).
        unchanged = sameEffect(next, this.current());
        if (!unchanged) await this.prepare?.(next);
      } catch (err) {
        // One line: a YAML error goes on to quote the offending line of the file, which may hold a key. And a key in
        // the wrong place (`keys: [{ sk-... }]`) is quoted as an unknown field's name: redacted, as the reason is shown
        // by /health, which answers anyone.
        let reason = redactSecrets(oneLine((err as Error).message));
        // A save refused for what the API set (a route on a provider the file drops): the file alone cannot fix it.
        const part = err instanceof ConfigError ? apiPartOf(err.message, this.layers.api) : null;
        if (part) reason = `${reason}; ${part.filter(Boolean).join('.')} is set through the API (the file cannot change it): change or delete it there, or keep what it names in the file`;
        this.deps.log.error({ file: path, error: reason }, 'config file change rejected; running config unchanged');
        let routes: string[] = [];
        try {
          routes = routesOf();
        } catch {
          routes = [];
        }
        this.fileStatus.rejection = { file: path, at: new Date().toISOString(), reason, routes };
        return false;
      }
      for (const [setting, changed] of [
        ['host', written.host !== running.host],
        ['port', written.port !== running.port],
        ['data_dir', written.dataDir !== running.dataDir],
      ] as const) {
        if (changed) this.deps.log.warn({ file: path, setting }, `settings.${setting} changed in the file; it takes effect at the next start`);
      }
      if (unchanged) {
        this.keepFileWithoutChange(document, path);
        return true;
      }
      const before = maskDocument(this.layers.file, this.pluginSecrets);
      this.deps.repo.keepVersion(next.version);
      this.layers = { ...this.layers, file: document };
      const actor: Actor = { kind: 'file', id: path };
      await this.record(actor, 'file.reloaded', 'file', before, maskDocument(document, this.pluginSecrets), next.version, 'file');
      this.fileStatus.rejection = null;
      this.publish(next);
      this.deps.log.info({ file: path, version: next.version }, 'config file change applied');
      return true;
    });
  }

  /**
   * A saved file that changes nothing in effect (saved as it was, or only its comments, whitespace or key order
   * changed; or the file coming back as it was after being removed) is no new version: no audit entry, no
   * `config.changed`, no pipeline rebuilt. The layer still becomes what the file now says, so that later changes
   * resolve against it, and a rejection the file had is over: it is valid again.
   */
  private keepFileWithoutChange(document: ConfigDocument, path: string): void {
    this.layers = { ...this.layers, file: document };
    if (this.fileStatus.rejection) {
      this.fileStatus.rejection = null;
      this.deps.log.info({ file: path, version: this.current().version }, 'config file accepted again; it is the config already running, so nothing changed');
      return;
    }
    this.deps.log.debug({ file: path, version: this.current().version }, 'config file saved without a change in effect; nothing to apply');
  }

  // ---- internals ------------------------------------------------------------------------------------

  private change(actor: Actor, action: string, target: string, mutate: (api: ConfigDocument) => ConfigDocument, ifMatch: readonly number[] | null = null): Promise<void> {
    return this.serialized(async () => {
      this.checkVersion(ifMatch);
      const api = mutate(this.layers.api);
      // The same layer resolves to the same config (the API's holds no references to read again): a PUT or PATCH
      // that leaves it as it was is no change, with no new version, no audit entry and no `config.changed`.
      if (isDeepStrictEqual(api, this.layers.api)) return;
      const next = this.resolveChecked(api, this.current().version + 1);
      // Nor is one that leaves it as it was but for an empty section (`PATCH {"routes": {}}`, or one deleting a route
      // only the file defines) and resolves to a config the same in effect (judged as a file save is, sameEffect): the
      // layer is kept as it was. Deleting an API route that shadows the file's changes the route's source: a change.
      if (isDeepStrictEqual(withoutEmptySections(api), withoutEmptySections(this.layers.api)) && sameEffect(next, this.current())) return;
      try {
        await this.prepare?.(next);
      } catch (err) {
        if (err instanceof ConfigError) throw gatewayError('invalid_config', `Invalid configuration: ${err.message}`, { param: err.message.split(':')[0] ?? null });
        throw err;
      }
      const before = this.itemSnapshot(target);
      // A plugin's secret options are sealed too, and any option that reads as sealed, so that unsealing (which
      // opens every sealed-looking option: plugins are not loaded yet at start) gives it back as it was.
      const sealedOption = (name: string, path: readonly string[], value: string): boolean => isSecretOption(this.pluginSecrets(name), path) || isSealed(value);
      await this.deps.repo.save(mapSecrets(api, (value) => this.deps.box.encrypt(value), sealedOption), next.version);
      this.layers = { ...this.layers, api };
      this.publish(next);
      await this.record(actor, action, target, before, this.itemSnapshot(target), next.version, 'api');
    });
  }

  /** The 412 for a write conditioned (If-Match) on versions the config is no longer at. */
  private checkVersion(ifMatch: readonly number[] | null): void {
    const version = this.current().version;
    if (ifMatch === null || ifMatch.includes(version)) return;
    const read = ifMatch.length > 0 ? `version ${ifMatch.join(' or ')}` : 'the version If-Match names';
    throw gatewayError(
      'config_version_mismatch',
      `The configuration is at version ${version}, not ${read}: it changed since it was read. Read it again (GET /api/config), make the change on what it shows and send it with If-Match: "${version}".`,
    );
  }

  /** Makes `next` the running config, with the file's live status, and logs warnings it brings. */
  private publish(next: RuntimeConfig): void {
    const previous = this.current().warnings;
    // Kept as the same object when it already carries the status: the gateway compiled its pipeline for that object.
    const published: RuntimeConfig = next.fileStatus === this.fileStatus ? next : { ...next, fileStatus: this.fileStatus };
    this.subject.next(freezeRuntimeConfig(published));
    this.logWarnings(published, previous);
  }

  private logWarnings(config: RuntimeConfig, previous: readonly ConfigWarning[]): void {
    const known = new Set(previous.map((warning) => warning.message));
    for (const warning of config.warnings) {
      if (!known.has(warning.message)) this.deps.log.warn({ field: warning.field, version: config.version }, `config warning: ${warning.message}`);
    }
  }

  private removeFromApiLayer(section: 'providers' | 'routes', name: string, actor: Actor, action: string): Promise<void> {
    return this.change(actor, action, `${section}.${name}`, (api) => {
      const items: Record<string, unknown> = { ...api[section] };
      delete items[name];
      return { ...api, [section]: items };
    });
  }

  /**
   * A change made outside the config document (a virtual key or team created, changed, rotated or deleted) written
   * to the same audit log, at the config's current version; `before` and `after` must hold no secret.
   */
  async auditChange(actor: Actor, action: string, target: string, before: unknown, after: unknown): Promise<void> {
    await this.deps.audit.append({ actor, action, target, before, after, version: this.current().version });
  }

  private async record(actor: Actor, action: string, target: string, before: unknown, after: unknown, version: number, source: 'api' | 'file'): Promise<void> {
    await this.deps.audit.append({ actor, action, target, before, after, version });
    this.deps.bus.emit('config.changed', { version, source, action, target, actor: actorLabel(actor) });
  }

  /** The masked state of what a change touches, for the audit log. */
  private itemSnapshot(target: string): unknown {
    const [section, name] = target.split('.', 2) as [string, string | undefined];
    const config = this.current();
    if (section === 'providers' && name) {
      const provider = config.providers.get(target.slice('providers.'.length).split('.keys.')[0] ?? '');
      return provider ? providerView(provider) : null;
    }
    if (section === 'routes' && name) {
      const route = config.routes.get(target.slice('routes.'.length));
      return route ? routeView(route) : null;
    }
    return maskDocument(this.layers.api, this.pluginSecrets);
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * The stored API layer, opened before it is checked: a sealed secret is longer than the value it holds (about 4/3
   * of it plus 49 characters), so checking the sealed form against the schema's length limits refused a secret the
   * API had accepted (a 1000-character webhook secret, a long MCP token) and dropped the whole API layer at start.
   */
  private unseal(stored: StoredLayer): ConfigDocument {
    const document = stored.document;
    let opened: unknown = document;
    if (isRecord(document)) {
      try {
        opened = mapSecrets(document as ConfigDocument, (value) => this.deps.box.decrypt(value), (_name, _path, value) => isSealed(value));
      } catch (err) {
        // A key that does not open the secrets stops the start; a malformed document is the schema's to describe.
        if (err instanceof ConfigError) throw err;
      }
    }
    const parsed = configFileSchema.safeParse(opened);
    if (parsed.success) return this.withoutStoredReferences(parsed.data);
    // Nothing set through the API is lost: the layer as stored is kept aside before the next change saves over it.
    const keptAs = this.deps.repo.setAside(stored);
    const salvaged = isRecord(opened) ? salvageLayer(opened) : null;
    if (!salvaged) {
      this.deps.log.error({ error: describeIssues(parsed.error), keptAs }, 'stored API configuration is invalid; starting without it');
      return {};
    }
    this.deps.log.error(
      { dropped: salvaged.dropped, keptAs },
      `stored API configuration: ${salvaged.dropped.length} part(s) the configuration no longer accepts were left out (each named with why); the rest is in force`,
    );
    return this.withoutStoredReferences(salvaged.document);
  }

  /** References stored by an older version through the API are dropped (logged), never resolved. */
  private withoutStoredReferences(document: ConfigDocument): ConfigDocument {
    const providers: NonNullable<ConfigDocument['providers']> = {};
    for (const [name, provider] of Object.entries(document.providers ?? {})) {
      const dropped: string[] = [];
      if (provider.api_key !== undefined && isSecretReference(provider.api_key)) dropped.push(`providers.${name}.api_key`);
      const authSecret = authClientSecret(provider.auth);
      const authReference = authSecret !== undefined && isSecretReference(authSecret);
      if (authReference) dropped.push(`providers.${name}.auth`);
      const keys = provider.keys?.filter((key, i) => {
        if (!isSecretReference(key.value)) return true;
        dropped.push(`providers.${name}.keys.${i}.value`);
        return false;
      });
      // Header values were sent as written before references were read in them: one that reads as a reference now is left out.
      const headers = provider.headers && Object.fromEntries(Object.entries(provider.headers).filter(([header, value]) => {
        if (!isSecretReference(value)) return true;
        dropped.push(`providers.${name}.headers.${header}`);
        return false;
      }));
      for (const where of dropped) this.deps.log.error({ field: where }, 'a value set through the API is an env:/file: reference; references are read only from the config file, so it is ignored');
      const { api_key: apiKey, auth, ...rest } = provider;
      providers[name] = { ...rest, ...(auth && !authReference ? { auth } : {}), ...(apiKey !== undefined && !isSecretReference(apiKey) ? { api_key: apiKey } : {}), ...(keys ? { keys } : {}), ...(headers ? { headers } : {}) };
    }
    return { ...document, ...(document.providers ? { providers } : {}) };
  }

  private providerWithKeyIds(provider: ProviderConfig, stored: ProviderConfig | undefined): ProviderConfig {
    // The API layer stores every key with an id, so keys can be addressed later; api_key becomes a key. A key sent
    // again without its id (the same body PUT twice) keeps the id it has: it is the same key, and the same body
    // then leaves the layer as it was, which is no change (see change()).
    const declared = [...(provider.api_key ? [{ value: provider.api_key, weight: 1 }] : []), ...(provider.keys ?? [])];
    const taken = new Set(declared.flatMap((key) => ('id' in key && key.id !== undefined ? [key.id] : [])));
    const storedIdOf = (value: string): string | undefined => {
      const match = stored?.keys?.find((key) => key.id !== undefined && key.value === value && !taken.has(key.id));
      if (match?.id !== undefined) taken.add(match.id);
      return match?.id;
    };
    const keys = declared.map((key) => ({
      ...key,
      id: ('id' in key ? key.id : undefined) ?? storedIdOf(key.value) ?? newKeyId(),
    }));
    const { api_key: _shorthand, ...rest } = provider;
    return keys.length > 0 ? { ...rest, keys } : rest;
  }

  private withKeyIds(document: ConfigDocument): ConfigDocument {
    if (!document.providers) return document;
    const providers: NonNullable<ConfigDocument['providers']> = {};
    for (const [name, provider] of Object.entries(document.providers)) providers[name] = this.providerWithKeyIds(provider, this.layers.api.providers?.[name]);
    return { ...document, providers };
  }

  private mapApiKeys(api: ConfigDocument, name: string, map: (keys: NonNullable<ProviderConfig['keys']>) => NonNullable<ProviderConfig['keys']>): ConfigDocument {
    const entry = api.providers?.[name] ?? {};
    return { ...api, providers: { ...api.providers, [name]: { ...entry, keys: map(entry.keys ?? []) } } };
  }

  private apiKeyOrThrow(name: string, id: string): void {
    const provider = this.current().providers.get(name);
    if (!provider) throw this.notFound('provider', name);
    const key = provider.keys.find((k) => k.id === id);
    if (!key) throw this.notFound('key', id);
    if (key.source !== 'api') throw this.conflict(`Key '${id}' of provider '${name}' comes from the ${key.source === 'file' ? 'config file' : 'environment'}; change it there.`);
  }

  private keyView(name: string, id: string): ProviderKeyView {
    const key = this.getProvider(name).keys.find((k) => k.id === id);
    if (!key) throw this.notFound('key', id);
    return key;
  }

  private notFound(kind: 'provider' | 'route' | 'key', name: string): GatewayError {
    return gatewayError(`${kind}_not_found`, `No ${kind} named '${name}'.`);
  }

  private conflict(message: string): GatewayError {
    return gatewayError('conflict', message);
  }
}
