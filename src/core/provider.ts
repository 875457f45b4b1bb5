import type { Dispatcher } from 'undici';
import type { GatewayError } from './errors.js';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  CompletionUsage,
  EmbeddingsRequest,
  EmbeddingsResponse,
  NativeRequest,
  NativeStreamEvent,
} from './canonical.js';

/**
 * The provider adapter contract. An adapter is a set of pure transforms between the canonical (OpenAI-shaped)
 * request/response and one upstream wire format; the shared transport does the I/O. A new wire format is one
 * folder that exports a `ProviderAdapter` and registers it in `registry.ts`.
 */

/** A provider as the running config resolved it: where to call and with what. */
export interface ResolvedProvider {
  /** The name clients use as the model prefix (`openai`, `groq`, or a custom `lab-a`). */
  name: string;
  /** The vendor definition (wire format, defaults, quirks) this provider is an instance of. */
  vendor: VendorDefinition;
  /** Where the API lives, without a query: operation paths are appended to it. */
  baseUrl: string;
  /** The configured base URL's query (`api_key=...`, no `?`), sent after every operation's path; absent when it has none. */
  baseQuery?: string;
  /** Extra headers sent on every upstream request (operator config). */
  headers: Record<string, string>;
  timeouts: UpstreamTimeouts;
  /**
   * Largest answer read from this provider: a whole non-streamed body, or one stream event (bytes that arrive
   * without producing a chunk). Past it the call fails with 502 and the connection is closed.
   */
  maxResponseBytes: number;
  /** Settings some wire formats need besides the base URL (cloud region, project, API version, token URL). */
  options: ProviderOptions;
}

export interface ProviderOptions {
  /** Cloud region (`bedrock`: AWS region for the URL and SigV4; `vertex`: location, e.g. `us-central1`). */
  region?: string;
  /** Cloud project (`vertex`: the Google Cloud project id; defaults to the service account's). */
  project?: string;
  /**
   * `bedrock`: model ids or ARNs that serve Claude though they do not name it (an application inference profile, a
   * provisioned model), as the operator declares them: they are called as Claude's own ids are.
   */
  claudeModels?: readonly string[];
  /** API version (`azure`: the `api-version` query parameter). */
  apiVersion?: string;
  /** `azure-ai`: what the model inference API does with fields outside its spec (its `extra-parameters` header). */
  extraParameters?: 'drop' | 'pass-through' | 'error';
  /** OAuth token endpoint (`vertex`: defaults to the service account's `token_uri`). */
  tokenUrl?: string;
  /** Microsoft Entra ID instead of an `api-key` (`azure`, `azure-ai`): the identity whose tokens authorise calls. */
  entra?: EntraCredential;
  /**
   * `bedrock` signed with credentials from AWS's default credential chain (an IAM role: IRSA, EKS Pod Identity, an ECS
   * task role, an EC2 instance profile, or a profile of ~/.aws/config), resolved at the first call.
   */
  aws?: AwsChainSettings;
}

/**
 * Where a `bedrock` provider's AWS credentials come from when it has no key: the default chain, with a named profile
 * of ~/.aws/config or without one. `configured` says the operator asked for it (`auth: {type: aws}`), which wins over a
 * client's own key as a configured key does; without it the chain is the fallback of a provider with no key at all.
 */
export interface AwsChainSettings {
  profile: string | null;
  configured: boolean;
}

/**
 * A Microsoft Entra ID identity, resolved from `providers.<name>.auth` (secrets read): an app registration's client
 * secret or certificate (a PEM file, read at each fetch), an AKS workload identity's federated token file, or the host's managed identity (IMDS, or App Service's
 * IDENTITY_ENDPOINT). `scope` is what the token is for (`https://cognitiveservices.azure.com/.default`).
 */
export type EntraCredential =
  | { kind: 'client_secret'; scope: string; authorityHost: string; tenantId: string; clientId: string; clientSecret: string }
  | { kind: 'workload_identity'; scope: string; authorityHost: string; tenantId: string; clientId: string; tokenFile: string }
  | { kind: 'client_certificate'; scope: string; authorityHost: string; tenantId: string; clientId: string; certificateFile: string }
  | {
      kind: 'managed_identity';
      scope: string;
      clientId: string | null;
      /** A user-assigned identity named otherwise than by client id: its Azure resource id, or its object id. */
      userAssigned?: { by: 'resource_id' | 'object_id'; id: string };
      identityEndpoint: string | null;
      identityHeader: string | null;
    };

export interface UpstreamTimeouts {
  /** Time allowed until the upstream's response headers arrive. */
  firstByteMs: number;
  /** Time allowed for the whole upstream exchange, streaming included. */
  totalMs: number;
  /** Longest silence allowed inside the response body (between stream chunks). */
  idleMs: number;
}

/** One concrete place a request can go. Weights, breakers and health attach to targets (later stages). */
export interface Target {
  provider: ResolvedProvider;
  /** The model name as the upstream knows it (no provider prefix). */
  model: string;
  /** The provider credential; null for keyless local servers (ollama, vllm). */
  apiKey: string | null;
  /** Where the key came from, for logs (never the key itself). */
  keySource: 'api' | 'file' | 'env' | 'builtin' | 'client' | 'none';
  /** The configured key's id (health and breakers are kept per key); null for client or no key. */
  keyId: string | null;
}

export interface UpstreamRequest {
  method: 'POST' | 'GET';
  /** Absolute URL. */
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** Turns upstream stream bytes into canonical chunks, whatever the framing (SSE, AWS event stream, ...). */
export interface StreamDecoder {
  push(bytes: Buffer): ChatCompletionChunk[];
  /**
   * Called when the upstream body ended; returns trailing chunks and tells whether the stream ended properly.
   * `usage` reports what the upstream counted when no chunk carried it (the client did not ask for a usage
   * chunk), so cost is still exact.
   */
  end(): { chunks: ChatCompletionChunk[]; complete: boolean; usage?: CompletionUsage | null };
  /**
   * What the upstream has counted so far, for a format whose stream reports usage before its end (Anthropic's
   * message_start and message_delta, Gemini's running usageMetadata): the gateway charges it when the stream is
   * cut before its final usage. Null until some came. Never made into a chunk: the client's stream is unchanged.
   */
  usageSoFar?(): CompletionUsage | null;
  /**
   * Native pass-through only (the decoder was created with the client's native request, or `verbatim`): the
   * upstream's own events decoded since the last call, in order, those without a canonical chunk included
   * (unless `nativePerChunk`).
   */
  takeNative?(): NativeStreamEvent[];
  /**
   * `takeNative` gives exactly one event per chunk decoded since the last call, in the chunks' order, each the
   * event that chunk was parsed from (the OpenAI format: one event, one chunk), so each rides on its own chunk.
   */
  readonly nativePerChunk?: boolean;
}

export interface ProviderAdapter {
  /** Wire-format id, e.g. `openai`. */
  readonly format: string;
  /**
   * The format its answers are written in, when that is another adapter's (Azure answers in OpenAI's): a client
   * reading that format may have them as they came (`RequestContext.verbatimFormat`). Defaults to `format`.
   */
  readonly answerFormat?: string;
  /**
   * The wire format of the bodies this adapter exchanges with `target`, when it depends on the model: Vertex AI
   * speaks Anthropic's Messages API to its Claude models (rawPredict), so an Anthropic client of one is passed
   * through (see buildChatRequest's `native`). Defaults to `format`.
   */
  nativeFormat?(target: Target): string;
  /**
   * Whether the adapter also sends a client's own body of `format` to `target` as it came (native pass-through),
   * besides its nativeFormat: OpenAI's own API serves its Responses API (`openai-responses`) beside chat completions,
   * which the vendors of OpenAI's chat format do not. buildChatRequest, parseChatResponse and createStreamDecoder then
   * get that body as `native` and exchange that format's bodies.
   */
  takesNative?(target: Target, format: string): boolean;
  /**
   * `native`, given only when the client's dialect speaks this adapter's format for `target` (nativeFormat): the client's own body, which
   * the adapter sends with only what tollgate must change (the model), so every field arrives as the client wrote it.
   */
  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest;
  /** `native` as for buildChatRequest: the answer is in that format (see takesNative). */
  parseChatResponse(body: unknown, target: Target, native?: NativeRequest | null): ChatCompletion;
  /**
   * The usage an answer body reports when parseChatResponse refused it as a failed answer the upstream still bills
   * (Cohere's finish_reason ERROR or TIMEOUT: a generation that broke off, with the usage of what it generated); null
   * when it reports none. Charged as the attempt's usage so far, as a stream's that failed (see usageSoFar).
   */
  reportedUsage?(body: unknown, target: Target): CompletionUsage | null;
  /**
   * The output limit the adapter sends `request` when it sets none, when the target's API requires one (Anthropic's
   * Messages requires `max_tokens`); null or absent when none is sent. A translated request is given the model's
   * own limit instead when the catalogue knows it and it is more (see withOutputLimit).
   */
  defaultOutputLimit?(target: Target, request: ChatCompletionRequest): number | null;
  /**
   * The request tells a decoder what the client asked for (e.g. `stream_options.include_usage`). With `native`
   * (as for buildChatRequest) the decoder also keeps the upstream's own events for `takeNative`; with `verbatim`
   * (the client reads this adapter's format: `RequestContext.verbatimFormat`) it keeps them too, one per chunk.
   */
  createStreamDecoder(target: Target, request: ChatCompletionRequest, native?: NativeRequest | null, verbatim?: boolean): StreamDecoder;
  /** Maps an upstream error answer (status, headers, raw body) to a GatewayError with a retryable flag. */
  parseError(
    status: number,
    headers: Record<string, string | string[] | undefined>,
    bodyText: string,
    target: Target,
  ): GatewayError;
  /** Embeddings, for formats whose provider has an embeddings API: the upstream request and the answer back. */
  buildEmbeddingsRequest?(request: EmbeddingsRequest, target: Target): UpstreamRequest;
  parseEmbeddingsResponse?(body: unknown, target: Target, request: EmbeddingsRequest): EmbeddingsResponse;
  /** Builds the request that lists the upstream's models, when the API has one. */
  buildListModelsRequest?(target: Target): UpstreamRequest;
  /**
   * Runs after `buildChatRequest` when the credential is not a plain header: signs the request (AWS SigV4) or
   * attaches a token fetched for it (Google service-account OAuth). Rejects with a GatewayError. A token is
   * fetched over `dispatcher`, the gateway's outbound HTTP client, so it takes the same proxy and CAs as the call
   * (the call stage always gives it; without it, as in adapter unit tests, undici's global dispatcher is used).
   */
  authorize?(request: UpstreamRequest, target: Target, dispatcher?: Dispatcher): Promise<UpstreamRequest>;
  /**
   * The upstream answered 401 or 403 (`error`) to `request` as `authorize` left it: when the answer says the
   * credential it carried is no longer good (a token revoked, role credentials rotated before their expiry), drops
   * what is cached for that identity and says so (true), so the call is authorized afresh and made once more. A
   * credential that cannot be fetched again (a static key) is never forgotten: false, and the refusal is the answer.
   */
  forgetCredential?(request: UpstreamRequest, target: Target, error: GatewayError): boolean;
}

/** How a provider expects its credential. */
export type AuthScheme = { kind: 'bearer' } | { kind: 'header'; header: string } | { kind: 'none' };

/** Vendor-specific deviations from the wire format, applied by the format's adapter. */
export interface VendorQuirks {
  /** Request fields to rename when the vendor uses another name (only when the new name is not already set). */
  renameFields?: Record<string, string>;
  /** Request fields the vendor rejects, dropped before sending. */
  dropFields?: string[];
  /** The same for an embeddings request, whose fields differ from chat's (renameFields and dropFields are chat's). */
  embeddings?: { renameFields?: Record<string, string>; dropFields?: string[] };
  /**
   * Streams are not asked for usage (`stream_options` is not added, see the OpenAI adapter's buildChatRequest): the
   * vendor reports usage unasked and may refuse the option (Mistral and Perplexity, on the last chunk), or refuses
   * it (Azure OpenAI API versions before 2024-09-01).
   */
  noStreamOptions?: true;
  /**
   * The vendor's models that take `reasoning_effort` (model-name prefixes), each with the levels it takes, when
   * the vendor's other models refuse the field (xAI). A reasoning_effort the gateway derived itself (an Anthropic
   * thinking budget, a Gemini thinkingConfig) is left out on the other models, which reason by default, and set
   * to the nearest level taken on these; a client's own reasoning_effort (the /v1 route) is sent as written.
   */
  reasoningEffortModels?: Record<string, readonly string[]>;
  /**
   * The vendor wants a thinking model's earlier reasoning back with the turns it led to: an assistant message with
   * tool calls must carry its `reasoning_content` (DeepSeek's thinking mode answers 400 without it). A dialect
   * whose clients send thinking in their own shape (Anthropic's thinking blocks) passes it on as reasoning_content
   * to these vendors only; the others never get the field from a translation. True for every model of the vendor,
   * or the model-name prefixes of those that want it (Moonshot's Kimi models, not its older moonshot-v1 ones).
   */
  reasoningInHistory?: boolean | readonly string[];
  /**
   * The reasoning_content a reasoningInHistory vendor gets on a tool-call turn that had no thinking (default: an
   * empty string, which DeepSeek takes). Moonshot's kimi-k2.5 and kimi-k2.6 take an empty one as missing and answer
   * the same 400; a single space passes.
   */
  emptyReasoning?: string;
  /**
   * The vendor writes a model's thinking as a chunk of an assistant message's `content` and refuses the
   * `reasoning_content` (or `reasoning`) field there (Mistral: 422 extra_forbidden): a turn handed back with one goes
   * with its text as a leading ThinkChunk instead.
   */
  thinkingChunks?: true;
  /**
   * The vendor's streams may end without OpenAI's `data: [DONE]` (Perplexity): such a stream is whole once every
   * choice it opened has its finish_reason, as a Gemini stream is; one that ends before that is still cut short.
   */
  finishEndsStream?: true;
}

/** A row of the vendor table: everything that distinguishes one vendor of a wire format from another. */
export interface VendorDefinition {
  id: string;
  displayName: string;
  format: string;
  /** The base URL as the vendor's own SDK writes its default (with or without `versionPath`, see base-url.ts). */
  defaultBaseUrl: string;
  /**
   * The path the vendor's API lives under (`/v1`, `/openai/v1`, `/v1beta`), added to a configured base URL that
   * lacks it by the rule in base-url.ts; absent when the API has none (Perplexity, Bedrock).
   */
  versionPath?: string;
  auth: AuthScheme;
  /** Whether a request without any credential is allowed (local servers). */
  keyRequired: boolean;
  /** Environment variables holding the key, in order of preference (the vendor's own name first). */
  keyEnv: string[];
  /** Environment variables holding the base URL. */
  baseUrlEnv: string[];
  /** Environment variables holding the region (`AWS_REGION`, ...), for formats that need one. */
  regionEnv?: string[];
  /** Environment variables holding the cloud project (`GOOGLE_CLOUD_PROJECT`, ...), for formats that need one. */
  projectEnv?: string[];
  /** Environment variables holding the API version (`AZURE_API_VERSION`, ...). */
  apiVersionEnv?: string[];
  /** Headers the vendor asks integrators to send. */
  defaultHeaders?: Record<string, string>;
  quirks?: VendorQuirks;
  /** Provider id in the bundled price catalogue, when it differs from `id` or exists at all. */
  catalogId?: string | null;
  /** Further catalogue providers whose models this vendor also serves (Vertex AI serves Anthropic's). */
  catalogFallbacks?: string[];
  docsUrl: string;
}

/** A wire format: its adapter and the vendors (table rows) that speak it. */
export interface ProviderFamily {
  adapter: ProviderAdapter;
  vendors: VendorDefinition[];
}
