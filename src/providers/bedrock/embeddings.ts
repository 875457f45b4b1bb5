import type { EmbeddingsRequest, EmbeddingsResponse } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import { countTextTokens } from '../../tokens/tokenizer.js';
import { encodeEmbedding, withEstimatedUsage } from '../embedding-encoding.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';

/**
 * Embeddings on Bedrock go through InvokeModel (`POST /model/{modelId}/invoke`), whose body is the model's own
 * format, so the model id decides the body:
 * - Amazon Titan Text Embeddings V2 (`amazon.titan-embed-text-v2:0`): `{inputText, dimensions?, normalize}` →
 *   `{embedding, inputTextTokenCount}`; one text per call. (G1, `amazon.titan-embed-text-v1`, takes only
 *   `inputText`.)
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, ...): `{texts, input_type,
 *   embedding_types}` → `{embeddings: {float: [[...]]}, id, response_type: 'embeddings_by_type', texts}`; up to
 *   96 texts per call.
 */
export type EmbeddingModel = 'titan-v2' | 'titan-v1' | 'cohere';

/** Cohere Embed on Bedrock takes at most 96 texts per call. */
export const COHERE_MAX_TEXTS = 96;

/**
 * The embeddings family of a Bedrock model id; also accepts a foundation-model ARN and a cross-region
 * inference profile id (`us.cohere.embed-...`). Null for models tollgate has no embeddings body for.
 */
export function embeddingModel(modelId: string): EmbeddingModel | null {
  const id = (modelId.split('/').pop() ?? modelId).toLowerCase();
  const bare = /^(?:[a-z-]+\.)?((?:amazon|cohere)\..*)$/.exec(id)?.[1] ?? id;
  if (bare.startsWith('amazon.titan-embed-text-v2')) return 'titan-v2';
  if (bare.startsWith('amazon.titan-embed-text-v1')) return 'titan-v1';
  if (bare.startsWith('cohere.embed-')) return 'cohere';
  return null;
}

function bad(message: string, param: string | null): GatewayError {
  return gatewayError('unsupported_for_provider', `bedrock: ${message}`, { param });
}

function invalid(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

function modelOf(modelId: string): EmbeddingModel {
  const model = embeddingModel(modelId);
  if (!model) {
    throw gatewayError('embeddings_not_supported', `bedrock: '${quoteInput(modelId)}' is not an embeddings model tollgate knows; use amazon.titan-embed-text-v2:0, cohere.embed-english-v3 or cohere.embed-multilingual-v3.`, { param: 'model' });
  }
  return model;
}

/** The input's texts; token arrays (OpenAI tokenizer ids) mean nothing to Bedrock's models. */
function textsOf(request: EmbeddingsRequest): string[] {
  const { input } = request;
  if (typeof input === 'string') return [input];
  if (input.every((item): item is string => typeof item === 'string')) return input;
  throw bad('token-array inputs are OpenAI tokenizer ids, which Bedrock models cannot read; send the text instead.', 'input');
}

/** Vector size of Cohere Embed v3 models, which cannot be changed (v4 takes `output_dimension`). */
function cohereNativeSize(modelId: string): number | null {
  const id = modelId.toLowerCase();
  if (id.includes('embed-v4')) return null;
  return id.includes('light') ? 384 : 1024;
}

/**
 * Cohere's required input_type: the client's (an extra field, as on the cohere provider: `search_query` for a
 * query, which Cohere embeds differently from the documents it is matched against), else `search_document`.
 * Bedrock checks the value itself (search_document, search_query, classification, clustering).
 */
function cohereInputType(request: EmbeddingsRequest): string {
  const inputType = request.input_type;
  if (inputType === undefined || inputType === null) return 'search_document';
  if (typeof inputType !== 'string' || inputType === '') throw bad('input_type must be a string such as search_document or search_query.', 'input_type');
  return inputType;
}

/**
 * Cohere's `truncate` (a client's extra, as on the cohere provider: NONE, START or END) in the model's words.
 * Bedrock's default is NONE, an error for a text past the model's token limit, so dropping the field turns a
 * client's "cut it" into a 400. Embed v4 on Bedrock spells the ends LEFT and RIGHT
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v4.html), v3 START and END.
 */
function cohereTruncate(request: EmbeddingsRequest, modelId: string): string | undefined {
  const value = request.truncate;
  if (value === undefined || value === null) return undefined;
  const upper = typeof value === 'string' ? value.toUpperCase() : '';
  if (upper !== 'NONE' && upper !== 'START' && upper !== 'END') throw bad('truncate must be one of NONE, START, END.', 'truncate');
  if (cohereNativeSize(modelId) !== null || upper === 'NONE') return upper;
  return upper === 'START' ? 'LEFT' : 'RIGHT';
}

/** The InvokeModel body for an embeddings request, chosen by the model id. */
export function embeddingsBody(request: EmbeddingsRequest, modelId: string): Record<string, unknown> {
  const model = modelOf(modelId);
  const texts = textsOf(request);
  const dimensions = request.dimensions;
  if (model === 'titan-v2' || model === 'titan-v1') {
    // InvokeModel takes one inputText per call and the adapter contract is one upstream request per attempt,
    // so several texts would need several calls: refused rather than split behind the pipeline's back.
    if (texts.length !== 1) {
      throw bad(`${modelId} embeds one text per request; send the texts one at a time (or use a Cohere Embed model, which takes up to ${COHERE_MAX_TEXTS}).`, 'input');
    }
    if (model === 'titan-v1') {
      if (dimensions !== undefined) throw bad(`${modelId} has a fixed vector size; 'dimensions' is supported by amazon.titan-embed-text-v2:0 (256, 512 or 1024).`, 'dimensions');
      return { inputText: texts[0] };
    }
    // Titan validates dimensions itself (256, 512 or 1024); its 400 reaches the client as it is. `normalize` (Titan's
    // default true) is the client's when it says (an extra, as Cohere's input_type is): false asks for the raw vector.
    const normalize = request.normalize ?? true;
    if (typeof normalize !== 'boolean') throw bad('normalize must be a boolean.', 'normalize');
    return { inputText: texts[0], ...(dimensions !== undefined ? { dimensions } : {}), normalize };
  }
  if (texts.length > COHERE_MAX_TEXTS) throw bad(`Cohere Embed on Bedrock takes at most ${COHERE_MAX_TEXTS} texts per request, got ${texts.length}.`, 'input');
  const body: Record<string, unknown> = { texts, input_type: cohereInputType(request), embedding_types: ['float'] };
  const truncate = cohereTruncate(request, modelId);
  if (truncate !== undefined) body.truncate = truncate;
  if (dimensions !== undefined) {
    const native = cohereNativeSize(modelId);
    if (native === null) body.output_dimension = dimensions;
    else if (dimensions !== native) throw bad(`${modelId} returns ${native}-dimension vectors; 'dimensions' cannot change that.`, 'dimensions');
  }
  return body;
}

function isVector(value: unknown): value is number[] {
  return Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'number' && Number.isFinite(item));
}

function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

function response(vectors: number[][], request: EmbeddingsRequest, promptTokens: number): EmbeddingsResponse {
  return {
    object: 'list',
    data: vectors.map((vector, index) => ({ object: 'embedding', index, embedding: encodeEmbedding(vector, request.encoding_format) })),
    model: request.model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

/** Maps an InvokeModel embeddings answer to OpenAI's list, in input order. */
export function embeddingsFromInvoke(body: unknown, provider: string, modelId: string, request: EmbeddingsRequest): EmbeddingsResponse {
  const model = modelOf(modelId);
  if (!isRecord(body)) throw invalid(provider, 'an embeddings answer that is not a JSON object');
  if (model === 'titan-v2' || model === 'titan-v1') {
    if (!isVector(body.embedding)) throw invalid(provider, 'a Titan embeddings answer without an embedding');
    return response([body.embedding], request, tokenCount(body.inputTextTokenCount));
  }
  // `embeddings_by_type` answers carry `{float: [[...]]}`; `embeddings_floats` (no embedding_types) a bare list.
  const embeddings = Array.isArray(body.embeddings) ? body.embeddings : isRecord(body.embeddings) ? body.embeddings.float : undefined;
  const texts = textsOf(request);
  if (!Array.isArray(embeddings) || !embeddings.every(isVector)) throw invalid(provider, 'a Cohere embeddings answer without float embeddings');
  if (embeddings.length !== texts.length) throw invalid(provider, `${embeddings.length} embeddings for ${texts.length} texts`);
  // Bedrock reports Cohere's token count only in the X-Amzn-Bedrock-Input-Token-Count response header, which
  // this transform does not see (it gets the parsed body), so the count is estimated with the gateway's tokenizer.
  const estimated = texts.reduce((sum, text) => sum + countTextTokens(text), 0);
  return withEstimatedUsage(response(embeddings, request, estimated));
}
