import type { RuntimeConfig } from '../../core/config.js';
import { resolveModelName } from '../../routing/bare-model.js';

/** The model name the pipeline routes on: a bare name is Anthropic's when Anthropic serves it (see resolveModelName). */
export function canonicalModelName(config: RuntimeConfig, requested: string): string {
  return resolveModelName(config, requested, 'anthropic');
}
