import type { RuntimeConfig } from '../core/config.js';

/**
 * The provider keys that kept their id from one config version to the next but not their value: a key renewed in
 * place (`PATCH /api/providers/:name/keys/:id`, a PUT naming the same id, a `file:` secret read again).
 */
export function replacedKeys(previous: RuntimeConfig, next: RuntimeConfig): Array<{ provider: string; keyId: string }> {
  const replaced: Array<{ provider: string; keyId: string }> = [];
  for (const [name, provider] of next.providers) {
    const before = previous.providers.get(name);
    if (!before || before.keys.length === 0) continue;
    for (const key of provider.keys) {
      const old = before.keys.find((candidate) => candidate.id === key.id);
      if (old && old.value !== key.value) replaced.push({ provider: name, keyId: key.id });
    }
  }
  return replaced;
}
