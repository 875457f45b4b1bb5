import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';
import { modelNameError } from '../model-name-check.js';
import { checkResponsesFields } from './check-fields.js';

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
 * Checks what the gateway needs before translating (OpenAI's messages and params), and the types and ranges of the
 * documented fields it reads or forwards (check-fields.ts), leaving the rest to the provider's own validation.
 * `background: true` is refused whatever the target: tollgate runs no response in the background (a client would
 * poll GET /v1/responses/{id} for one that never started).
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
  checkResponsesFields(body);
  if (body.background === true) {
    throw gatewayError('unsupported_parameter', "Unsupported parameter: 'background'. tollgate runs no response in the background; send the request without background (stream it for a long task).", { param: 'background' });
  }
  return body as ResponsesRequest;
}
