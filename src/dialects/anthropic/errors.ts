import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';

/** A 400 for a request Anthropic's API would also refuse, pointing at the offending field in Anthropic's path style. */
export function invalidRequest(where: string, message: string): GatewayError {
  return gatewayError('invalid_request', `${where}: ${message}`, { param: where });
}
