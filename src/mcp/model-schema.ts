import { isRecord } from '../core/is-record.js';

type Schema = Record<string, unknown>;

/**
 * Keywords model APIs refuse at the top of a function's parameters, with a 400 for the whole request: OpenAI ("schema
 * must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level"), Anthropic
 * ("input_schema does not support oneOf, allOf, or anyOf at the top level"), and Bedrock's and Vertex's Claude alike.
 * MCP allows them, and servers use them to say "one of these fields".
 */
const REFUSED_AT_TOP = ['oneOf', 'anyOf', 'allOf', 'enum', 'not'] as const;

function variants(list: unknown): Schema[] {
  return Array.isArray(list) ? list.filter(isRecord) : [];
}

function requiredOf(schema: Schema): string[] {
  return Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
}

/**
 * An MCP tool's input schema as a model is offered it: as the server gave it, unless it has a keyword model APIs
 * refuse at its top. Then it is one object schema: its own properties, then each variant's (the first description
 * of a field wins), required what it and every `allOf` part require; what an `anyOf` / `oneOf` variant requires is
 * not (the model may take either shape). The server still checks the arguments against its own schema, and a call it
 * refuses is a tool error the model reads.
 */
export function modelToolSchema(schema: Schema): Schema {
  if (schema.type === 'object' && !REFUSED_AT_TOP.some((key) => schema[key] !== undefined)) return schema;
  const { oneOf, anyOf, allOf, enum: _enum, not: _not, ...rest } = schema;
  // A Map, then fromEntries: a field named like one of Object's members (`__proto__`) stays a field.
  const properties = new Map<string, unknown>();
  const required = new Set(requiredOf(rest));
  const merge = (part: Schema): void => {
    if (isRecord(part.properties)) for (const [name, property] of Object.entries(part.properties)) if (!properties.has(name)) properties.set(name, property);
  };
  merge(rest);
  for (const part of variants(allOf)) {
    merge(part);
    for (const name of requiredOf(part)) required.add(name);
  }
  for (const variant of [...variants(anyOf), ...variants(oneOf)]) merge(variant);
  const { required: _required, ...others } = rest;
  return { ...others, type: 'object', properties: Object.fromEntries(properties), ...(required.size > 0 ? { required: [...required] } : {}) };
}
