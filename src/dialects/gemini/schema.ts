import { isRecord } from '../../core/is-record.js';

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
