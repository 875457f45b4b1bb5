import { GatewayError } from '../../errors.js';
import type { EmbeddingsRequest } from '../../core/canonical.js';
import { isRecord } from '../../is-record.js';
import { modelNameError } from '../model-name-check.js';

/** OpenAI's own limit on inputs per request. */
const MAX_INPUTS = 2048;

const isTokenArray = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((item) => Number.isInteger(item) && item >= 0);

/** Checks an embeddings request the way OpenAI does for the fields tollgate depends on. */
export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (!isRecord(body)) throw GatewayError.badRequest('The request body must be a JSON object.', null, 'invalid_body');
  const { model, input } = body;
  if (typeof model !== 'string' || model === '') {
    throw GatewayError.badRequest("Missing required parameter: 'model'.", 'model', model === undefined ? 'missing_required_parameter' : 'invalid_type');
  }
  const badName = modelNameError(model);
  if (badName !== null) throw GatewayError.badRequest(badName, 'model', 'invalid_model_name');
  if (input === undefined || input === null) throw GatewayError.badRequest("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  const valid =
    (typeof input === 'string' && input !== '') ||
    isTokenArray(input) ||
    (Array.isArray(input) && input.length > 0 && input.length <= MAX_INPUTS && (input.every((item) => typeof item === 'string' && item !== '') || input.every(isTokenArray)));
  if (!valid) {
    throw GatewayError.badRequest(
      `Invalid 'input': expected a non-empty string, an array of up to ${MAX_INPUTS} non-empty strings, or token arrays.`,
      'input',
      'invalid_value',
    );
  }
  if (body.encoding_format !== undefined && body.encoding_format !== 'float' && body.encoding_format !== 'base64') {
    throw GatewayError.badRequest("Invalid 'encoding_format': expected 'float' or 'base64'.", 'encoding_format', 'invalid_value');
  }
  if (body.dimensions !== undefined && !(Number.isInteger(body.dimensions) && (body.dimensions as number) > 0)) {
    throw GatewayError.badRequest("Invalid 'dimensions': expected a positive integer.", 'dimensions', 'invalid_value');
  }
  return body as EmbeddingsRequest;
}
