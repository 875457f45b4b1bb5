import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import { liteLLMModelName } from '../../src/dialects/litellm/model-names.js';
import { mapLiteLLMModel } from '../../src/dialects/litellm/routes/register.js';

describe('LiteLLM provider prefixes', () => {
  it.each([
    ['openai/gpt-4o', 'openai/gpt-4o'],
    ['text-completion-openai/gpt-3.5-turbo-instruct', 'openai/gpt-3.5-turbo-instruct'],
    ['anthropic/claude-3-5-sonnet-20241022', 'anthropic/claude-3-5-sonnet-20241022'],
    ['gemini/gemini-2.0-flash', 'gemini/gemini-2.0-flash'],
    ['bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0', 'bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0'],
    ['bedrock/converse/anthropic.claude-3-5-sonnet-20241022-v2:0', 'bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0'],
    ['bedrock/invoke/amazon.titan-embed-text-v2:0', 'bedrock/amazon.titan-embed-text-v2:0'],
    ['azure/my-gpt4o-deployment', 'azure/my-gpt4o-deployment'],
    ['azure_ai/mistral-large', 'azure-ai/mistral-large'],
    ['vertex_ai/gemini-1.5-pro', 'vertex/gemini-1.5-pro'],
    ['vertex_ai_beta/gemini-1.5-pro', 'vertex/gemini-1.5-pro'],
    ['cohere/command-r-plus', 'cohere/command-r-plus'],
    ['cohere_chat/command-r', 'cohere/command-r'],
    ['together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo', 'together/meta-llama/Llama-3.3-70B-Instruct-Turbo'],
    ['fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct', 'fireworks/accounts/fireworks/models/llama-v3p1-8b-instruct'],
    ['mistral/mistral-large-latest', 'mistral/mistral-large-latest'],
    ['groq/llama-3.1-8b-instant', 'groq/llama-3.1-8b-instant'],
    ['deepseek/deepseek-chat', 'deepseek/deepseek-chat'],
    ['xai/grok-2', 'xai/grok-2'],
    ['openrouter/anthropic/claude-3.5-sonnet', 'openrouter/anthropic/claude-3.5-sonnet'],
    ['perplexity/sonar', 'perplexity/sonar'],
    ['huggingface/meta-llama/Llama-3.1-8B-Instruct', 'huggingface/meta-llama/Llama-3.1-8B-Instruct'],
    // LiteLLM names the Inference Provider first; the router takes it after the repo id.
    ['huggingface/together/deepseek-ai/DeepSeek-R1', 'huggingface/deepseek-ai/DeepSeek-R1:together'],
    ['huggingface/fireworks-ai/meta-llama/Llama-3.3-70B-Instruct', 'huggingface/meta-llama/Llama-3.3-70B-Instruct:fireworks-ai'],
    ['codestral/codestral-latest', 'mistral/codestral-latest'],
    ['ollama/llama3', 'ollama/llama3'],
    ['ollama_chat/llama3', 'ollama/llama3'],
    ['hosted_vllm/facebook/opt-125m', 'vllm/facebook/opt-125m'],
    ['lm_studio/qwen2.5-7b', 'lmstudio/qwen2.5-7b'],
    ['nvidia_nim/meta/llama3-70b-instruct', 'nvidia/meta/llama3-70b-instruct'],
    ['sambanova/Meta-Llama-3.1-8B-Instruct', 'sambanova/Meta-Llama-3.1-8B-Instruct'],
    ['cerebras/llama3.1-8b', 'cerebras/llama3.1-8b'],
    ['deepinfra/meta-llama/Meta-Llama-3-8B-Instruct', 'deepinfra/meta-llama/Meta-Llama-3-8B-Instruct'],
    ['novita/deepseek/deepseek-r1', 'novita/deepseek/deepseek-r1'],
    ['nebius/Qwen/Qwen3-235B-A22B', 'nebius/Qwen/Qwen3-235B-A22B'],
    ['moonshot/moonshot-v1-8k', 'moonshot/moonshot-v1-8k'],
    ['hyperbolic/deepseek-ai/DeepSeek-V3', 'hyperbolic/deepseek-ai/DeepSeek-V3'],
  ])('%s → %s', (litellm, tollgate) => {
    expect(liteLLMModelName(litellm)).toBe(tollgate);
  });
});

describe('bare names, inferred the way LiteLLM does', () => {
  it.each([
    ['gpt-4o-mini', 'openai/gpt-4o-mini'],
    ['gpt-3.5-turbo', 'openai/gpt-3.5-turbo'],
    ['chatgpt-4o-latest', 'openai/chatgpt-4o-latest'],
    ['o1', 'openai/o1'],
    ['o1-mini', 'openai/o1-mini'],
    ['o3-mini', 'openai/o3-mini'],
    ['o4-mini', 'openai/o4-mini'],
    ['text-embedding-3-small', 'openai/text-embedding-3-small'],
    ['text-embedding-ada-002', 'openai/text-embedding-ada-002'],
    ['ft:gpt-4o-mini-2024-07-18:my-org::9abcDEF', 'openai/ft:gpt-4o-mini-2024-07-18:my-org::9abcDEF'],
    ['text-embedding-004', 'vertex/text-embedding-004'],
    ['text-embedding-005', 'vertex/text-embedding-005'],
    ['text-multilingual-embedding-002', 'vertex/text-multilingual-embedding-002'],
    ['claude-3-5-haiku-20241022', 'anthropic/claude-3-5-haiku-20241022'],
    ['gemini-2.5-pro', 'gemini/gemini-2.5-pro'],
    ['command-r-plus', 'cohere/command-r-plus'],
    ['command', 'cohere/command'],
    ['embed-english-v3.0', 'cohere/embed-english-v3.0'],
  ])('%s → %s', (bare, tollgate) => {
    expect(liteLLMModelName(bare)).toBe(tollgate);
  });

  it('leaves bare names it cannot place alone (route names, unknown models)', () => {
    expect(liteLLMModelName('fast')).toBe('fast');
    expect(liteLLMModelName('llama3')).toBe('llama3');
    // Only o1/o3/o4 and their dashed variants are OpenAI's; a name merely starting with those letters is not.
    expect(liteLLMModelName('o1x')).toBe('o1x');
    expect(liteLLMModelName('o2-mini')).toBe('o2-mini');
  });
});

describe('unknown prefixes and odd names', () => {
  it('passes unknown prefixes through unchanged, so the usual error names the provider', () => {
    expect(liteLLMModelName('sagemaker/my-endpoint')).toBe('sagemaker/my-endpoint');
    expect(liteLLMModelName('nosuch/model')).toBe('nosuch/model');
    // Names of Object.prototype members are not prefixes either.
    expect(liteLLMModelName('constructor/x')).toBe('constructor/x');
    expect(liteLLMModelName('__proto__/x')).toBe('__proto__/x');
  });

  it('keeps tollgate names that LiteLLM spells the same', () => {
    expect(liteLLMModelName('together/meta-llama/x')).toBe('together/meta-llama/x');
    expect(liteLLMModelName('vertex/gemini-1.5-pro')).toBe('vertex/gemini-1.5-pro');
  });

  it('leaves a prefix with nothing after it alone', () => {
    expect(liteLLMModelName('together_ai/')).toBe('together_ai/');
    expect(liteLLMModelName('')).toBe('');
  });
});

describe('route precedence', () => {
  it('leaves a name the predicate claims as a route untouched', () => {
    const routes = new Set(['gpt-4o', 'together_ai/llama']);
    expect(liteLLMModelName('gpt-4o', (name) => routes.has(name))).toBe('gpt-4o');
    expect(liteLLMModelName('together_ai/llama', (name) => routes.has(name))).toBe('together_ai/llama');
    expect(liteLLMModelName('gpt-4o-mini', (name) => routes.has(name))).toBe('openai/gpt-4o-mini');
  });

  it('consults the configured routes, exact names and patterns, per config', () => {
    const config = resolveRuntimeConfig(
      {
        api: {},
        file: configFileSchema.parse({
          providers: { openai: { api_key: 'sk-test' }, together: { api_key: 'tk-test' } },
          routes: {
            'gpt-4o': { targets: [{ model: 'together/meta-llama/x' }] },
            'claude-*': { targets: [{ model: 'openai/gpt-4o-mini' }] },
          },
        }),
      },
      {},
      1,
    );
    expect(mapLiteLLMModel('gpt-4o', config)).toBe('gpt-4o');
    expect(mapLiteLLMModel('claude-3-opus', config)).toBe('claude-3-opus');
    expect(mapLiteLLMModel('gpt-4o-mini', config)).toBe('openai/gpt-4o-mini');
    expect(mapLiteLLMModel('together_ai/llama', config)).toBe('together/llama');
  });
});
