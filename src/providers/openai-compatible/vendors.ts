import type { VendorDefinition } from '../../core/provider.js';

const bearer = { kind: 'bearer' } as const;
/** Vendors that take `max_tokens` but not OpenAI's newer `max_completion_tokens`. */
const maxTokensOnly = { max_completion_tokens: 'max_tokens' };

/**
 * The levels of `reasoning_effort` OpenAI's models take, by the longest model-name prefix. The reasoning models take
 * `reasoning_effort`; the chat models refuse it with a 400 ("Unsupported parameter: 'reasoning_effort' is not
 * supported with this model"): gpt-4o and gpt-4.1, gpt-3.5, chatgpt-4o, o1-mini and o1-preview, gpt-5-chat. Some take
 * one level only (gpt-5-pro high; gpt-5.1/5.2-chat medium), gpt-5 also minimal
 * (developers.openai.com/api/docs/guides/reasoning and the models' pages). The empty prefix is every other model (new
 * reasoning models keep the effort, as before this table).
 */
export const openAIReasoningEffortModels: Record<string, readonly string[]> = {
  '': ['low', 'medium', 'high'],
  'gpt-4': [], 'gpt-3.5': [], 'chatgpt': [], 'o1-mini': [], 'o1-preview': [], 'gpt-5-chat': [],
  'gpt-5': ['minimal', 'low', 'medium', 'high'], 'gpt-5.': ['low', 'medium', 'high'], 'gpt-5-pro': ['high'],
  'gpt-5.1-chat': ['medium'], 'gpt-5.2-chat': ['medium'],
};

/**
 * The OpenAI-compatible family: vendors whose chat API speaks OpenAI's wire format. Each is a row, not code;
 * `quirks` holds the few places a vendor deviates. Keys are read from the vendor's own environment variable
 * name first. `defaultBaseUrl` is written as the vendor's SDK (or, without one, its docs) writes it: with the
 * version path for the OpenAI SDK and its followers, without it for the Groq, Cerebras and Mistral SDKs and Ollama;
 * base-url.ts accepts both forms either way.
 */
export const openAICompatibleVendors: VendorDefinition[] = [
  {
    id: 'openai', displayName: 'OpenAI', format: 'openai', defaultBaseUrl: 'https://api.openai.com/v1', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['OPENAI_API_KEY'], baseUrlEnv: ['OPENAI_BASE_URL'],
    quirks: { reasoningEffortModels: openAIReasoningEffortModels },
    docsUrl: 'https://platform.openai.com/docs/api-reference/chat',
  },
  {
    // The Groq SDK's GROQ_BASE_URL is the host; the OpenAI SDK's form (`.../openai/v1`) works too.
    id: 'groq', displayName: 'Groq', format: 'openai', defaultBaseUrl: 'https://api.groq.com', versionPath: '/openai/v1', auth: bearer,
    keyRequired: true, keyEnv: ['GROQ_API_KEY'], baseUrlEnv: ['GROQ_BASE_URL'],
    docsUrl: 'https://console.groq.com/docs/openai',
  },
  {
    id: 'together', displayName: 'Together AI', format: 'openai', defaultBaseUrl: 'https://api.together.xyz/v1', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['TOGETHER_API_KEY', 'TOGETHERAI_API_KEY'], baseUrlEnv: ['TOGETHER_BASE_URL'],
    // Together's chat API names the output limit max_tokens only (its SDK's CompletionCreateParams): a
    // max_completion_tokens is not read, and the answer runs to Together's default limit instead of the client's.
    quirks: { renameFields: maxTokensOnly },
    docsUrl: 'https://docs.together.ai/docs/openai-api-compatibility',
  },
  {
    id: 'fireworks', displayName: 'Fireworks AI', format: 'openai', defaultBaseUrl: 'https://api.fireworks.ai/inference/v1', versionPath: '/inference/v1',
    auth: bearer, keyRequired: true, keyEnv: ['FIREWORKS_API_KEY'], baseUrlEnv: ['FIREWORKS_BASE_URL'],
    docsUrl: 'https://docs.fireworks.ai/tools-sdks/openai-compatibility',
  },
  {
    // DeepSeek serves its API at the root; `/v1` is an alias it documents (any path is used as written).
    id: 'deepseek', displayName: 'DeepSeek', format: 'openai', defaultBaseUrl: 'https://api.deepseek.com', auth: bearer,
    keyRequired: true, keyEnv: ['DEEPSEEK_API_KEY'], baseUrlEnv: ['DEEPSEEK_BASE_URL'],
    // In thinking mode (the default of its current models) an assistant turn with tool calls must carry its
    // reasoning_content in later requests, else 400 "Missing reasoning_content field in the assistant message at
    // message index N" (api-docs.deepseek.com/guides/thinking_mode#tool-calls).
    quirks: { renameFields: maxTokensOnly, reasoningInHistory: true },
    docsUrl: 'https://api-docs.deepseek.com/api/create-chat-completion',
  },
  {
    id: 'xai', displayName: 'xAI', format: 'openai', defaultBaseUrl: 'https://api.x.ai/v1', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['XAI_API_KEY'], baseUrlEnv: ['XAI_BASE_URL'], catalogId: 'x-ai',
    // Most Grok models reason without a dial and answer 400 to `reasoning_effort` (grok-3, grok-4, grok-4-fast,
    // grok-4-1-fast, grok-4.20, grok-code-fast); grok-3-mini takes low and high, grok-4.3 and grok-4.5 low to high
    // (docs.x.ai/docs/guides/reasoning). grok-4.20-multi-agent reads the field as an agent count, not a thinking
    // effort, so a thinking budget is not sent to it either.
    quirks: { reasoningEffortModels: { 'grok-3-mini': ['low', 'high'], 'grok-4.3': ['low', 'medium', 'high'], 'grok-4.5': ['low', 'medium', 'high'] } },
    docsUrl: 'https://docs.x.ai/docs/api-reference',
  },
  {
    id: 'mistral', displayName: 'Mistral AI', format: 'openai', defaultBaseUrl: 'https://api.mistral.ai', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['MISTRAL_API_KEY'], baseUrlEnv: ['MISTRAL_BASE_URL'],
    // Mistral names the sampling seed `random_seed`, and refuses any field outside its schema (422 extra_forbidden):
    // `user`, which the Anthropic route fills from metadata.user_id (Claude Code always sends one), is not in it.
    // Its reasoning models' thinking travels as a chunk of the message's content, never as reasoning_content.
    // Its embeddings API names the vector size output_dimension, and refuses OpenAI's `dimensions` and `user` alike.
    quirks: {
      renameFields: { ...maxTokensOnly, seed: 'random_seed' }, dropFields: ['user'], noStreamOptions: true, thinkingChunks: true,
      embeddings: { renameFields: { dimensions: 'output_dimension' }, dropFields: ['user'] },
    },
    docsUrl: 'https://docs.mistral.ai/api/#tag/chat',
  },
  {
    id: 'openrouter', displayName: 'OpenRouter', format: 'openai', defaultBaseUrl: 'https://openrouter.ai/api/v1', versionPath: '/api/v1', auth: bearer,
    keyRequired: true, keyEnv: ['OPENROUTER_API_KEY'], baseUrlEnv: ['OPENROUTER_BASE_URL'],
    // OpenRouter attributes traffic to the calling app by these headers.
    defaultHeaders: { 'x-title': 'tollgate' },
    docsUrl: 'https://openrouter.ai/docs/api-reference/chat-completion',
  },
  {
    id: 'cerebras', displayName: 'Cerebras', format: 'openai', defaultBaseUrl: 'https://api.cerebras.ai', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['CEREBRAS_API_KEY'], baseUrlEnv: ['CEREBRAS_BASE_URL'],
    docsUrl: 'https://inference-docs.cerebras.ai/api-reference/chat-completions',
  },
  {
    id: 'perplexity', displayName: 'Perplexity', format: 'openai', defaultBaseUrl: 'https://api.perplexity.ai', auth: bearer,
    keyRequired: true, keyEnv: ['PERPLEXITY_API_KEY', 'PPLX_API_KEY'], baseUrlEnv: ['PERPLEXITY_BASE_URL'],
    // Its streams may end without `data: [DONE]` (perplexityai/api-discussion#209): whole once the answer finished.
    quirks: { renameFields: maxTokensOnly, noStreamOptions: true, finishEndsStream: true },
    docsUrl: 'https://docs.perplexity.ai/api-reference/chat-completions-post',
  },
  {
    id: 'deepinfra', displayName: 'DeepInfra', format: 'openai', defaultBaseUrl: 'https://api.deepinfra.com/v1/openai', versionPath: '/v1/openai',
    auth: bearer, keyRequired: true, keyEnv: ['DEEPINFRA_API_KEY', 'DEEPINFRA_TOKEN'], baseUrlEnv: ['DEEPINFRA_BASE_URL'],
    catalogId: null, docsUrl: 'https://deepinfra.com/docs/openai_api',
  },
  {
    // Ollama's own clients take the host (OLLAMA_HOST, which may lack a scheme and so is not read here); its
    // OpenAI-compatible API is under /v1.
    id: 'ollama', displayName: 'Ollama', format: 'openai', defaultBaseUrl: 'http://localhost:11434', versionPath: '/v1', auth: bearer,
    keyRequired: false, keyEnv: ['OLLAMA_API_KEY'], baseUrlEnv: ['OLLAMA_BASE_URL', 'OLLAMA_API_BASE'],
    quirks: { renameFields: maxTokensOnly }, catalogId: null,
    docsUrl: 'https://github.com/ollama/ollama/blob/main/docs/openai.md',
  },
  {
    id: 'vllm', displayName: 'vLLM', format: 'openai', defaultBaseUrl: 'http://localhost:8000/v1', versionPath: '/v1', auth: bearer,
    keyRequired: false, keyEnv: ['VLLM_API_KEY'], baseUrlEnv: ['VLLM_BASE_URL', 'VLLM_API_BASE'], catalogId: null,
    docsUrl: 'https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html',
  },
  {
    id: 'lmstudio', displayName: 'LM Studio', format: 'openai', defaultBaseUrl: 'http://localhost:1234/v1', versionPath: '/v1', auth: bearer,
    keyRequired: false, keyEnv: ['LMSTUDIO_API_KEY'], baseUrlEnv: ['LMSTUDIO_BASE_URL', 'LM_STUDIO_API_BASE'], catalogId: null,
    docsUrl: 'https://lmstudio.ai/docs/app/api/endpoints/openai',
  },
  {
    id: 'sambanova', displayName: 'SambaNova', format: 'openai', defaultBaseUrl: 'https://api.sambanova.ai/v1', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['SAMBANOVA_API_KEY'], baseUrlEnv: ['SAMBANOVA_BASE_URL'], catalogId: null,
    docsUrl: 'https://docs.sambanova.ai/cloud/docs/capabilities/openai-compatibility',
  },
  {
    id: 'nvidia', displayName: 'NVIDIA NIM', format: 'openai', defaultBaseUrl: 'https://integrate.api.nvidia.com/v1', versionPath: '/v1',
    auth: bearer, keyRequired: true, keyEnv: ['NVIDIA_API_KEY', 'NVIDIA_NIM_API_KEY'], baseUrlEnv: ['NVIDIA_BASE_URL'],
    catalogId: null, docsUrl: 'https://docs.api.nvidia.com/nim/reference/llm-apis',
  },
  {
    id: 'hyperbolic', displayName: 'Hyperbolic', format: 'openai', defaultBaseUrl: 'https://api.hyperbolic.xyz/v1', versionPath: '/v1',
    auth: bearer, keyRequired: true, keyEnv: ['HYPERBOLIC_API_KEY'], baseUrlEnv: ['HYPERBOLIC_BASE_URL'], catalogId: null,
    docsUrl: 'https://docs.hyperbolic.xyz/docs/rest-api',
  },
  {
    id: 'moonshot', displayName: 'Moonshot AI', format: 'openai', defaultBaseUrl: 'https://api.moonshot.ai/v1', versionPath: '/v1', auth: bearer,
    keyRequired: true, keyEnv: ['MOONSHOT_API_KEY'], baseUrlEnv: ['MOONSHOT_BASE_URL'], catalogId: 'moonshotai',
    // Kimi's thinking models (kimi-k2.5 and kimi-k2.6 think by default) answer 400 "thinking is enabled but
    // reasoning_content is missing in assistant tool call message at index N" to a tool-call turn without its
    // reasoning, and k2.5/k2.6 take an empty one as missing (platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model).
    // The older moonshot-v1 models do not think and get no reasoning_content.
    quirks: { reasoningInHistory: ['kimi-'], emptyReasoning: ' ' },
    docsUrl: 'https://platform.moonshot.ai/docs/api/chat',
  },
  {
    id: 'novita', displayName: 'Novita AI', format: 'openai', defaultBaseUrl: 'https://api.novita.ai/v3/openai', versionPath: '/v3/openai', auth: bearer,
    keyRequired: true, keyEnv: ['NOVITA_API_KEY'], baseUrlEnv: ['NOVITA_BASE_URL'],
    docsUrl: 'https://novita.ai/docs/guides/llm-api',
  },
  {
    id: 'nebius', displayName: 'Nebius AI Studio', format: 'openai', defaultBaseUrl: 'https://api.studio.nebius.com/v1', versionPath: '/v1',
    auth: bearer, keyRequired: true, keyEnv: ['NEBIUS_API_KEY'], baseUrlEnv: ['NEBIUS_BASE_URL'], catalogId: null,
    docsUrl: 'https://docs.nebius.com/studio/inference/api',
  },
  {
    id: 'huggingface', displayName: 'Hugging Face Inference Providers', format: 'openai',
    defaultBaseUrl: 'https://router.huggingface.co/v1', versionPath: '/v1', auth: bearer, keyRequired: true,
    keyEnv: ['HF_TOKEN', 'HUGGINGFACE_API_KEY'], baseUrlEnv: ['HUGGINGFACE_BASE_URL'], catalogId: null,
    docsUrl: 'https://huggingface.co/docs/inference-providers/index',
  },
];
