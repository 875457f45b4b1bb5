import type { EmbeddingsRequest } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { modelNameError } from '../model-name-check.js';
import { gatewayError } from '../../core/errors.js';

/** OpenAI's own limit on inputs per request. */
const MAX_INPUTS = 2048;

const isTokenArray = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((item) => Number.isInteger(item) && item >= 0);

/** Checks an embeddings request the way OpenAI does for the fields tollgate depends on. */
export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (!isRecord(body)) throw gatewayError('invalid_body', 'The request body must be a JSON object.');
  const { model, input } = body;
  // As the chat route says it: a model that is missing, and one that is not a string, are different mistakes.
  if (model === undefined || model === null || model === '') {
    throw gatewayError('missing_required_parameter', "Missing required parameter: 'model'.", { param: 'model' });
  }
  if (typeof model !== 'string') throw gatewayError('invalid_type', "Invalid type for 'model': expected a string.", { param: 'model' });
  const badName = modelNameError(model);
  if (badName !== null) throw gatewayError('invalid_model_name', badName, { param: 'model' });
  if (input === undefined || input === null) throw gatewayError('missing_required_parameter', "Missing required parameter: 'input'.", { param: 'input' });
  const valid =
    (typeof input === 'string' && input !== '') ||
    isTokenArray(input) ||
    (Array.isArray(input) && input.length > 0 && input.length <= MAX_INPUTS && (input.every((item) => typeof item === 'string' && item !== '') || input.every(isTokenArray)));
  if (!valid) {
    throw gatewayError('invalid_value', `Invalid 'input': expected a non-empty string, an array of up to ${MAX_INPUTS} non-empty strings, or token arrays.`, { param: 'input' });
  }
  if (body.encoding_format !== undefined && body.encoding_format !== 'float' && body.encoding_format !== 'base64') {
    throw gatewayError('invalid_value', "Invalid 'encoding_format': expected 'float' or 'base64'.", { param: 'encoding_format' });
  }
  if (body.dimensions !== undefined && !(Number.isInteger(body.dimensions) && (body.dimensions as number) > 0)) {
    throw gatewayError('invalid_value', "Invalid 'dimensions': expected a positive integer.", { param: 'dimensions' });
  }
  return body as EmbeddingsRequest;
}
