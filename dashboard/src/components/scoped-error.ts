import { ApiError } from '../api/client.js';

/**
 * The API names a config field by its full path (`providers.lab.base_url`, `routes.chat.targets.0.model`); a
 * form about that one item names its fields relative to it (`base_url`, `targets.0.model`). This strips the
 * item's prefix so FormField finds the message; an error about anything else keeps its param (and so shows
 * as the form's general notice).
 */
export function scopedError(error: ApiError | null, prefix: string): ApiError | null {
  if (!error?.param || !error.param.startsWith(`${prefix}.`)) return error;
  return new ApiError(error.status, error.message, error.param.slice(prefix.length + 1), error.code);
}

/** True when the error names none of `fields`: the form shows it as a notice at its top. */
export function isGeneral(error: ApiError | null, fields: string[]): boolean {
  if (!error) return false;
  const param = error.param;
  return !param || !fields.some((field) => param === field || param.startsWith(`${field}.`) || param.startsWith(`${field}[`));
}
