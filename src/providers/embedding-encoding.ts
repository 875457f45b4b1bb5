/**
 * Providers without OpenAI's `encoding_format` answer floats; a client that asked for base64 (the official
 * OpenAI SDKs do by default) gets the little-endian float32 bytes OpenAI sends, base64-encoded.
 */
export function encodeEmbedding(vector: number[], format: 'float' | 'base64' | undefined): number[] | string {
  if (format !== 'base64') return vector;
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}
