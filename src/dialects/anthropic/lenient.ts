import type { ChatCompletionRequest } from '../../core/canonical.js';
import { GatewayError } from '../../core/errors.js';
import type { DialectOptions } from './content.js';
import type { MessagesRequest } from './parse-request.js';
import { canonicalRequest } from './request.js';

/** The canonical request for a Messages body, and why it is incomplete when it is. */
export interface CanonicalRead {
  request: ChatCompletionRequest;
  /**
   * Null when the canonical request says everything the body does. Otherwise the 400 the strict translation
   * gave: the request holds what could be translated (for token counts, budgets and routing), and an attempt
   * that must translate fails with this error (the call stage), while an Anthropic upstream takes the body as is.
   */
  untranslatable: GatewayError | null;
}

/**
 * Reads a Messages body into the canonical form, leniently: when the strict translation refuses something only
 * because the canonical form cannot express it (server tools, their blocks sent back, images by file id,
 * documents by URL or file id, block types tollgate does not know), the body is read again leaving those out.
 * Malformed input is still refused, by either read. The strict read runs first, so a request that translates
 * whole costs nothing more.
 */
export function readCanonical(body: MessagesRequest, model: string, options: DialectOptions): CanonicalRead {
  try {
    return { request: canonicalRequest(body, model, options), untranslatable: null };
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const untranslatable: GatewayError[] = [];
    // Throws the malformed input's own 400 when there is one; what is left out is only recorded.
    const request = canonicalRequest(body, model, { ...options, untranslatable });
    // Nothing was left out: the strict read's error was malformed input after all (cannot happen; kept as a guard).
    if (untranslatable.length === 0) throw err;
    return { request, untranslatable: err };
  }
}
