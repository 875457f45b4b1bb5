import type { EmbeddingsRequest, EmbeddingsResponse } from '../../core/canonical.js';
import { invalidArgument } from './errors.js';
import { field, type Json } from '../../wire/gemini/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { cohereInputType } from './embed-input-type.js';

/**
 * Gemini's embedContent / batchEmbedContents → the canonical (OpenAI) embeddings request, and the answer back.
 * The inverse of src/providers/gemini/embeddings.ts. Each content's text parts are one input text (joined by
 * newlines); vectors are asked for as floats, Gemini's only encoding.
 */

interface EmbedItem {
  text: string;
  dimensions: number | undefined;
  taskType: string | undefined;
  /** The document's title (Gemini uses it with RETRIEVAL_DOCUMENT). */
  title: string | undefined;
}

function embedItem(request: unknown, where: string): EmbedItem {
  if (!isRecord(request)) throw invalidArgument(`Invalid value at '${where}'`, where);
  const content = request.content;
  const parts = isRecord(content) ? content.parts : undefined;
  if (!Array.isArray(parts) || parts.length === 0) throw invalidArgument(`* ${where}.content.parts: contents.parts must not be empty.`, `${where}.content`);
  const texts = parts.map((part, j) => {
    if (!isRecord(part) || typeof part.text !== 'string') throw invalidArgument(`* ${where}.content.parts[${j}]: only text parts can be embedded.`, `${where}.content.parts[${j}]`);
    return part.text;
  });
  const text = texts.join('\n');
  if (text === '') throw invalidArgument('Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.', `${where}.content`);
  const dims = field(request, 'outputDimensionality');
  if (dims !== undefined && dims !== null && !(Number.isInteger(dims) && (dims as number) > 0)) {
    throw invalidArgument(`Invalid value at '${where}.output_dimensionality' (TYPE_INT32), ${JSON.stringify(dims)}`, `${where}.outputDimensionality`);
  }
  const task = field(request, 'taskType');
  const title = request.title;
  if (title !== undefined && title !== null && typeof title !== 'string') {
    throw invalidArgument(`Invalid value at '${where}.title' (TYPE_STRING), ${JSON.stringify(title)}`, `${where}.title`);
  }
  return {
    text,
    dimensions: typeof dims === 'number' ? dims : undefined,
    taskType: typeof task === 'string' && task !== '' ? task : undefined,
    title: typeof title === 'string' && title !== '' ? title : undefined,
  };
}

/** The requests of an embedContent body (one) or a batchEmbedContents body (`requests`). */
export function readEmbedRequests(body: unknown, batch: boolean): EmbedItem[] {
  if (!isRecord(body)) throw invalidArgument('Invalid JSON payload received. Expected an object.');
  if (!batch) return [embedItem(body, 'EmbedContentRequest')];
  const requests = body.requests;
  if (!Array.isArray(requests) || requests.length === 0) throw invalidArgument('* BatchEmbedContentsRequest.requests: requests is not specified', 'requests');
  return requests.map((request, i) => embedItem(request, `BatchEmbedContentsRequest.requests[${i}]`));
}

/** One value shared by all requests, since the canonical request has one of each; differing values are refused. */
function shared<T>(items: EmbedItem[], pick: (item: EmbedItem) => T | undefined, name: string): T | undefined {
  const values = new Set(items.map(pick));
  if (values.size > 1) throw invalidArgument(`* BatchEmbedContentsRequest.requests: every request of a batch must have the same ${name} here.`, 'requests');
  return [...values][0];
}

/**
 * The canonical embeddings request for `model`. The task type and the titles go along (as the `task_type` and
 * `title` extras the Gemini adapter reads) only to Gemini-format targets: other providers forward extras verbatim
 * and would refuse them. `title` is one string when every input has the same one (the SDK's `config.title`), else
 * one entry per input (null for an input without one), as a batch may title each document. For a Cohere-reading
 * target (`inputTypeField`) the task type goes as Cohere's `input_type` instead.
 */
export function canonicalEmbeddingsRequest(items: EmbedItem[], model: string, geminiFields: boolean, inputTypeField = false): EmbeddingsRequest {
  const request: EmbeddingsRequest = { model, input: items.map((item) => item.text), encoding_format: 'float' };
  const dimensions = shared(items, (item) => item.dimensions, 'outputDimensionality');
  if (dimensions !== undefined) request.dimensions = dimensions;
  const task = shared(items, (item) => item.taskType, 'taskType');
  if (task !== undefined && geminiFields) request.task_type = task;
  const inputType = task !== undefined && inputTypeField ? cohereInputType(task) : undefined;
  if (inputType !== undefined) request.input_type = inputType;
  const titles = items.map((item) => item.title ?? null);
  if (geminiFields && titles.some((title) => title !== null)) request.title = titles.every((title) => title === titles[0]) ? titles[0] : titles;
  return request;
}

function values(embedding: number[] | string): number[] {
  if (Array.isArray(embedding)) return embedding;
  // A base64 answer (little-endian float32) from a provider that ignored encoding_format: decoded, not refused.
  const bytes = Buffer.from(embedding, 'base64');
  const out: number[] = [];
  for (let i = 0; i + 4 <= bytes.length; i += 4) out.push(bytes.readFloatLE(i));
  return out;
}

/**
 * The canonical answer as embedContent's `{embedding: {values}}` or batchEmbedContents' `{embeddings: [{values}]}`,
 * with the input's token count as Gemini reports it (EmbeddingUsageMetadata) when the answer has one.
 */
export function geminiEmbeddingsResponse(response: EmbeddingsResponse, batch: boolean): Json {
  const embeddings = [...response.data].sort((a, b) => a.index - b.index).map((entry) => ({ values: values(entry.embedding) }));
  const body: Json = batch ? { embeddings } : { embedding: embeddings[0] ?? { values: [] } };
  const prompt = (response.usage as EmbeddingsResponse['usage'] | undefined)?.prompt_tokens;
  if (typeof prompt === 'number' && Number.isSafeInteger(prompt) && prompt >= 0) body.usageMetadata = { promptTokenCount: prompt };
  return body;
}
