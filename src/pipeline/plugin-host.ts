import type { RuntimeConfig } from '../core/config.js';
import { ConfigError } from '../config/secret-ref.js';
import { maskValuesIn, secretOptionValues } from '../config/plugin-secrets.js';
import { optionsJsonSchema, type PluginOptionsSchema } from '../config/json-schema.js';
import type { Log } from '../log.js';
import { loadPluginModule } from './load-plugins.js';
import { placePlugins, PlacementError, type PlacedPlugin } from './placement.js';
import type { PluginDefinition } from '../core/plugin.js';
import { checkListedPlacement, checkMaskedSecrets, checkRequires, DEFAULT_INIT_TIMEOUT_MS, tooSlowToLoad } from './plugin-checks.js';
import { within } from './within.js';
import { closeWithin } from './bounded-close.js';
import type { PipelinePlugins, PluginStage } from './runner.js';
import type { ServiceRegistry } from '../services.js';
import type { Stage } from '../core/stage.js';
import { listedOnly } from './plugin-scope.js';
import { isThenable } from './isolate.js';
import { failureText } from './masked-error.js';

/** A module's `init` under way, and how many loads wait for it now (see PluginHost.initOnce). */
interface PendingInit {
  done: Promise<unknown>;
  waiting: number;
}

interface LoadedPlugin {
  definition: PluginDefinition;
  /** Config versions (compiled or being compiled) that name this module: at zero it is closed and forgotten. */
  users: number;
}

/** What one config version holds of the plugins: released when that version is retired. */
export interface CompiledPlugins {
  plugins: PipelinePlugins;
  /** The modules this version uses (each counted once). */
  keys: ReadonlySet<string>;
}

export interface PluginHostDeps {
  services: ServiceRegistry;
  /** The built-in stage names in request order: plugins are placed among them. */
  builtins: readonly string[];
  /** Where `path` is resolved from: the config file's folder (the working directory without one). */
  baseDir: string;
  /** Where `package` is resolved from. */
  cwd: string;
  log: Log;
}

/** A stage as the runner calls it: `run`, and `appliesTo` and `close` when it has them, are functions. */
function isStage(value: unknown): value is Stage {
  const candidate = value as Partial<Record<keyof Stage, unknown>> | null;
  if (typeof candidate !== 'object' || candidate === null || typeof candidate.run !== 'function') return false;
  // Else one failed every request it met (appliesTo) or only at its version's retirement (close), far from its cause.
  return [candidate.appliesTo, candidate.close].every((method) => method === undefined || typeof method === 'function');
}

function firstLine(err: unknown): string {
  return (failureText(err).split('\n', 1)[0] ?? '').slice(0, 300);
}

/**
 * A plugin entry's options against its definition's schema, as the gateway checks them before a config version runs
 * (and `tollgate check-config` does, which lists every issue where the gateway names the first): the parsed options,
 * or each issue as `plugins.N.options.<path>: <message>`, its secret values masked.
 */
export function checkPluginOptions(
  definition: PluginDefinition,
  name: string,
  options: unknown,
  index: number,
  secrets: readonly string[],
): { ok: true; data: unknown } | { ok: false; issues: string[] } {
  if (!definition.options) return { ok: true, data: options };
  const schema: unknown = definition.options;
  // Plugin code, so its faults are the entry's: a JSON Schema object given as `options`, or a transform or refinement
  // that throws (new RegExp(source) on a bad pattern) rather than adding an issue, which zod's safeParse lets through.
  // Uncaught, either failed PATCH /api/config with a 500 (a SyntaxError even read as the request's own bad JSON), a
  // start without naming the entry, and check-config with a stack trace.
  if (typeof (schema as { safeParse?: unknown }).safeParse !== 'function') {
    throw new ConfigError(`plugins.${index}.options: plugin "${name}": its options must be a zod schema (definePlugin({ options: z.object({ ... }) }))`);
  }
  let result: ReturnType<NonNullable<PluginDefinition['options']>['safeParse']>;
  try {
    result = definition.options.safeParse(options ?? {});
  } catch (err) {
    throw new ConfigError(`plugins.${index}.options: plugin "${name}" could not parse its options: ${maskValuesIn(firstLine(err), secrets)}`);
  }
  if (result.success) return { ok: true, data: result.data };
  // A refinement's message is the plugin's own words, and may quote the value it refused.
  const issues = result.error.issues.map((issue) => `${[`plugins.${index}.options`, ...issue.path.map(String)].join('.')}: ${maskValuesIn(issue.message, secrets)}`);
  return { ok: false, issues };
}

/**
 * Owns user plugins across config versions: imports each module once and calls its `init` once, checks every
 * entry of a new config version (module, requires, options, placement) and creates its stages before that
 * version becomes current, and calls a plugin's `close()` once no version names it any more.
 */
export class PluginHost {
  private readonly loaded = new Map<string, LoadedPlugin>();
  /** Inits still running, by module key: one at a time per module. */
  private readonly initializing = new Map<string, PendingInit>();
  /** Each compiled config version's plugin definitions by entry name, for the published options schemas. */
  private readonly definitions = new WeakMap<RuntimeConfig, ReadonlyMap<string, PluginDefinition>>();
  /** The secret option paths plugins declared, by entry name (see secretOptions). */
  private readonly secrets = new Map<string, Set<string>>();

  constructor(private readonly deps: PluginHostDeps) {}

  /**
   * The plugins of one config version, ready for its Pipeline. Throws a ConfigError naming the field
   * (`plugins.1.options.prompts`, `plugins.0.placement.after`) when the version cannot run, having released
   * what it took; the running version is not touched.
   */
  async compile(config: RuntimeConfig): Promise<CompiledPlugins> {
    const keys = new Set<string>();
    const created: Stage[] = [];
    try {
      const stages = new Map<string, PluginStage | null>();
      const placed: PlacedPlugin[] = [];
      const definitions = new Map<string, PluginDefinition>();
      for (const [index, entry] of config.plugins.entries()) {
        if (this.deps.builtins.includes(entry.name)) {
          throw new ConfigError(`plugins.${index}.name: "${entry.name}" is a built-in stage; give the plugin another name`);
        }
        const definition = await this.acquire(entry, index, keys);
        definitions.set(entry.name, definition);
        this.noteSecretOptions(entry.name, definition);
        // The options with their env:/file: references read (config.plugins keeps them as written, for showing).
        const written = config.pluginOptions.has(entry.name) ? config.pluginOptions.get(entry.name) : entry.options;
        // Known only now that the plugin is loaded: a masked value in a secret option is no credential to create with.
        checkMaskedSecrets(entry, index, this.secretOptions(entry.name));
        // What the plugin says when it refuses its options may quote a credential: such a message goes to the
        // log, an API answer and, for a file save, the public /health, so its secret values are masked in it.
        const secrets = secretOptionValues(entry.options, written, this.secretOptions(entry.name));
        const said = (err: unknown): string => maskValuesIn(firstLine(err), secrets);
        const options = this.parseOptions(definition, entry.name, written, index, secrets);
        const services = this.deps.services.scoped(entry.name, definition.requires ?? []);
        let stage: Stage | null;
        try {
          stage = definition.create(options, config, services);
        } catch (err) {
          throw new ConfigError(`plugins.${index}: plugin "${entry.name}" failed to create its stage: ${said(err)}`);
        }
        if (isThenable(stage)) {
          // An `async create`: its rejection would otherwise be unhandled, which ends the process under `tollgate serve`.
          stage.then(undefined, (err: unknown) => this.deps.log.warn({ plugin: entry.name, error: said(err) }, `plugin "${entry.name}": the Promise its create() returned rejected`));
          throw new ConfigError(`plugins.${index}: plugin "${entry.name}": create() returned a Promise; it must return a stage ({ name, run }) or null synchronously (do asynchronous set-up in init)`);
        }
        if (stage !== null && !isStage(stage)) {
          throw new ConfigError(`plugins.${index}: plugin "${entry.name}": create() must return a stage ({ name, run }, with appliesTo and close functions if it has them) or null`);
        }
        if (stage) created.push(stage);
        if (stage && entry.apply === 'listed') stage = listedOnly(stage, entry.name);
        stages.set(entry.name, stage ? { stage, guard: { plugin: entry.name, optional: entry.optional ?? false, timeoutMs: entry.timeout_ms ?? null, secrets } } : null);
        placed.push({ name: entry.name, placement: entry.placement ?? definition.placement ?? {}, where: `plugins.${index}.placement` });
      }
      let order: string[];
      try {
        order = placePlugins(this.deps.builtins, placed);
      } catch (err) {
        if (err instanceof PlacementError) throw new ConfigError(`${err.field}: ${err.message}`);
        throw err;
      }
      checkListedPlacement(config.plugins, order);
      this.definitions.set(config, definitions);
      return { plugins: { order, stages }, keys };
    } catch (err) {
      // Stages and modules of a version that will never run are let go now.
      for (const stage of created) await this.closeStage(stage);
      await this.release(keys);
      throw err;
    }
  }

  /**
   * The options the plugins configured under `name` declare secret (`secretOptions`), for masking and sealing them.
   * Every plugin ever loaded under the name counts, so that a config shown after the plugin changed (the audit
   * log's before and after) masks what either version held secret.
   */
  secretOptions(name: string): readonly string[] {
    return [...(this.secrets.get(name) ?? [])];
  }

  private noteSecretOptions(name: string, definition: PluginDefinition): void {
    // A list of option paths: loadPluginModule refused the module otherwise.
    const declared = definition.secretOptions;
    if (declared === undefined) return;
    const known = this.secrets.get(name) ?? new Set<string>();
    for (const path of declared) known.add(path);
    this.secrets.set(name, known);
  }

  /** The options schemas of a compiled config version's plugins, matched to their entries by name. */
  optionSchemas(config: RuntimeConfig): PluginOptionsSchema[] {
    const out: PluginOptionsSchema[] = [];
    for (const [name, definition] of this.definitions.get(config) ?? []) {
      if (!definition.options) continue;
      try {
        out.push({ match: { properties: { name: { const: name } }, required: ['name'] }, options: optionsJsonSchema(definition.options as never) });
      } catch (err) {
        // A schema JSON Schema cannot express (a transform, say) is left out; validation still uses the zod schema.
        this.deps.log.debug({ err, plugin: name }, 'a plugin options schema has no JSON Schema form');
      }
    }
    return out;
  }

  /** Lets go of what a retired (or never published) config version held: plugins no version names are closed. */
  async release(keys: Iterable<string>): Promise<void> {
    for (const key of keys) {
      const plugin = this.loaded.get(key);
      if (!plugin || --plugin.users > 0) continue;
      this.loaded.delete(key);
      await this.closePlugin(plugin.definition);
    }
  }

  /** At shutdown: closes every plugin still loaded. */
  async closeAll(): Promise<void> {
    const all = [...this.loaded.entries()];
    this.loaded.clear();
    for (const [, plugin] of all) await this.closePlugin(plugin.definition);
  }

  private async closePlugin(definition: PluginDefinition): Promise<void> {
    if (definition.close) await closeWithin(() => definition.close?.(), this.deps.log, { plugin: definition.name }, `plugin "${definition.name}"`);
  }

  private async acquire(entry: RuntimeConfig['plugins'][number], index: number, keys: Set<string>): Promise<PluginDefinition> {
    // Config changes are applied one at a time: an import or an init that never settles (a top-level await or a
    // connection that hangs) held every later change, the one removing the plugin too, until a restart, and held a
    // start without a word. Both get init_timeout_ms together; neither can be cancelled, so what settles late is
    // let go, or taken up by the next load that waits for it (initOnce).
    const limit = entry.init_timeout_ms ?? DEFAULT_INIT_TIMEOUT_MS;
    const deadline = Date.now() + limit;
    let timedOut = false;
    const tooSlow = (): ConfigError => {
      timedOut = true;
      return tooSlowToLoad(entry.name, index, limit);
    };
    const { key, definition } = await within(loadPluginModule(entry, index, this.deps), deadline, tooSlow);
    const known = this.loaded.get(key);
    if (known) {
      if (!keys.has(key)) {
        keys.add(key);
        known.users++;
      }
      return known.definition;
    }
    const init = this.initOnce(key, definition, entry.name, index);
    init.waiting++;
    try {
      await within(init.done, deadline, tooSlow);
    } catch (err) {
      if (timedOut) throw err;
      throw new ConfigError(`plugins.${index}: plugin "${entry.name}" failed to initialise: ${firstLine(err)}`);
    } finally {
      init.waiting--;
    }
    // Two loads that waited for the same init (or a load that came while another took it up) share one plugin.
    const taken = this.loaded.get(key);
    if (taken) {
      if (!keys.has(key)) {
        keys.add(key);
        taken.users++;
      }
      return taken.definition;
    }
    this.loaded.set(key, { definition, users: 1 });
    keys.add(key);
    return definition;
  }

  /**
   * The module's `init`, run once at a time per module key. A load that gave up on an init (init_timeout_ms) could
   * not cancel it, and the next config change naming the module ran init again while the first was still pending:
   * two of what init opens (an exporter, a pool), and the late first one's close() then closed the plugin in use.
   * A load that comes while an init runs waits for that one, within its own deadline, and takes its outcome.
   */
  private initOnce(key: string, definition: PluginDefinition, name: string, index: number): PendingInit {
    const running = this.initializing.get(key);
    if (running) return running;
    checkRequires(definition, name, index, (service) => this.deps.services.has(service));
    const done = Promise.resolve().then(() => definition.init?.(this.deps.services.scoped(name, definition.requires ?? [])));
    const init: PendingInit = { done, waiting: 0 };
    this.initializing.set(key, init);
    // Registered before any load awaits `done`, so this runs first when it settles: a load still waiting then takes
    // the plugin up after it. When none waits (every load naming it gave up), a late success is closed, unless a
    // load has taken the module up meanwhile, and a late failure is logged.
    done.then(
      () => {
        this.initializing.delete(key);
        if (init.waiting === 0 && !this.loaded.has(key)) void this.closePlugin(definition);
      },
      (err: unknown) => {
        this.initializing.delete(key);
        if (init.waiting === 0) this.deps.log.warn({ err, plugin: name }, `plugin "${name}": its init failed after its init_timeout_ms`);
      },
    );
    return init;
  }

  private parseOptions(definition: PluginDefinition, name: string, options: unknown, index: number, secrets: readonly string[]): unknown {
    const checked = checkPluginOptions(definition, name, options, index, secrets);
    if (checked.ok) return checked.data;
    throw new ConfigError(checked.issues[0] ?? `plugins.${index}.options: invalid options`);
  }

  private async closeStage(stage: Stage): Promise<void> {
    if (stage.close) await closeWithin(() => stage.close?.(), this.deps.log, { stage: stage.name }, `stage "${stage.name}"`);
  }
}
