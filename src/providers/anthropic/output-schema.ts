import { isRecord } from '../../core/is-record.js';

/**
 * A JSON schema as Claude's structured outputs take it (`output_config.format`, and tools with `strict`). They take
 * a subset of JSON Schema and answer anything outside it with a 400 for the whole request ("For 'integer' type,
 * property 'minimum' is not supported"), while OpenAI's structured outputs take those keywords: a Pydantic model with
 * `Field(ge=0)` works on OpenAI and failed on Claude. This is the transformation Anthropic's own SDKs apply
 * (https://platform.claude.com/docs/en/build-with-claude/structured-outputs, "How SDK transformation works"): the
 * keywords Claude does not take move into the schema's description, as words the model still reads, every object
 * gets `additionalProperties: false`, `oneOf` becomes `anyOf`, and the rest is kept.
 */

/** The string formats Claude's structured outputs take. */
const STRING_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid']);

function isPrimitive(value: unknown): boolean {
  return value === null || typeof value !== 'object';
}

function transform(node: unknown): unknown {
  if (!isRecord(node)) return node;
  const rest: Record<string, unknown> = { ...node };
  const out: Record<string, unknown> = {};
  const take = (key: string): unknown => {
    const value = rest[key];
    delete rest[key];
    return value;
  };
  for (const key of ['$defs', 'definitions']) {
    const defs = take(key);
    if (isRecord(defs)) out[key] = Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, transform(def)]));
  }
  const ref = take('$ref');
  if (ref !== undefined) return { ...out, $ref: ref };
  if (Array.isArray(rest.enum) && rest.enum.length > 0 && rest.enum.every(isPrimitive)) out.enum = take('enum');
  if (rest.const !== undefined && isPrimitive(rest.const)) out.const = take('const');
  const type = take('type');
  // `$schema` names the dialect and constrains nothing.
  take('$schema');
  const anyOf = take('anyOf');
  const oneOf = take('oneOf');
  const allOf = take('allOf');
  const variants = Array.isArray(anyOf) ? anyOf : oneOf;
  if (Array.isArray(variants)) out.anyOf = variants.map(transform);
  else if (Array.isArray(allOf)) out.allOf = allOf.map(transform);
  // A literal (enum, const) says its type itself, as the SDK writes it.
  if (type !== undefined && out.enum === undefined && out.const === undefined) out.type = type;
  for (const key of ['description', 'title']) if (rest[key] !== undefined) out[key] = take(key);
  const types = Array.isArray(type) ? type : [type];
  // Properties without a type describe an object all the same.
  if (type === undefined && isRecord(rest.properties) && out.anyOf === undefined && out.allOf === undefined) {
    out.type = 'object';
    types.push('object');
  }
  if (types.includes('object')) {
    const properties = take('properties');
    out.properties = isRecord(properties) ? Object.fromEntries(Object.entries(properties).map(([name, sub]) => [name, transform(sub)])) : {};
    take('additionalProperties');
    out.additionalProperties = false;
    if (rest.required !== undefined) out.required = take('required');
  }
  if (types.includes('string') && typeof rest.format === 'string' && STRING_FORMATS.has(rest.format)) out.format = take('format');
  if (types.includes('array')) {
    if (rest.items !== undefined) out.items = transform(take('items'));
    if (rest.minItems === 0 || rest.minItems === 1) out.minItems = take('minItems');
  }
  // Everything left (minimum, maxLength, pattern, default, ...) goes into the description, in the SDK's words.
  const left = Object.entries(rest);
  if (left.length > 0) {
    const said = `{${left.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(', ')}}`;
    out.description = typeof out.description === 'string' && out.description !== '' ? `${out.description}\n\n${said}` : said;
  }
  return out;
}

/** The schema in the subset Claude's structured outputs take (a copy; the client's schema is left as it is). */
export function claudeOutputSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return transform(schema) as Record<string, unknown>;
}
