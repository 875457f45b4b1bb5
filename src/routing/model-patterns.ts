import { isUrlPathSafe } from '../path-segment.js';

/**
 * Whether a model name is allowed by a key's list: exact names or `*` patterns; an empty list allows all.
 * A `*` never stands for what could move the name elsewhere in a provider's URL (`..`, `?`, `#`, `%`, a
 * backslash, a control character): `vertex/gemini-2.0-flash*` must not allow `vertex/gemini-2.0-flash/../../x`,
 * which, placed in the URL, would reach another path on the provider than the key was allowed.
 */
export function modelAllowed(patterns: readonly string[], model: string): boolean {
  if (patterns.length === 0) return true;
  const wildcardsApply = isUrlPathSafe(model);
  for (const pattern of patterns) {
    if (pattern === model) return true;
    if (wildcardsApply && pattern.includes('*') && globToRegExp(pattern).test(model)) return true;
  }
  return false;
}

const compiled = new Map<string, RegExp>();

function globToRegExp(pattern: string): RegExp {
  let regex = compiled.get(pattern);
  if (!regex) {
    regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(pattern, regex);
  }
  return regex;
}
