import type { z } from 'zod';
import type { RuntimeConfig } from './config.js';
import type { Stage } from './stage.js';

/**
 * The plugin contract (design card: "write custom pipeline plugins"). A plugin is a stage factory with a name,
 * an options schema, the services it needs and where it goes in the pipeline. Built-in stages and users' plugins
 * keep the same contract; `import { definePlugin } from 'tollgate'` is all a plugin author needs.
 */

/** A typed handle for a service in the registry: `services.get(BUS)` is an `EventBus`, checked by the compiler. */
export interface ServiceKey<T> {
  readonly id: string;
  /** Never set: carries the service's type for `Services.get`. */
  readonly __service?: T;
}

export function serviceKey<T>(id: string): ServiceKey<T> {
  return { id };
}

/** The services a plugin asked for (`requires`), looked up by key. */
export interface Services {
  get<T>(key: ServiceKey<T>): T;
  has(key: ServiceKey<unknown>): boolean;
}

/** Where a plugin goes: after and/or before named stages (`auth`, `rate-limit`, `route`, `call`, or another plugin). */
export interface PluginPlacement {
  after?: string;
  before?: string;
}

export interface PluginDefinition<Options = unknown> {
  /** Lower-case letters, digits and `-`; unique in a pipeline. */
  readonly name: string;
  /** Validates (and defaults) the options the config gives the plugin; its JSON Schema is published with the config's. */
  readonly options?: z.ZodType<Options>;
  /**
   * The options that are credentials, as dotted paths into the options as written (`'api_key'`, `'auth.token'`;
   * a path covers everything under it, `*` stands for any one key or index: `'endpoints.*.token'`). Their literal
   * values are masked (`****abcd`) wherever the config is shown (the API, the audit log, the dashboard) and sealed
   * where the API layer is stored; a masked value written back stands for the stored one.
   */
  readonly secretOptions?: readonly string[];
  /** The services `init` and `create` may `get`; a missing one refuses the config that names the plugin. */
  readonly requires?: readonly ServiceKey<unknown>[];
  /** The default place in the pipeline; the config may override it. */
  readonly placement?: PluginPlacement;
  /** Once, when the plugin is first loaded (open an index, start an exporter). */
  init?(services: Services): void | Promise<void>;
  /**
   * A stage for one config version, or null for "nothing to do in this version" (the stage then costs nothing).
   * Its `close()`, if any, runs when that config version is retired.
   */
  create(options: Options, config: RuntimeConfig, services: Services): Stage | null;
  /** When the gateway shuts down or the plugin is removed from the config. */
  close?(): void | Promise<void>;
}

/** Declares a plugin; the identity function that gives authors type inference and checking. */
export function definePlugin<Options = unknown>(definition: PluginDefinition<Options>): PluginDefinition<Options> {
  return definition;
}
