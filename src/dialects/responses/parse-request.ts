import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';
import { modelNameError } from '../model-name-check.js';

/** A Responses API request body after the checks the gateway itself depends on. */
export interface ResponsesRequest {
  model: string;
  input?: unknown;
  stream?: boolean;
  [field: string]: unknown;
}

function invalidType(param: string, expected: string): never {
  throw gatewayError('invalid_type', `Invalid type for '${param}': expected ${expected}.`, { param });
}

/**
 * Checks what the gateway needs before translating (OpenAI's messages and params), leaving the rest to the
 * provider's own validation. `background: true` is refused whatever the target: tollgate runs no response in the
 * background (a client would poll GET /v1/responses/{id} for one that never started).
 */
export function readResponsesRequest(body: unknown): ResponsesRequest {
  if (!isRecord(body)) throw gatewayError('invalid_body', 'The request body must be a JSON object.');
  const { model, input } = body;
  if (model === undefined || model === null || model === '') throw gatewayError('missing_required_parameter', "Missing required parameter: 'model'.", { param: 'model' });
  if (typeof model !== 'string') invalidType('model', 'a string');
  const badName = modelNameError(model);
  if (badName !== null) throw gatewayError('invalid_model_name', badName, { param: 'model' });
  if (input !== undefined && input !== null && typeof input !== 'string' && !Array.isArray(input)) invalidType('input', 'a string or an array of input items');
  if (Array.isArray(input)) {
    input.forEach((item: unknown, i) => {
      if (!isRecord(item)) invalidType(`input[${i}]`, 'an object (an input item such as {"role":"user","content":"..."})');
    });
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') invalidType('stream', 'a boolean');
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string') invalidType('instructions', 'a string');
  // Read by tollgate itself (a stored conversation): another type would be a turn without its history.
  if (body.previous_response_id !== undefined && body.previous_response_id !== null && typeof body.previous_response_id !== 'string') invalidType('previous_response_id', 'a string');
  if (body.tools !== undefined && body.tools !== null && !Array.isArray(body.tools)) invalidType('tools', 'an array');
  if (body.metadata !== undefined && body.metadata !== null && !isRecord(body.metadata)) invalidType('metadata', 'an object');
  const limit = body.max_output_tokens;
  if (limit !== undefined && limit !== null && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)) {
    throw gatewayError('invalid_value', "Invalid 'max_output_tokens': expected an integer greater than or equal to 1.", { param: 'max_output_tokens' });
  }
  if (body.background === true) {
    throw gatewayError('unsupported_parameter', "Unsupported parameter: 'background'. tollgate runs no response in the background; send the request without background (stream it for a long task).", { param: 'background' });
  }
  return body as ResponsesRequest;
}
