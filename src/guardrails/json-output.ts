import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';

/** Compiled validators by schema text: a client sends the same schema again and again; at most this many are kept. */
const MAX_VALIDATORS = 200;
const validators = new Map<string, ValidateFunction | Error>();
const draft7 = new Ajv({ strict: false, allErrors: false, validateSchema: false });
const draft2020 = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });

/** The JSON Schema a request's `response_format` asks the answer to follow, or null when it asks for none. */
export function requestedSchema(responseFormat: unknown): Record<string, unknown> | null {
  if (typeof responseFormat !== 'object' || responseFormat === null) return null;
  const format = responseFormat as { type?: unknown; json_schema?: { schema?: unknown } };
  if (format.type !== 'json_schema') return null;
  const schema = format.json_schema?.schema;
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? (schema as Record<string, unknown>) : null;
}

function validatorFor(schema: Record<string, unknown>): ValidateFunction | Error {
  const text = JSON.stringify(schema);
  let found = validators.get(text);
  if (!found) {
    try {
      const engine = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? draft2020 : draft7;
      found = engine.compile(schema);
    } catch (err) {
      found = err instanceof Error ? err : new Error(String(err));
    }
    if (validators.size >= MAX_VALIDATORS) validators.delete(validators.keys().next().value as string);
    validators.set(text, found);
  }
  return found;
}

/** Why an answer's text is not valid against the schema, or null when it is (a schema ajv cannot compile passes). */
export function schemaProblem(schema: Record<string, unknown>, text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the answer is not JSON';
  }
  const validate = validatorFor(schema);
  if (validate instanceof Error) return null;
  if (validate(value)) return null;
  const first = validate.errors?.[0];
  return first ? `${first.instancePath || '/'} ${first.message ?? 'is invalid'}` : 'the answer does not match the schema';
}
