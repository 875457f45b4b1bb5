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

/**
 * What the subset cannot hold: a `$ref` that cannot be inlined (one back into a schema it is inside, recursion, or to
 * no schema in it), or an enum of other values than strings (the subset's `enum` is a list of strings: Gemini refuses
 * `Literal[4, 6, 8]`'s `[4, 6, 8]` with "Invalid value at '...enum[0]' (TYPE_STRING), 4").
 */
class NotInlinable extends Error {}

/** A reference's token with its percent-escapes decoded; one that is not valid percent-encoding names nothing. */
function decodedToken(token: string, ref: string): string {
  try {
    return decodeURIComponent(token);
  } catch {
    throw new NotInlinable(ref);
  }
}

/** The schema a local reference (`#`, `#/$defs/Address`, any JSON pointer into the root) points to. */
function resolve(root: Record<string, unknown>, ref: string): Record<string, unknown> {
  if (ref !== '#' && !ref.startsWith('#/')) throw new NotInlinable(ref);
  let at: unknown = root;
  for (const token of ref === '#' ? [] : ref.slice(2).split('/')) {
    const key = decodedToken(token, ref).replaceAll('~1', '/').replaceAll('~0', '~');
    at = isRecord(at) ? at[key] : Array.isArray(at) ? at[Number(key)] : undefined;
  }
  if (!isRecord(at)) throw new NotInlinable(ref);
  return at;
}

/**
 * The most schema nodes one conversion writes, references inlined: a schema that would take more goes as JSON Schema
 * (see toGeminiSchema), where Gemini resolves its references itself. Real schemas inline to far fewer.
 */
const MAX_INLINED_NODES = 10_000;
/** Nodes written by the conversion under way (conversions are synchronous, one at a time). */
let converted = 0;

/**
 * One schema node in the subset. A `$ref` (what Pydantic emits for every nested model) is replaced by the schema it
 * names, converted in turn, with the keys written beside it (a description) on top; `expanding` holds the
 * references being inlined, so one that comes back to itself is found instead of inlined forever.
 */
function convert(node: unknown, root: Record<string, unknown>, expanding: readonly string[]): unknown {
  if (!isRecord(node)) return node;
  // Inlining copies a schema for each reference to it, so references to references multiply: 30 definitions each
  // naming the next twice are 2^30 copies (from a 2 KB request: minutes of the event loop, then out of memory).
  if (++converted > MAX_INLINED_NODES) throw new NotInlinable('size');
  if (typeof node.$ref === 'string') {
    const { $ref: ref, ...beside } = node;
    if (expanding.includes(ref)) throw new NotInlinable(ref);
    const target = convert(resolve(root, ref), root, [...expanding, ref]) as Record<string, unknown>;
    // Keys beside the reference (a field's own description) describe this use of the schema, so they win.
    return Object.keys(beside).length === 0 ? target : { ...target, ...(convert(beside, root, expanding) as Record<string, unknown>) };
  }
  const schema = node;
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
  if (Array.isArray(out.enum) && out.enum.some((value) => typeof value !== 'string')) throw new NotInlinable('enum');
  if (out.type === 'string' && typeof out.format === 'string' && !STRING_FORMATS.has(out.format)) delete out.format;
  if (isRecord(schema.properties)) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, sub]) => [name, convert(sub, root, expanding)]));
  }
  if (schema.items !== undefined) out.items = convert(Array.isArray(schema.items) ? schema.items[0] : schema.items, root, expanding);
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants)) out.anyOf = variants.map((variant) => convert(variant, root, expanding));
  return out;
}

/**
 * A JSON schema in Gemini's subset, its local references (`$ref` into `$defs`) inlined, since the subset has no
 * references and a dropped one would leave the nested model's schema empty. Null when the subset cannot hold it (a
 * recursive model, a reference outside the schema, an enum of numbers or booleans, references that would inline to more
 * than MAX_INLINED_NODES nodes): the caller sends the JSON Schema
 * as it is in the fields that take it instead (`responseJsonSchema`, `parametersJsonSchema`).
 */
export function toGeminiSchema(schema: unknown): unknown {
  converted = 0;
  try {
    return convert(schema, isRecord(schema) ? schema : {}, []);
  } catch (err) {
    if (err instanceof NotInlinable) return null;
    throw err;
  }
}

/**
 * A JSON schema as Gemini's JSON Schema fields take it: as it is, but that a sub-schema with `$ref` keeps only its
 * `$` keys, the one form Gemini documents there (Pydantic writes a field's description beside its reference).
 */
export function toGeminiJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toGeminiJsonSchema);
  if (!isRecord(schema)) return schema;
  const entries = Object.entries(schema).filter(([key]) => typeof schema.$ref !== 'string' || key.startsWith('$'));
  return Object.fromEntries(entries.map(([key, value]) => [key, toGeminiJsonSchema(value)]));
}

/**
 * A Gemini `Schema` (OpenAPI 3.0 subset with upper-case types: `{type: 'OBJECT', nullable: true}`) as the JSON
 * Schema OpenAI-format tools and response formats take: types lower-cased, `nullable` folded into the type as
 * `[type, 'null']`, Gemini's ordering hint dropped, its int64 bounds (`minItems: '1'`) as integers, everything
 * else kept. The outbound Gemini adapter's toGeminiSchema is its inverse, so a Gemini client's schema survives the
 * round trip to a Gemini model.
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
      case 'minItems':
      case 'maxItems':
      case 'minLength':
      case 'maxLength':
      case 'minProperties':
      case 'maxProperties':
        // int64 in Google's protobuf JSON, so strings as @google/genai types them ('1'); JSON Schema takes integers.
        out[key] = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
        break;
      default:
        out[key] = value;
    }
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}
