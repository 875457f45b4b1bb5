import { withChanges, type GatewayError } from '../../core/errors.js';

/**
 * The canonical (chat completions) fields a Responses request's own fields travel as, with the name the client wrote:
 * a translation's refusal names what the client can change.
 */
const FIELDS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bmax_completion_tokens\b|\bmax_tokens\b/g, 'max_output_tokens'],
  [/\bresponse_format\b/g, 'text.format'],
  [/\breasoning_effort\b/g, 'reasoning.effort'],
];

/** A canonical param as the Responses client names it: its messages are its `instructions` and `input`, not one for one. */
function clientParam(param: string): string {
  if (/^messages\b/.test(param)) return 'input';
  return FIELDS.reduce((text, [canonical, name]) => text.replace(canonical, name), param);
}

/**
 * A refusal tollgate made itself (a translation's check, never an upstream's answer, which keeps its own words) in the
 * Responses API's field names: `max_completion_tokens` is the client's `max_output_tokens`, and so on.
 */
export function inClientNames(error: GatewayError): GatewayError {
  if (error.upstreamStatus !== undefined || error.status !== 400) return error;
  const param = error.param === null ? null : clientParam(error.param);
  const message = FIELDS.reduce((text, [canonical, name]) => text.replace(canonical, name), error.message);
  if (param === error.param && message === error.message) return error;
  return withChanges(error, { message, param });
}
