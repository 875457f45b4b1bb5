/**
 * Sets `key` on `target` as an own property, whatever the key: a plain assignment of `__proto__` (an own key of
 * parsed JSON or YAML, `{"__proto__": {...}}`) would replace the object's prototype instead, so the copy would lose
 * the key and inherit the value's fields as if they were its own.
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
