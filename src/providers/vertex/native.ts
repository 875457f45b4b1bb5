import type { NativeRequest } from '../../core/canonical.js';
import { withoutUnservedBetaFields } from '../beta-fields.js';

/** The Messages API version Anthropic's models on Vertex take in the body (instead of a header). */
export const ANTHROPIC_VERTEX_VERSION = 'vertex-2023-10-16';

/**
 * An Anthropic client's own Messages body for Claude on Vertex AI (rawPredict), as Anthropic's Vertex SDK sends it:
 * without `model` (the URL names it, and Vertex refuses it in the body), with `anthropic_version` (the client's own
 * if it wrote one). Everything else (thinking blocks with their signatures, top_k, metadata, cache_control, server
 * tools, fields Anthropic adds later) goes as the client wrote it, so Vertex judges the request, not tollgate, but for
 * what only a beta Vertex does not serve allows (beta-fields.ts).
 */
export function vertexMessagesBody(native: NativeRequest): Record<string, unknown> {
  const { model: _model, ...body } = withoutUnservedBetaFields('vertex', native.body);
  return { ...body, anthropic_version: body.anthropic_version ?? ANTHROPIC_VERTEX_VERSION };
}
