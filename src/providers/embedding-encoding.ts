import type { EmbeddingsResponse } from '../core/canonical.js';

/**
 * Providers without OpenAI's `encoding_format` answer floats; a client that asked for base64 (the official
 * OpenAI SDKs do by default) gets the little-endian float32 bytes OpenAI sends, base64-encoded.
 */
export function encodeEmbedding(vector: number[], format: 'float' | 'base64' | undefined): number[] | string {
  if (format !== 'base64') return vector;
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/** Answers whose usage an adapter counted with the gateway's tokenizer because the upstream reported none. */
const estimatedUsage = new WeakSet<EmbeddingsResponse>();

/**
 * Says that `response.usage` is the gateway's count, not the upstream's: the client still gets it, and the spend stage
 * counts the input itself (the same count, see promptTokensOf) and logs it as estimated.
 */
export function withEstimatedUsage(response: EmbeddingsResponse): EmbeddingsResponse {
  estimatedUsage.add(response);
  return response;
}

export function hasEstimatedUsage(response: EmbeddingsResponse): boolean {
  return estimatedUsage.has(response);
}

/** A base64 vector (little-endian float32, as OpenAI writes it) as numbers. */
export function decodeEmbedding(base64: string): number[] {
  const bytes = Buffer.from(base64, 'base64');
  const out: number[] = [];
  for (let i = 0; i + 4 <= bytes.length; i += 4) out.push(bytes.readFloatLE(i));
  return out;
}

/**
 * Puts every vector of an answer in the encoding the client asked for (`base64`, else floats: OpenAI's default).
 * OpenAI-compatible servers do not all honour `encoding_format` (Ollama's /v1/embeddings answers float arrays
 * to a base64 request, https://github.com/ollama/ollama/issues/6934), and the OpenAI SDKs, which ask for
 * base64 by default, then read the floats as base64 and decode garbage. True when a vector was re-encoded.
 */
export function reencodeEmbeddings(response: EmbeddingsResponse, format: 'float' | 'base64' | undefined): boolean {
  let changed = false;
  for (const item of response.data) {
    if (format === 'base64' && Array.isArray(item.embedding)) {
      item.embedding = encodeEmbedding(item.embedding, 'base64');
      changed = true;
    } else if (format !== 'base64' && typeof item.embedding === 'string') {
      item.embedding = decodeEmbedding(item.embedding);
      changed = true;
    }
  }
  return changed;
}
