import type { RuntimeConfig } from '../../core/config.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { isRecord } from '../../core/is-record.js';

/**
 * A key's or team's `plugins` may name only plugins the running config has with `apply: listed` (a plugin that
 * applies to all needs no listing; a name nothing configures is a typo). Checked when the list is written; a
 * plugin the config later drops is skipped for that key at request time.
 */
export function checkListedPlugins(body: unknown, config: RuntimeConfig): void {
  if (!isRecord(body) || !Array.isArray(body.plugins)) return;
  const listed = new Set(config.plugins.filter((entry) => entry.apply === 'listed').map((entry) => entry.name));
  body.plugins.forEach((name: unknown, index) => {
    if (typeof name !== 'string' || listed.has(name)) return;
    const choices = listed.size > 0 ? `the plugins configured with apply: listed are ${[...listed].map((n) => `'${n}'`).join(', ')}` : 'no plugin is configured with apply: listed';
    throw gatewayError('invalid_value', `Invalid 'plugins.${index}': '${quoteInput(name, 64)}' is not a plugin configured with apply: listed (${choices}).`, {
      param: `plugins.${index}`,
    });
  });
}
