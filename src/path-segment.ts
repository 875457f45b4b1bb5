import type { GatewayError } from './core/errors.js';
import { quoteInput } from './core/quote-input.js';
import { gatewayError } from './core/errors.js';

/**
 * Model and deployment names go into upstream URLs (Gemini, Vertex, Azure, Bedrock). There a `..` steps out of
 * the model's place once the URL is normalised, `?` and `#` cut the path short, `%` smuggles any of them in
 * encoded, and a backslash or control character is read differently by different parsers: any of them would let
 * a request reach another path on the provider, with the operator's credential. No real model name holds one.
 */
const UNSAFE_CHARS = /[?#%\\]/;

/** What in `name` could change which upstream URL it reaches, as the end of a sentence, or null when nothing. */
export function urlPathProblem(name: string): string | null {
  if (name.trim() === '') return 'is empty';
  // A whole `.` is the current directory to a URL parser: `/deployments/./chat` is `/deployments/chat`.
  if (name === '.') return "is '.'";
  if (name.includes('..')) return "holds '..'";
  const unsafe = UNSAFE_CHARS.exec(name)?.[0];
  if (unsafe !== undefined) return `holds '${unsafe}'`;
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return `holds a control character (U+${code.toString(16).toUpperCase().padStart(4, '0')})`;
  }
  return null;
}

/** Whether `name` is safe to place in an upstream URL path (see {@link urlPathProblem}). */
export function isUrlPathSafe(name: string): boolean {
  return urlPathProblem(name) === null;
}

/** The 400 for a name that cannot go into a provider's URL. */
export function unsafeModelName(name: string, problem: string, provider: string): GatewayError {
  return gatewayError('invalid_model_name', `Invalid 'model': the model name '${quoteInput(name, 100)}' ${problem}, which cannot be placed in ${provider}'s URL.`, { param: 'model' });
}

/**
 * `name` as ONE path segment of an upstream URL: refused (400, param `model`) when it holds anything that could
 * step out of the segment, otherwise percent-encoded (a `/` inside becomes `%2F`, as a Bedrock ARN needs). `@`
 * stays as it is: it is legal in a path segment and Vertex's Claude versions use it (`claude-sonnet-4@20250514`).
 */
export function pathSegment(name: string, provider: string): string {
  const problem = urlPathProblem(name);
  if (problem !== null) throw unsafeModelName(name, problem, provider);
  return encodeURIComponent(name).replace(/%40/g, '@');
}
