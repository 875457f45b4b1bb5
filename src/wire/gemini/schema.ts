import { isRecord } from '../../core/is-record.js';

/** Gemini's `Schema` (an OpenAPI 3.0 subset) and JSON Schema, both ways. */

/**
 * Gemini's `parameters` / `responseSchema` take an OpenAPI 3.0 subset, not JSON Schema: unknown keys such as
 * `additionalProperties`, `$schema` or `$defs` make the whole request fail with 400. So a JSON schema is reduced
 * to the keys Gemini knows, recursively; `type: [x, "null"]` becomes `nullable`, `const` an `enum`, `oneOf` an
 * `anyOf`.
 */
const KEPT = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'required', 'minProperties',
  'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'propertyOrdering', 'default', 'minimum', 'maximum',
]);

/** The only string formats Gemini accepts; others are rejected rather than ignored. */
const STRING_FORMATS = new Set(['enum', 'date-time']);

export function toGeminiSchema(schema: unknown): unknown {
  if (!isRecord(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (KEPT.has(key)) out[key] = value;
  }
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    if (types.length < schema.type.length) out.nullable = true;
    if (types.length === 1) out.type = types[0];
    else delete out.type;
  }
  if (schema.const !== undefined && out.enum === undefined) out.enum = [schema.const];
  if (out.type === 'string' && typeof out.format === 'string' && !STRING_FORMATS.has(out.format)) delete out.format;
  if (isRecord(schema.properties)) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, sub]) => [name, toGeminiSchema(sub)]));
  }
  if (schema.items !== undefined) out.items = toGeminiSchema(Array.isArray(schema.items) ? schema.items[0] : schema.items);
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants)) out.anyOf = variants.map(toGeminiSchema);
  return out;
}

/**
 * A Gemini `Schema` (OpenAPI 3.0 subset with upper-case types: `{type: 'OBJECT', nullable: true}`) as the JSON
 * Schema OpenAI-format tools and response formats take: types lower-cased, `nullable` folded into the type as
 * `[type, 'null']`, Gemini's ordering hint dropped, everything else kept. The outbound Gemini adapter's
 * toGeminiSchema is its inverse, so a Gemini client's schema survives the round trip to a Gemini model.
 */
export function fromGeminiSchema(schema: unknown): unknown {
  if (!isRecord(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    switch (key) {
      case 'type':
        if (typeof value === 'string' && value.toUpperCase() !== 'TYPE_UNSPECIFIED') out.type = value.toLowerCase();
        break;
      case 'properties':
        out.properties = isRecord(value) ? Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, fromGeminiSchema(sub)])) : value;
        break;
      case 'items':
        out.items = fromGeminiSchema(value);
        break;
      case 'anyOf':
        out.anyOf = Array.isArray(value) ? value.map(fromGeminiSchema) : value;
        break;
      case 'nullable':
      case 'propertyOrdering':
        break;
      default:
        out[key] = value;
    }
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}
