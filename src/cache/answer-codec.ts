import type { ChatCompletion, ChatCompletionChunk, CompletionUsage } from '../core/canonical.js';

/**
 * Cached answers are kept as one chat completion, whether they were streamed or not: a streamed answer is
 * assembled here from its chunks, and a hit on a streaming request is replayed from the completion as chunks.
 */

/**
 * The names OpenAI-compatible servers give a reasoning model's reasoning; an answer keeps and replays the one it
 * came in (a client reads the name its server uses).
 */
const REASONING_FIELDS = ['reasoning_content', 'reasoning'] as const;
type ReasoningField = (typeof REASONING_FIELDS)[number];

interface ToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface Logprobs {
  content?: unknown[] | null;
  refusal?: unknown[] | null;
}

interface ChoiceDelta {
  index?: number;
  delta?: {
    role?: string;
    content?: string | null;
    reasoning_content?: string | null;
    reasoning?: string | null;
    refusal?: string | null;
    tool_calls?: ToolCallDelta[];
    function_call?: { name?: string; arguments?: string };
    audio?: AudioDelta | null;
    annotations?: unknown[];
    images?: unknown[];
  };
  logprobs?: Logprobs | null;
  finish_reason?: string | null;
  /** The upstream's own reason when the answer did not end as the model meant (see cache.ts, storable). */
  native_finish_reason?: string;
}

/** A piece of a spoken answer (`modalities: ["audio"]`): its id first, transcript and base64 data in pieces, its expiry. */
interface AudioDelta {
  id?: string;
  transcript?: string;
  data?: string;
  expires_at?: number;
}

interface AssembledChoice {
  role: string;
  content: string | null;
  /** The reasoning of OpenAI-compatible servers, and thinking translated from other formats. */
  reasoning: string | null;
  /** The field the reasoning came in: `reasoning_content` (DeepSeek, older vLLM) or `reasoning` (OpenRouter, Groq, vLLM). */
  reasoningField: ReasoningField;
  refusal: string | null;
  toolCalls: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  /** The legacy `functions` parameter's call (finish_reason `function_call`), its pieces joined. */
  functionCall: { name: string; arguments: string } | null;
  /** A spoken answer, as a whole answer's `message.audio` holds it (transcript and data joined). */
  audio: { id: string; data: string; expires_at: number | null; transcript: string } | null;
  /** URL citations (web search), as the stream delivered them. */
  annotations: unknown[] | null;
  /** Generated images (OpenRouter's image models: `message.images`, each whole in one `delta.images`). */
  images: unknown[] | null;
  /** The token log probabilities the client asked for (`logprobs: true`), the pieces of every chunk joined. */
  logprobs: { content: unknown[] | null; refusal: unknown[] | null } | null;
  finishReason: string | null;
  nativeFinishReason: string | null;
}

/**
 * The top-level fields of a chunk the assembler reads (or that belong to one chunk only: OpenAI's `obfuscation` pads
 * each event to its own length). Any other is a vendor's own field about the whole answer, sent on every chunk or the
 * last (Perplexity's `citations` and `search_results`, OpenRouter's `provider`): the completion keeps its last value.
 * (`__proto__` is never copied: assigned, it would set the object's prototype rather than a field.)
 */
const CHUNK_FIELDS: ReadonlySet<string> = new Set(['id', 'object', 'created', 'model', 'choices', 'usage', 'service_tier', 'system_fingerprint', 'obfuscation', '__proto__']);
/** The top-level fields of a completion a replayed chunk is made of; any other goes on every chunk, as such vendors send it. */
const COMPLETION_FIELDS: ReadonlySet<string> = new Set(['id', 'object', 'created', 'model', 'choices', 'usage', 'service_tier', 'system_fingerprint', '__proto__']);

/**
 * What one kept log probability or annotation (a small object of a few fields) is counted as in `StreamAssembler.size`:
 * about what it takes in memory, without measuring it.
 */
const ITEM_SIZE = 128;

/**
 * Appends `items` to `into` in place (a loop, not push(...): one chunk may carry more items than the stack takes), and
 * returns what they count for in `StreamAssembler.size` (a log probability's alternatives count too).
 */
function appendCounted(into: unknown[], items: readonly unknown[]): number {
  let size = 0;
  for (const item of items) {
    into.push(item);
    const alternatives = (item as { top_logprobs?: unknown } | null)?.top_logprobs;
    size += ITEM_SIZE * (1 + (Array.isArray(alternatives) ? alternatives.length : 0));
  }
  return size;
}

/** Appends generated images as appendCounted does, each counted as its data URL's length (an image is megabytes, not an item). */
function appendImages(into: unknown[], images: readonly unknown[]): number {
  let size = 0;
  for (const image of images) {
    into.push(image);
    const url = (image as { image_url?: { url?: unknown } } | null)?.image_url?.url;
    size += typeof url === 'string' ? url.length : ITEM_SIZE;
  }
  return size;
}

/** Collects a stream's chunks into the completion it amounts to (text, tool calls, finish reasons, usage). */
export class StreamAssembler {
  private readonly choices = new Map<number, AssembledChoice>();
  private first: ChatCompletionChunk | null = null;
  private usage: CompletionUsage | null = null;
  private serviceTier: string | null = null;
  /** The vendor's own top-level fields (see CHUNK_FIELDS), each its last value; null until one came. */
  private extra: Record<string, unknown> | null = null;
  /**
   * About how much is kept so far: the characters of the text, reasoning, arguments and audio joined, and ITEM_SIZE
   * per log probability or annotation. Counted as it is kept, so a caller can stop keeping a stream that grows too
   * large without measuring anything again.
   */
  size = 0;

  add(chunk: ChatCompletionChunk): void {
    this.first ??= chunk;
    if (chunk.usage) this.usage = chunk.usage;
    const tier = (chunk as { service_tier?: unknown }).service_tier;
    if (typeof tier === 'string') this.serviceTier = tier;
    for (const name in chunk) if (!CHUNK_FIELDS.has(name)) (this.extra ??= {})[name] = (chunk as unknown as Record<string, unknown>)[name];
    for (const raw of chunk.choices as ChoiceDelta[]) {
      const index = raw.index ?? 0;
      let choice = this.choices.get(index);
      if (!choice) this.choices.set(index, (choice = { role: 'assistant', content: null, reasoning: null, reasoningField: 'reasoning_content', refusal: null, toolCalls: [], functionCall: null, audio: null, annotations: null, images: null, logprobs: null, finishReason: null, nativeFinishReason: null }));
      const delta = raw.delta ?? {};
      if (typeof delta.role === 'string') choice.role = delta.role;
      if (typeof delta.content === 'string') {
        choice.content = (choice.content ?? '') + delta.content;
        this.size += delta.content.length;
      }
      // One of the two names, as every other reader takes it: a server that sends both (vLLM's compatibility mode) sends
      // the same text twice.
      const field = REASONING_FIELDS.find((name) => typeof delta[name] === 'string');
      if (field !== undefined) {
        choice.reasoning = (choice.reasoning ?? '') + (delta[field] as string);
        choice.reasoningField = field;
        this.size += (delta[field] as string).length;
      }
      if (typeof delta.refusal === 'string') {
        choice.refusal = (choice.refusal ?? '') + delta.refusal;
        this.size += delta.refusal.length;
      }
      // Appended in place: copying what was kept at each chunk made a long stream with logprobs quadratic.
      if (Array.isArray(delta.annotations)) this.size += appendCounted((choice.annotations ??= []), delta.annotations);
      if (Array.isArray(delta.images)) this.size += appendImages((choice.images ??= []), delta.images);
      if (raw.logprobs) {
        const kept = (choice.logprobs ??= { content: null, refusal: null });
        if (Array.isArray(raw.logprobs.content)) this.size += appendCounted((kept.content ??= []), raw.logprobs.content);
        if (Array.isArray(raw.logprobs.refusal)) this.size += appendCounted((kept.refusal ??= []), raw.logprobs.refusal);
      }
      for (const call of delta.tool_calls ?? []) {
        const at = call.index ?? choice.toolCalls.length;
        const existing = choice.toolCalls[at] ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
        choice.toolCalls[at] = existing;
        if (call.id) existing.id = call.id;
        if (call.type) existing.type = call.type;
        // A name is whole in whichever delta has it (some providers repeat it in every delta), as OpenAI's SDK reads it.
        if (call.function?.name) existing.function.name = call.function.name;
        // Only text joins: an upstream's arguments of another type (an object) would throw, or join as '[object Object]'.
        if (typeof call.function?.arguments === 'string') {
          existing.function.arguments += call.function.arguments;
          this.size += call.function.arguments.length;
        }
      }
      if (delta.function_call) {
        const call = (choice.functionCall ??= { name: '', arguments: '' });
        if (delta.function_call.name) call.name = delta.function_call.name;
        if (typeof delta.function_call.arguments === 'string') {
          call.arguments += delta.function_call.arguments;
          this.size += delta.function_call.arguments.length;
        }
      }
      if (delta.audio) {
        const audio = (choice.audio ??= { id: '', data: '', expires_at: null, transcript: '' });
        if (delta.audio.id) audio.id = delta.audio.id;
        if (typeof delta.audio.transcript === 'string') {
          audio.transcript += delta.audio.transcript;
          this.size += delta.audio.transcript.length;
        }
        if (typeof delta.audio.data === 'string') {
          audio.data += delta.audio.data;
          this.size += delta.audio.data.length;
        }
        if (typeof delta.audio.expires_at === 'number') audio.expires_at = delta.audio.expires_at;
      }
      if (raw.finish_reason) choice.finishReason = raw.finish_reason;
      if (typeof raw.native_finish_reason === 'string') choice.nativeFinishReason = raw.native_finish_reason;
    }
  }

  /** The completion, or null when the stream did not end normally (a choice without a finish reason, or no chunk). */
  completion(): ChatCompletion | null {
    if (!this.first || this.choices.size === 0) return null;
    const choices: unknown[] = [];
    for (const [index, choice] of [...this.choices].sort(([a], [b]) => a - b)) {
      if (choice.finishReason === null) return null;
      const message: Record<string, unknown> = { role: choice.role, content: choice.content };
      if (choice.reasoning !== null) message[choice.reasoningField] = choice.reasoning;
      message.refusal = choice.refusal;
      if (choice.annotations) message.annotations = choice.annotations;
      if (choice.images) message.images = choice.images;
      if (choice.toolCalls.length > 0) message.tool_calls = choice.toolCalls.filter(Boolean);
      if (choice.functionCall) message.function_call = choice.functionCall;
      if (choice.audio) message.audio = choice.audio;
      const assembled: Record<string, unknown> = { index, message, logprobs: choice.logprobs, finish_reason: choice.finishReason };
      if (choice.nativeFinishReason !== null) assembled.native_finish_reason = choice.nativeFinishReason;
      choices.push(assembled);
    }
    const { id, model, created, system_fingerprint: fingerprint } = this.first as ChatCompletionChunk & { created?: number; system_fingerprint?: string };
    return {
      id,
      object: 'chat.completion',
      created: created ?? Math.floor(Date.now() / 1000),
      model,
      choices,
      ...(this.serviceTier !== null ? { service_tier: this.serviceTier } : {}),
      ...(fingerprint ? { system_fingerprint: fingerprint } : {}),
      usage: this.usage,
      ...this.extra,
    };
  }
}

interface CompletionChoice {
  index?: number;
  message?: {
    role?: string;
    content?: string | null;
    reasoning_content?: string | null;
    reasoning?: string | null;
    refusal?: string | null;
    annotations?: unknown[];
    images?: unknown[];
    tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
    function_call?: { name: string; arguments: string };
    audio?: AudioDelta | null;
  };
  logprobs?: Logprobs | null;
  finish_reason?: string | null;
}

/** Most characters of text per replayed chunk: a hit streams in pieces like an answer would, not one blob. */
const REPLAY_CHUNK_CHARS = 64;

/** `text` in replay pieces, cut as they are read (a long answer is hundreds of thousands of them). */
function* pieces(text: string): Generator<string> {
  for (let at = 0; at < text.length; at += REPLAY_CHUNK_CHARS) yield text.slice(at, at + REPLAY_CHUNK_CHARS);
}

/**
 * The content chunks of a choice with log probabilities: one chunk per token, as OpenAI streams them, when the
 * tokens spell the content; else the text in pieces with every token's entry on the first.
 */
function contentWithLogprobs(text: string, logprobs: Logprobs): Array<{ content: string; logprobs: Logprobs }> {
  const tokens = Array.isArray(logprobs.content) ? logprobs.content : [];
  const spelled = tokens.map((entry) => (typeof entry === 'object' && entry !== null && typeof (entry as { token?: unknown }).token === 'string' ? (entry as { token: string }).token : null));
  if (tokens.length > 0 && spelled.every((token) => token !== null) && spelled.join('') === text) {
    return tokens.map((entry, i) => ({ content: spelled[i] as string, logprobs: { content: [entry], refusal: null } }));
  }
  const parts = text === '' ? [''] : [...pieces(text)];
  return parts.map((content, i) => ({ content, logprobs: i === 0 ? { content: tokens, refusal: logprobs.refusal ?? null } : { content: [], refusal: null } }));
}

/**
 * The chunks of a stream that says what `completion` says, as OpenAI streams it: the role first, the reasoning and
 * text in pieces (one chunk per token when the answer has log probabilities), the refusal, annotations, images, tool
 * calls, a legacy function call and audio whole, then each choice's finish reason; with `includeUsage`, every chunk has
 * `usage: null` and a last chunk with no choices carries the usage; without it no chunk has a `usage` key. Made as
 * they are read: a long answer's hundreds of thousands of chunks, made at once, held the event loop for a third of
 * a second and lived long enough to be promoted (test/e2e/cache-stream-bound.test.ts).
 */
export function* replayChunks(completion: ChatCompletion, includeUsage: boolean): Generator<ChatCompletionChunk> {
  const base = { id: completion.id, object: 'chat.completion.chunk' as const, created: completion.created, model: completion.model };
  const tier = (completion as { service_tier?: unknown }).service_tier;
  const extra: Record<string, unknown> = Object.assign(
    typeof tier === 'string' ? { service_tier: tier } : {},
    completion.system_fingerprint === undefined ? {} : { system_fingerprint: completion.system_fingerprint },
  );
  for (const name in completion) if (!COMPLETION_FIELDS.has(name)) extra[name] = (completion as unknown as Record<string, unknown>)[name];
  const usageNull = includeUsage ? { usage: null } : {};
  // Assigned onto a fresh object, not spread (see core/with-fields.ts): a spread then `choices` took V8's slow path.
  const chunk = (choices: unknown[]): ChatCompletionChunk => Object.assign({}, base, extra, { choices }, usageNull);
  for (const raw of completion.choices as CompletionChoice[]) {
    const index = raw.index ?? 0;
    const message = raw.message ?? {};
    const delta = (value: Record<string, unknown>, logprobs: Logprobs | null = null): ChatCompletionChunk => chunk([{ index, delta: value, logprobs, finish_reason: null }]);
    yield delta({ role: message.role ?? 'assistant', content: '', refusal: null });
    for (const field of REASONING_FIELDS) {
      const reasoning = message[field];
      if (typeof reasoning === 'string') for (const piece of pieces(reasoning)) yield delta({ [field]: piece });
    }
    const text = typeof message.content === 'string' ? message.content : '';
    if (raw.logprobs && Array.isArray(raw.logprobs.content) && raw.logprobs.content.length > 0) {
      for (const piece of contentWithLogprobs(text, raw.logprobs)) yield delta({ content: piece.content }, piece.logprobs);
    } else for (const piece of pieces(text)) yield delta({ content: piece });
    if (typeof message.refusal === 'string' && message.refusal) yield delta({ refusal: message.refusal });
    if (Array.isArray(message.annotations) && message.annotations.length > 0) yield delta({ annotations: message.annotations });
    if (Array.isArray(message.images) && message.images.length > 0) yield delta({ images: message.images });
    if (message.tool_calls && message.tool_calls.length > 0) {
      const calls = message.tool_calls.map((call, i) => ({ index: i, id: call.id, type: call.type, function: call.function }));
      yield delta({ tool_calls: calls });
    }
    if (message.function_call) yield delta({ function_call: message.function_call });
    if (message.audio) yield delta({ audio: message.audio });
    yield chunk([{ index, delta: {}, logprobs: null, finish_reason: raw.finish_reason ?? 'stop' }]);
  }
  if (includeUsage && completion.usage) yield Object.assign({}, base, extra, { choices: [], usage: completion.usage });
}
