import { modelNameProblem, quotedModelName } from '../model-name-check.js';
import type { RuntimeConfig } from '../../core/config.js';
import { splitModelName } from '../../routing/resolve-target.js';
import { resolveModelName } from '../../routing/bare-model.js';
import { isRouteName } from '../../routing/route-patterns.js';
import { invalidArgument } from './errors.js';

/**
 * The model name the pipeline routes on. Gemini SDK clients send bare Gemini names (`gemini-2.5-flash`), which
 * mean the `gemini` provider unless another configured provider alone serves them (see resolveModelName); a
 * `<provider>/<model>` name or a configured route is taken as it is, so a Gemini-format client can reach any
 * model (`openai/gpt-4o-mini`).
 */
export function canonicalGeminiModel(config: RuntimeConfig, requested: string): string {
  return resolveModelName(config, requested, 'gemini');
}

/** Wire formats whose adapters read Gemini's own extras off the canonical request (thought signatures, task types). */
const GEMINI_AWARE = new Set(['gemini', 'vertex']);

/**
 * Whether Gemini-only extras (a function call's thought signature, an embedding task type) may ride on the
 * canonical request: only for a direct name of a Gemini-format provider. A route may reach a provider that
 * forwards unknown fields verbatim and would refuse them, and the extras are optional, so routes drop them.
 */
export function keepsGeminiFields(config: RuntimeConfig, canonicalName: string): boolean {
  if (isRouteName(config.routes, canonicalName)) return false;
  const parts = splitModelName(canonicalName);
  const provider = parts ? config.providers.get(parts.provider) : undefined;
  return provider !== undefined && GEMINI_AWARE.has(provider.vendor.format);
}

export type GeminiMethod = 'generateContent' | 'streamGenerateContent' | 'embedContent' | 'batchEmbedContents' | 'countTokens';

const METHODS = new Set<string>(['generateContent', 'streamGenerateContent', 'embedContent', 'batchEmbedContents', 'countTokens']);

/**
 * The model a path names before its method (`openai%2Fgpt-4o-mini`, `models/gemini-2.5-flash`): URL-decoded, without
 * the `models/` prefix some clients repeat. A malformed escape (`%ZZ`) is `malformed`'s to answer.
 */
export function modelOfPath(raw: string, malformed: (raw: string) => string): string {
  let model: string;
  try {
    model = decodeURIComponent(raw);
  } catch {
    model = malformed(raw);
  }
  return model.startsWith('models/') ? model.slice('models/'.length) : model;
}

/**
 * The model and method of a path under `models/`: `gemini-2.5-flash:generateContent`. The model may carry a
 * provider (`openai/gpt-4o-mini`, written plainly as the SDK does or URL-encoded as `openai%2Fgpt-4o-mini`) and
 * colons of its own (`bedrock/...-v2:0`), so the method is what follows the last colon. Null for an unknown method.
 */
export function parseModelPath(rest: string): { model: string; method: GeminiMethod } | null {
  const colon = rest.lastIndexOf(':');
  if (colon <= 0) return null;
  const method = rest.slice(colon + 1);
  if (!METHODS.has(method)) return null;
  const model = modelOfPath(rest.slice(0, colon), (raw) => {
    throw invalidArgument(`The model name in the URL is not validly encoded: ${raw}`);
  });
  if (model.trim() === '') throw invalidArgument('The model name in the URL is empty.');
  const badName = modelNameProblem(model);
  if (badName !== null) throw invalidArgument(`The model name in the URL, ${quotedModelName(model)}, ${badName}.`, 'model');
  return { model, method: method as GeminiMethod };
}
