/** Whether a model name is allowed by a key's list: exact names or `*` patterns; an empty list allows all. */
export function modelAllowed(patterns: readonly string[], model: string): boolean {
  if (patterns.length === 0) return true;
  for (const pattern of patterns) {
    if (pattern === model) return true;
    if (pattern.includes('*') && globToRegExp(pattern).test(model)) return true;
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
