import { withChanges, type GatewayError } from '../../core/errors.js';
import type { Target } from '../../core/provider.js';

/** How xAI's refusal of a wrong or revoked key begins (its 400's `error` text, seen percent-encoded too). */
const XAI_WRONG_KEY = /^Incorrect(?: |%20)API(?: |%20)key(?: |%20)provided\b/;

/** Groq's own status for its flex tier at capacity (console.groq.com/docs/errors and docs/flex-processing). */
const GROQ_FLEX_AT_CAPACITY = 498;

/**
 * An OpenAI-format vendor's error answer as what it means, where the vendor says it with another status than OpenAI
 * would; any other error as it was.
 * - xAI answers a wrong or revoked key with 400 Bad Request ("An incorrect API key is supplied", docs.x.ai/developers/
 *   debugging: `{"code": "Client specified an invalid argument", "error": "Incorrect API key provided: xa***ey. ..."}`),
 *   which read as the client's bad request kept a revoked key of the config in rotation and its route off its
 *   fallbacks. It becomes the 401 it stands for (upstream status included, so a key of the config is passed over as
 *   after any 401), xAI's message kept.
 * - Groq answers a `service_tier: "flex"` request its flex tier has no capacity for with its own 498 ("requests will
 *   fail quickly with status 498 and error capacity_exceeded. Add jittered backoff and retries"): a 4xx no other
 *   attempt was made for, though Groq says one may succeed. It is retryable, as a 503 is (another attempt after a
 *   back-off, the route's fallbacks); its status and body stay Groq's.
 */
export function withVendorMeaning(error: GatewayError, status: number, target: Target): GatewayError {
  const vendor = target.provider.vendor.id;
  if (vendor === 'xai' && status === 400 && XAI_WRONG_KEY.test(error.message)) {
    return withChanges(error, { status: 401, type: 'authentication_error', code: 'invalid_api_key', upstreamStatus: 401, retryable: false });
  }
  if (vendor === 'groq' && status === GROQ_FLEX_AT_CAPACITY && !error.retryable) return withChanges(error, { retryable: true });
  return error;
}
