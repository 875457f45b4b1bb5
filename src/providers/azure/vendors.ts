import type { VendorDefinition } from '../../core/provider.js';
import { openAIReasoningEffortModels } from '../openai-compatible/vendors.js';

const apiKeyHeader = { kind: 'header', header: 'api-key' } as const;

/**
 * Azure's two OpenAI-format chat APIs. Both live on the customer's own resource, so neither has a usable
 * default base URL: its `{resource}` part names no real host, and the operator configures the base URL (a request
 * without one gets a 400 that says which variable to set).
 */
export const azureVendors: VendorDefinition[] = [
  {
    // As the OpenAI SDK's AZURE_OPENAI_ENDPOINT: the resource's endpoint, under which the API lives at /openai.
    id: 'azure', displayName: 'Azure OpenAI', format: 'azure', defaultBaseUrl: 'https://{resource}.openai.azure.com', versionPath: '/openai',
    auth: apiKeyHeader, keyRequired: true, keyEnv: ['AZURE_OPENAI_API_KEY', 'AZURE_API_KEY'],
    baseUrlEnv: ['AZURE_OPENAI_ENDPOINT', 'AZURE_API_BASE'], apiVersionEnv: ['AZURE_OPENAI_API_VERSION', 'AZURE_API_VERSION'],
    // Azure serves OpenAI's models, which take reasoning_effort or refuse it as on OpenAI. The model part of
    // azure/<name> is the deployment: one named like its model (as the portal names it, and as pricing reads it)
    // gets a derived effort as that model takes it; another gets it as before.
    quirks: { reasoningEffortModels: openAIReasoningEffortModels },
    catalogId: 'azure', docsUrl: 'https://learn.microsoft.com/en-us/azure/ai-services/openai/reference',
  },
  {
    // As the Azure AI Inference SDK's endpoint: with the /models path.
    id: 'azure-ai', displayName: 'Azure AI Foundry Models', format: 'azure', defaultBaseUrl: 'https://{resource}.services.ai.azure.com/models', versionPath: '/models',
    auth: apiKeyHeader, keyRequired: true, keyEnv: ['AZURE_AI_API_KEY', 'AZURE_INFERENCE_CREDENTIAL'], baseUrlEnv: ['AZURE_AI_ENDPOINT'],
    // The model inference API knows only max_tokens. Its `extra-parameters` header (what it does with fields outside
    // its spec) is the adapter's to send, as the provider's extra_parameters says (default drop).
    quirks: { renameFields: { max_completion_tokens: 'max_tokens' } },
    catalogId: null,
    docsUrl: 'https://learn.microsoft.com/en-us/rest/api/aifoundry/model-inference/reference/reference-model-inference-chat-completions',
  },
];
