import type { GatewayError } from '../../core/errors.js';
import type { EmbeddingsRequest, EmbeddingsResponse } from '../../core/canonical.js';
import { countTextTokens } from '../../tokens/tokenizer.js';
import { encodeEmbedding, withEstimatedUsage } from '../embedding-encoding.js';
import { modelPath, modelUrlPath } from './url.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

/**
 * OpenAI embeddings ⇄ Gemini `models.batchEmbedContents`
 * (`POST {base}/models/{model}:batchEmbedContents`, https://ai.google.dev/api/embeddings).
 *
 * Each input text becomes one EmbedContentRequest `{model: 'models/<id>', content: {parts: [{text}]}}`; the
 * inner `model` must name the same model as the URL. The answer `{embeddings: [{values}]}` keeps the order of
 * the requests. Gemini takes at most 100 requests per batch and rejects more with a 400.
 */

/** Gemini's limit: "BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch". */
export const GEMINI_MAX_EMBED_INPUTS = 100;

/** The input texts; token arrays are OpenAI tokenizer ids, which Gemini cannot read. */
export function geminiEmbeddingTexts(request: EmbeddingsRequest): string[] {
  const { input } = request;
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === 'string')) return input as string[];
  throw gatewayError('invalid_value', "Gemini embeddings take text only: 'input' must be a string or an array of strings, not token arrays (OpenAI tokenizer ids mean nothing to Gemini).", { param: 'input' });
}

/** Gemini's optional task type, for clients that send it as an extra field (`task_type` or `taskType`). */
function taskType(request: EmbeddingsRequest): string | undefined {
  const value = request.task_type ?? request.taskType;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw gatewayError('invalid_value', "Invalid 'task_type': expected a Gemini task type such as 'RETRIEVAL_DOCUMENT'.", { param: 'task_type' });
  }
  return value.toUpperCase();
}

/**
 * Gemini's optional document titles (used with RETRIEVAL_DOCUMENT, https://ai.google.dev/api/embeddings#EmbedContentRequest),
 * from the `title` extra: one string for every input, or one entry per input (a string, or null for none).
 */
function titles(request: EmbeddingsRequest, count: number): Array<string | null> {
  const value = request.title;
  if (value === undefined || value === null) return Array<string | null>(count).fill(null);
  if (typeof value === 'string') return Array<string | null>(count).fill(value === '' ? null : value);
  if (Array.isArray(value) && value.length === count && value.every((item) => item === null || typeof item === 'string')) {
    return (value as Array<string | null>).map((item) => (item === '' ? null : item));
  }
  throw gatewayError('invalid_value', "Invalid 'title': expected a string, or one string (or null) per input.", { param: 'title' });
}

/** The batchEmbedContents body for an OpenAI embeddings request. `user` and `encoding_format` have no Gemini field. */
export function toGeminiEmbedRequest(request: EmbeddingsRequest, model: string): { requests: Record<string, unknown>[] } {
  const texts = geminiEmbeddingTexts(request);
  if (texts.length > GEMINI_MAX_EMBED_INPUTS) {
    throw gatewayError('invalid_value', `Gemini embeds at most ${GEMINI_MAX_EMBED_INPUTS} inputs per request; this request has ${texts.length}. Split it into smaller batches.`, { param: 'input' });
  }
  const name = modelPath(model);
  const task = taskType(request);
  const titled = titles(request, texts.length);
  return {
    requests: texts.map((text, i) => ({
      model: name,
      content: { parts: [{ text }] },
      ...(request.dimensions !== undefined ? { outputDimensionality: request.dimensions } : {}),
      ...(task !== undefined ? { taskType: task } : {}),
      ...(titled[i] !== null ? { title: titled[i] } : {}),
    })),
  };
}

function invalidBody(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

function promptTokenCount(body: Record<string, unknown>): number | null {
  const usage = body.usageMetadata;
  if (!isRecord(usage)) return null;
  const count = usage.promptTokenCount;
  return typeof count === 'number' && Number.isFinite(count) && count >= 0 ? count : null;
}

/** A batchEmbedContents answer as OpenAI's embeddings list, vectors encoded as the client asked. */
export function embeddingsFromGemini(body: unknown, request: EmbeddingsRequest, provider: string): EmbeddingsResponse {
  if (!isRecord(body) || !Array.isArray(body.embeddings)) throw invalidBody(provider, 'an embeddings answer without embeddings');
  const texts = geminiEmbeddingTexts(request);
  if (body.embeddings.length !== texts.length) {
    throw invalidBody(provider, `${body.embeddings.length} embeddings for ${texts.length} inputs`);
  }
  const data = body.embeddings.map((entry: unknown, index: number) => {
    const values = isRecord(entry) ? entry.values : undefined;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number')) throw invalidBody(provider, `an embedding without values at index ${index}`);
    return { object: 'embedding' as const, index, embedding: encodeEmbedding(values as number[], request.encoding_format) };
  });
  // The Gemini API documents an optional `usageMetadata.promptTokenCount` (EmbeddingUsageMetadata) on this
  // answer, but older models and API surfaces leave it out. Then the prompt tokens are an ESTIMATE made with
  // tollgate's tokenizer (o200k_base), not Gemini's own count, so budgets and cost still see the input.
  const reported = promptTokenCount(body);
  const prompt = reported ?? texts.reduce((sum, text) => sum + countTextTokens(text), 0);
  const response: EmbeddingsResponse = { object: 'list', data, model: request.model, usage: { prompt_tokens: prompt, total_tokens: prompt } };
  return reported === null ? withEstimatedUsage(response) : response;
}

/** `{base}/models/{model}:batchEmbedContents`. */
export function batchEmbedContentsUrl(baseUrl: string, model: string): string {
  const base = baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl;
  return `${base}/${modelUrlPath(model)}:batchEmbedContents`;
}
