import type { RuntimeConfig } from '../../core/config.js';
import { splitModelName } from '../../routing/resolve-target.js';
import { isRouteName } from '../../routing/route-patterns.js';

/**
 * Gemini's embedding `taskType` as Cohere's `input_type`. Cohere embeds a query and the documents it is matched
 * against differently, and its adapters (direct, and Cohere Embed on Bedrock) send `search_document` when told
 * nothing, so a Gemini client's RETRIEVAL_QUERY would otherwise be embedded as a document. Task types Cohere has
 * no counterpart for (SEMANTIC_SIMILARITY) leave the adapter's default.
 */
const INPUT_TYPES: Record<string, string> = {
  RETRIEVAL_QUERY: 'search_query',
  QUESTION_ANSWERING: 'search_query',
  FACT_VERIFICATION: 'search_query',
  CODE_RETRIEVAL_QUERY: 'search_query',
  RETRIEVAL_DOCUMENT: 'search_document',
  CLASSIFICATION: 'classification',
  CLUSTERING: 'clustering',
};

export function cohereInputType(taskType: string): string | undefined {
  return INPUT_TYPES[taskType.toUpperCase()];
}

/** Wire formats whose embeddings adapters read the `input_type` extra (Bedrock's Titan bodies ignore it). */
const INPUT_TYPE_AWARE = new Set(['cohere', 'bedrock']);

/**
 * Whether `input_type` may ride on the canonical request: only for a direct name of such a provider, as with
 * Gemini's own extras (a route may reach an OpenAI-format provider, which forwards extras verbatim).
 */
export function takesInputType(config: RuntimeConfig, canonicalName: string): boolean {
  if (isRouteName(config.routes, canonicalName)) return false;
  const parts = splitModelName(canonicalName);
  const provider = parts ? config.providers.get(parts.provider) : undefined;
  return provider !== undefined && INPUT_TYPE_AWARE.has(provider.vendor.format);
}
