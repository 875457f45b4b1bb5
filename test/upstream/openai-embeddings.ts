// OpenAI's embeddings endpoint: validation as the API does it, deterministic vectors (the same text always
// gives the same vector, different texts different ones), float or base64 encoding, and token usage.
import { createHash } from 'node:crypto';
import type { RequestProblem } from './openai-errors.js';
import { countWords, isRecord } from './openai-request.js';

const DEFAULT_DIMENSIONS = 8;
const MAX_DIMENSIONS = 3072;

export type EmbeddingsResult = { ok: true; json: string } | { ok: false; problem: RequestProblem };

/**
 * A deterministic unit vector derived from the text's sha256: the same text always gives the same vector,
 * different texts different ones. Every scripted provider's embeddings use it.
 */
export function unitVectorOf(text: string, dimensions: number): number[] {
  const out: number[] = [];
  let block = createHash('sha256').update(text).digest();
  for (let i = 0; i < dimensions; i++) {
    if (i > 0 && i % 16 === 0) block = createHash('sha256').update(block).digest();
    out.push((block.readUInt16LE((i % 16) * 2) / 65535) * 2 - 1);
  }
  const norm = Math.hypot(...out) || 1;
  return out.map((value) => value / norm);
}

function base64Of(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

export function answerEmbeddings(body: unknown): EmbeddingsResult {
  if (!isRecord(body)) return { ok: false, problem: { message: 'The request body must be a JSON object.', param: null, code: null } };
  if (typeof body.model !== 'string' || body.model === '') {
    return { ok: false, problem: { message: 'you must provide a model parameter', param: null, code: null } };
  }
  const input = body.input;
  const items: Array<string | number[]> = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((n) => typeof n === 'number') ? [input as number[]] : Array.isArray(input) ? (input as Array<string | number[]>) : [];
  if (items.length === 0 || items.some((item) => item === '' || (Array.isArray(item) && item.length === 0))) {
    return { ok: false, problem: { message: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", param: null, code: null } };
  }
  // As the API does: a positive integer no larger than the model's native size (3072 for the largest model).
  if (body.dimensions !== undefined && !(Number.isInteger(body.dimensions) && (body.dimensions as number) >= 1 && (body.dimensions as number) <= MAX_DIMENSIONS)) {
    return { ok: false, problem: { message: `Invalid value for 'dimensions' = ${JSON.stringify(body.dimensions)}. Must be an integer from 1 to ${MAX_DIMENSIONS}.`, param: 'dimensions', code: 'invalid_value' } };
  }
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : DEFAULT_DIMENSIONS;
  const base64 = body.encoding_format === 'base64';
  let tokens = 0;
  const data = items.map((item, index) => {
    const text = typeof item === 'string' ? item : item.join(' ');
    tokens += typeof item === 'string' ? Math.max(1, countWords(item)) : item.length;
    const vector = unitVectorOf(text, dimensions);
    return { object: 'embedding', index, embedding: base64 ? base64Of(vector) : vector };
  });
  return { ok: true, json: JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }) };
}
