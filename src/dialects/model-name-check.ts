import { quoteInput } from '../core/quote-input.js';

/**
 * The one rule for model names, whatever the dialect. A model name travels into upstream URLs and bodies, into
 * response headers (`x-tollgate-model`) and into log lines, so it must be something every one of those can
 * carry: printable ASCII, of a bounded length. Real model names (`openai/gpt-4o-mini`,
 * `bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0`, a Bedrock ARN, a Hugging Face repo id) all are.
 * A character a header cannot hold (NUL, CR/LF, anything above U+007E) would otherwise only fail when the answer
 * is written, long after the upstream was called.
 */

/** Longest model name accepted: well above any provider's (Bedrock ARNs and Hugging Face repo ids are under 200). */
export const MAX_MODEL_NAME_LENGTH = 256;

/** How many characters of a refused name an error message quotes. */
const QUOTED = 64;

function describeChar(code: number): string {
  const hex = code.toString(16).toUpperCase().padStart(4, '0');
  if (code === 0x0d || code === 0x0a) return `a line break (U+${hex})`;
  if (code < 0x20 || code === 0x7f) return `a control character (U+${hex})`;
  return `the character U+${hex}`;
}

/**
 * Why `name` cannot be a model name, as the end of a sentence ("... holds a line break (U+000A) at position 7"),
 * or null when it can. One pass over the characters, no regular expression, so a huge name costs one scan.
 */
export function modelNameProblem(name: string): string | null {
  if (name.length > MAX_MODEL_NAME_LENGTH) return `is ${name.length} characters long; the limit is ${MAX_MODEL_NAME_LENGTH}`;
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) return `holds ${describeChar(code)} at position ${i}; model names are printable ASCII`;
  }
  if (name.trim() !== name) return 'starts or ends with a space';
  return null;
}

/** A refused name as an error message may quote it: its start only (quoteInput), with anything unprintable escaped. */
export function quotedModelName(name: string): string {
  return JSON.stringify(quoteInput(name, QUOTED));
}

/**
 * The sentence a dialect puts in its 400 for a refused model name, or null when the name is fine.
 * Each dialect wraps it in its own error shape.
 */
export function modelNameError(name: string, what = 'model'): string | null {
  const problem = modelNameProblem(name);
  if (problem === null) return null;
  return `Invalid '${what}': the model name ${quotedModelName(name)} ${problem}.`;
}
