/**
 * `gen_ai.provider.name` as the OpenTelemetry GenAI semantic conventions name the well-known providers, by
 * tollgate's vendor id; a vendor the conventions do not list keeps its own id (custom values are allowed). The name
 * an operator gave the provider in the config (`backup`, `lab-a`) goes in `tollgate.provider`.
 */
const SEMCONV_NAMES: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'azure.ai.openai',
  'azure-ai': 'azure.ai.inference',
  cohere: 'cohere',
  deepseek: 'deepseek',
  groq: 'groq',
  mistral: 'mistral_ai',
  perplexity: 'perplexity',
  xai: 'x_ai',
};

export function genAIProviderName(vendorId: string): string {
  return SEMCONV_NAMES[vendorId] ?? vendorId;
}
