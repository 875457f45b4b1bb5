import { countPromptTokens } from '../../tokens/tokenizer.js';
import { invalidArgument } from './errors.js';
import { canonicalMessages, canonicalTools } from './request.js';
import { field } from '../../wire/gemini/shapes.js';
import { isRecord } from '../../core/is-record.js';

/**
 * `models.countTokens` for a body of `contents`, or of a whole `generateContentRequest` (with its system
 * instruction and tools). The count is an ESTIMATE made with tollgate's tokenizer (o200k_base, OpenAI's way of
 * counting a chat prompt), not the target model's own count: no upstream is called, whatever the model.
 */
export function estimateGeminiTokens(body: unknown): number {
  if (!isRecord(body)) throw invalidArgument('Invalid JSON payload received. Expected an object (CountTokensRequest).');
  const inner = field(body, 'generateContentRequest');
  const request = isRecord(inner) ? inner : body;
  const contents = request.contents;
  if (!Array.isArray(contents) || contents.length === 0) throw invalidArgument('* CountTokensRequest.contents: contents is not specified', 'contents');
  // Read leniently: what the canonical form cannot express (built-in tools, code execution parts) is left out of
  // the estimate instead of refusing a request that a Gemini provider takes as it is.
  const lenient = { geminiFields: false, untranslatable: [] };
  const messages = canonicalMessages(contents, field(request, 'systemInstruction'), lenient);
  const tools = canonicalTools(request.tools, lenient);
  return countPromptTokens(messages, tools.length > 0 ? tools : undefined);
}
