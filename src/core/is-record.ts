/** A plain JSON object (not null, not an array): what a parsed body or field must be before its keys are read. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
