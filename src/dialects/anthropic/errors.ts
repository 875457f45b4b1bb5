import { GatewayError } from '../../errors.js';

/** A 400 for a request Anthropic's API would also refuse, pointing at the offending field in Anthropic's path style. */
export function invalidRequest(where: string, message: string): GatewayError {
  return GatewayError.badRequest(`${where}: ${message}`, where, 'invalid_request');
}
