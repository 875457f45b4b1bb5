import type { NativeRequest } from '../../core/canonical.js';

/**
 * The client's own Messages body for the upstream (native pass-through): only the model changes, to the
 * target's upstream name. Everything else (thinking blocks with their signatures, redacted_thinking, top_k,
 * service_tier, tool results with is_error and block content, cache_control, metadata, server tools, fields
 * Anthropic adds later) goes as the client wrote it, so the upstream judges the request, not tollgate.
 * tollgate's own fields (`fallbacks`) were taken off the body by the route before it was kept.
 */
export function nativeMessagesBody(native: NativeRequest, model: string): Record<string, unknown> {
  // Spreading keeps the client's key order; `model` is overwritten in place.
  return { ...native.body, model };
}
