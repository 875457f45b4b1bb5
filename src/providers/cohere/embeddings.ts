import type { GatewayError } from '../../core/errors.js';
import type { EmbeddingsRequest, EmbeddingsResponse } from '../../core/canonical.js';
import { encodeEmbedding } from '../embedding-encoding.js';
import { cohereUsage } from './response.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

/**
 * OpenAI embeddings <-> Cohere Embed API v2 (`POST /v2/embed`). Cohere takes `texts` (at most 96 per call) and a
 * required `input_type`; tollgate asks for float vectors only and encodes them itself the way the client asked
 * (`encoding_format`), since Cohere's own `base64` type is not OpenAI's little-endian float32 form.
 */

/** Cohere's limit on texts per embed call. */
export const COHERE_MAX_TEXTS = 96;

/** What OpenAI clients get when they do not say (`input_type` is a Cohere field a client may pass through). */
const DEFAULT_INPUT_TYPE = 'search_document';

const TRUNCATE = new Set(['NONE', 'START', 'END']);

type Json = Record<string, unknown>;

function texts(input: EmbeddingsRequest['input']): string[] {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) throw gatewayError('invalid_value', 'cohere: input must be a non-empty string or array of strings.', { param: 'input' });
  if (input.some((item) => typeof item !== 'string')) {
    throw gatewayError('unsupported_parameter', 'cohere: token-array input (number[] or number[][]) cannot be sent to Cohere, which embeds text only; send the input as strings.', { param: 'input' });
  }
  const list = input as string[];
  if (list.length > COHERE_MAX_TEXTS) {
    throw gatewayError('invalid_value', `cohere: at most ${COHERE_MAX_TEXTS} inputs per embeddings request (got ${list.length}); split the input into batches.`, { param: 'input' });
  }
  return list;
}

/** Canonical (OpenAI) embeddings request -> Cohere Embed v2 request body. `user` has no Cohere field and is dropped. */
export function cohereEmbedRequestBody(request: EmbeddingsRequest, model: string): Json {
  const body: Json = { model, texts: texts(request.input) };
  const inputType = request.input_type;
  if (inputType !== undefined && (typeof inputType !== 'string' || inputType === '')) {
    throw gatewayError('invalid_value', 'cohere: input_type must be a string such as search_document or search_query.', { param: 'input_type' });
  }
  body.input_type = inputType ?? DEFAULT_INPUT_TYPE;
  body.embedding_types = ['float'];
  if (typeof request.dimensions === 'number') body.output_dimension = request.dimensions;
  const truncate = request.truncate;
  if (truncate !== undefined) {
    const upper = typeof truncate === 'string' ? truncate.toUpperCase() : '';
    if (!TRUNCATE.has(upper)) throw gatewayError('invalid_value', 'cohere: truncate must be one of NONE, START, END.', { param: 'truncate' });
    body.truncate = upper;
  }
  return body;
}

function invalid(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

/** Cohere Embed v2 answer -> OpenAI's embeddings list, vectors in input order, encoded as the client asked. */
export function cohereEmbeddings(body: unknown, provider: string, request: EmbeddingsRequest): EmbeddingsResponse {
  const vectors = isRecord(body) && isRecord(body.embeddings) ? body.embeddings.float : undefined;
  if (!Array.isArray(vectors) || !vectors.every((v) => Array.isArray(v) && v.every((n) => typeof n === 'number'))) {
    throw invalid(provider, 'an embed answer without float embeddings');
  }
  const expected = typeof request.input === 'string' ? 1 : request.input.length;
  if (vectors.length !== expected) throw invalid(provider, `${vectors.length} embeddings for ${expected} inputs`);
  // Cohere reports what it processed (`meta.tokens`) and what it billed (`meta.billed_units`); embeddings have no output.
  const usage = cohereUsage(isRecord(body) ? body.meta : undefined);
  const prompt = usage?.prompt_tokens ?? 0;
  return {
    object: 'list',
    data: (vectors as number[][]).map((vector, index) => ({ object: 'embedding', index, embedding: encodeEmbedding(vector, request.encoding_format) })),
    model: request.model,
    usage: { prompt_tokens: prompt, total_tokens: prompt },
  };
}
