/** A JSON object as the Gemini dialect reads and writes it. */
export type Json = Record<string, unknown>;

/**
 * A field of a Gemini (proto JSON) object: Google's API takes both the lowerCamel name (`maxOutputTokens`, what
 * the SDKs send) and the snake_case one (`max_output_tokens`, what hand-written REST calls often use).
 */
export function field(object: Json, camel: string): unknown {
  const value = object[camel];
  if (value !== undefined) return value;
  return object[camel.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)];
}
