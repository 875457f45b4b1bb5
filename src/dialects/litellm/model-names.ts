/**
 * LiteLLM model names (`together_ai/meta-llama/...`, `vertex_ai/gemini-2.0-flash`, bare `gpt-4o`) as tollgate's
 * `<provider>/<model>`. Provider prefixes follow LiteLLM's `LlmProviders` enum (litellm/types/utils.py).
 */

/** LiteLLM provider prefix → tollgate provider id, where they differ or where LiteLLM has aliases. */
const PREFIXES: ReadonlyMap<string, string> = new Map(Object.entries({
  openai: 'openai',
  'text-completion-openai': 'openai',
  anthropic: 'anthropic',
  gemini: 'gemini',
  bedrock: 'bedrock',
  azure: 'azure',
  azure_ai: 'azure-ai',
  vertex_ai: 'vertex',
  vertex_ai_beta: 'vertex',
  cohere: 'cohere',
  cohere_chat: 'cohere',
  together_ai: 'together',
  fireworks_ai: 'fireworks',
  mistral: 'mistral',
  // Codestral's models are served by Mistral's API too (codestral-latest on api.mistral.ai).
  codestral: 'mistral',
  groq: 'groq',
  deepseek: 'deepseek',
  xai: 'xai',
  openrouter: 'openrouter',
  perplexity: 'perplexity',
  huggingface: 'huggingface',
  ollama: 'ollama',
  ollama_chat: 'ollama',
  hosted_vllm: 'vllm',
  lm_studio: 'lmstudio',
  nvidia_nim: 'nvidia',
  sambanova: 'sambanova',
  cerebras: 'cerebras',
  deepinfra: 'deepinfra',
  novita: 'novita',
  nebius: 'nebius',
  moonshot: 'moonshot',
  hyperbolic: 'hyperbolic',
}));

/**
 * Bedrock names may carry LiteLLM's API selector (`bedrock/converse/<id>`, `bedrock/invoke/<id>`); tollgate
 * picks the Bedrock API itself, so only the model id stays.
 */
const BEDROCK_ROUTE = /^(?:converse|invoke)\//;

/**
 * Bare names the way LiteLLM infers their provider (get_llm_provider in litellm_core_utils/get_llm_provider_logic.py,
 * reading its model list): fine-tuned OpenAI models (`ft:gpt-4o-mini:org::id`) are OpenAI's; Google's text
 * embedding models (`text-embedding-004`, `text-embedding-005`, `text-multilingual-embedding-002`) are Vertex AI's
 * (`vertex_ai-embedding-models`), OpenAI's are `text-embedding-3-*` and `text-embedding-ada-002`.
 */
const INFERRED: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(?:text-embedding-00\d|text-multilingual-embedding-)/, 'vertex'],
  [/^(?:gpt-|chatgpt-|ft:gpt-|text-embedding-|o[134](?:-|$))/, 'openai'],
  [/^claude-/, 'anthropic'],
  [/^gemini-/, 'gemini'],
  [/^(?:command|embed-)/, 'cohere'],
];

/**
 * Maps a model name as a LiteLLM client writes it to tollgate's. `isRoute` says whether tollgate has a route
 * by that name: a configured route always wins, so the name is then left as it is. Unknown prefixes and
 * names pass through unchanged, so the usual errors name what the client sent.
 */
export function liteLLMModelName(model: string, isRoute: (name: string) => boolean = () => false): string {
  if (model === '' || isRoute(model)) return model;
  const slash = model.indexOf('/');
  if (slash === -1) {
    for (const [pattern, provider] of INFERRED) if (pattern.test(model)) return `${provider}/${model}`;
    return model;
  }
  const provider = PREFIXES.get(model.slice(0, slash));
  if (provider === undefined) return model;
  let rest = model.slice(slash + 1);
  if (provider === 'bedrock') rest = rest.replace(BEDROCK_ROUTE, '');
  else if (provider === 'huggingface') rest = huggingFaceModel(rest);
  return rest === '' ? model : `${provider}/${rest}`;
}

/**
 * LiteLLM names a Hugging Face Inference Provider before the repo id (`huggingface/together/deepseek-ai/DeepSeek-R1`,
 * docs.litellm.ai/docs/providers/huggingface); the router's OpenAI-compatible API takes it after the id, as
 * `deepseek-ai/DeepSeek-R1:together`. A repo id is `<owner>/<name>`, so a third segment can only be the provider.
 */
function huggingFaceModel(rest: string): string {
  const [provider, owner, name, ...more] = rest.split('/');
  if (!provider || !owner || !name || more.length > 0 || name.includes(':')) return rest;
  return `${owner}/${name}:${provider}`;
}
