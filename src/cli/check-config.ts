import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseConfigSyntax, readConfigText } from '../config/load-file.js';
import { resolveRuntimeConfig } from '../config/runtime.js';
import { configFileSchema, issueMessage } from '../config/schema.js';
import { ConfigError, type Env } from '../config/secret-ref.js';
import { secretOptionValues } from '../config/plugin-secrets.js';
import type { RuntimeConfig } from '../core/config.js';
import { loadPluginModule } from '../pipeline/load-plugins.js';
import { checkPluginOptions } from '../pipeline/plugin-host.js';
import { placePlugins, PlacementError, type PlacedPlugin } from '../pipeline/placement.js';
import { checkListedPlacement, checkMaskedSecrets, checkRequires, DEFAULT_INIT_TIMEOUT_MS, tooSlowToLoad } from '../pipeline/plugin-checks.js';
import { within } from '../pipeline/within.js';
import { GATEWAY_SERVICE_IDS } from '../services.js';
import defaultPipeline from '../../pipelines/default.js';

export interface ConfigReport {
  file: string;
  /** Each problem as `<field>: <what is wrong>`; empty when the gateway would start on this file. */
  errors: string[];
  /** What the gateway would start with but warn about (a target whose provider has no key, ...). */
  warnings: string[];
}

function messageOf(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  throw err;
}

/**
 * The plugins a config names, checked as the gateway checks them before it starts: each module loads and exports a
 * plugin, the services it requires are the gateway's, its options validate, its name is not a built-in stage's, and
 * the placements fit together (a `listed` plugin after `route`). (A plugin's own `init` and `create` are not run:
 * they would start its work, which a check must not do.)
 */
async function checkPlugins(runtime: RuntimeConfig, baseDir: string): Promise<string[]> {
  const errors: string[] = [];
  const placed: PlacedPlugin[] = [];
  const builtins = defaultPipeline.stages;
  for (const [index, entry] of runtime.plugins.entries()) {
    if (builtins.includes(entry.name)) {
      errors.push(`plugins.${index}.name: "${entry.name}" is a built-in stage; give the plugin another name`);
      continue;
    }
    try {
      // An import that never settles (a top-level await) is refused as the gateway refuses it; without a timer
      // the process ran out of work and exited 0 without a word, which a deploy script took for a pass.
      const limit = entry.init_timeout_ms ?? DEFAULT_INIT_TIMEOUT_MS;
      const { definition } = await within(loadPluginModule(entry, index, { baseDir, cwd: process.cwd() }), Date.now() + limit, () => tooSlowToLoad(entry.name, index, limit));
      checkRequires(definition, entry.name, index, (key) => GATEWAY_SERVICE_IDS.has(key.id));
      const declared = Array.isArray(definition.secretOptions) ? definition.secretOptions : [];
      checkMaskedSecrets(entry, index, declared);
      const resolved = runtime.pluginOptions.get(entry.name);
      // The gateway's own check (a schema that is not zod's, or throws, is a ConfigError naming the entry); a
      // refinement's message may quote the value it refused, so a CI log gets the secret values masked.
      const secrets = secretOptionValues(entry.options, resolved, declared);
      const options = checkPluginOptions(definition, entry.name, resolved, index, secrets);
      if (!options.ok) errors.push(...options.issues);
      placed.push({ name: entry.name, placement: entry.placement ?? definition.placement ?? {}, where: `plugins.${index}.placement` });
    } catch (err) {
      errors.push(messageOf(err));
    }
  }
  try {
    if (errors.length === 0) checkListedPlacement(runtime.plugins, placePlugins(builtins, placed));
  } catch (err) {
    if (!(err instanceof PlacementError)) errors.push(messageOf(err));
    else errors.push(`${err.field}: ${err.message}`);
  }
  return errors;
}

/**
 * `tollgate check-config <file>`: what the gateway would say of this file at start, without starting anything:
 * syntax, every schema issue with its path (not only the first), references (`env:`, `file:`) against `env`,
 * the resolved config's rules, and the plugins it names.
 */
export async function checkConfigFile(file: string, env: Env): Promise<ConfigReport> {
  const path = resolve(file);
  const report: ConfigReport = { file: path, errors: [], warnings: [] };
  if (!existsSync(path)) {
    report.errors.push(`${path}: no such file`);
    return report;
  }
  let document: unknown;
  try {
    document = parseConfigSyntax(readConfigText(path), path);
  } catch (err) {
    report.errors.push(messageOf(err));
    return report;
  }
  const parsed = configFileSchema.safeParse(document);
  if (!parsed.success) {
    report.errors.push(...parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issueMessage(issue, configFileSchema)}`));
    return report;
  }
  let runtime: RuntimeConfig;
  try {
    runtime = resolveRuntimeConfig({ api: {}, file: parsed.data }, env, 1);
  } catch (err) {
    report.errors.push(messageOf(err));
    return report;
  }
  report.warnings.push(...runtime.warnings.map((warning) => `${warning.field}: ${warning.message}`));
  report.errors.push(...(await checkPlugins(runtime, dirname(path))));
  return report;
}
