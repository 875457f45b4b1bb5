import type { ChatCompletion, ChatCompletionChunk, CompletionUsage } from '../core/canonical.js';

/**
 * Cached answers are kept as one chat completion, whether they were streamed or not: a streamed answer is
 * assembled here from its chunks, and a hit on a streaming request is replayed from the completion as chunks.
 */

interface ToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface ChoiceDelta {
  index?: number;
  delta?: { role?: string; content?: string | null; refusal?: string | null; tool_calls?: ToolCallDelta[] };
  finish_reason?: string | null;
}

interface AssembledChoice {
  role: string;
  content: string | null;
  refusal: string | null;
  toolCalls: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  finishReason: string | null;
}

/** Collects a stream's chunks into the completion it amounts to (text, tool calls, finish reasons, usage). */
export class StreamAssembler {
  private readonly choices = new Map<number, AssembledChoice>();
  private first: ChatCompletionChunk | null = null;
  private usage: CompletionUsage | null = null;

  add(chunk: ChatCompletionChunk): void {
    this.first ??= chunk;
    if (chunk.usage) this.usage = chunk.usage;
    for (const raw of chunk.choices as ChoiceDelta[]) {
      const index = raw.index ?? 0;
      let choice = this.choices.get(index);
      if (!choice) this.choices.set(index, (choice = { role: 'assistant', content: null, refusal: null, toolCalls: [], finishReason: null }));
      const delta = raw.delta ?? {};
      if (typeof delta.role === 'string') choice.role = delta.role;
      if (typeof delta.content === 'string') choice.content = (choice.content ?? '') + delta.content;
      if (typeof delta.refusal === 'string') choice.refusal = (choice.refusal ?? '') + delta.refusal;
      for (const call of delta.tool_calls ?? []) {
        const at = call.index ?? choice.toolCalls.length;
        const existing = choice.toolCalls[at] ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
        choice.toolCalls[at] = existing;
        if (call.id) existing.id = call.id;
        if (call.type) existing.type = call.type;
        if (call.function?.name) existing.function.name += call.function.name;
        if (call.function?.arguments) existing.function.arguments += call.function.arguments;
      }
      if (raw.finish_reason) choice.finishReason = raw.finish_reason;
    }
  }

  /** The completion, or null when the stream did not end normally (a choice without a finish reason, or no chunk). */
  completion(): ChatCompletion | null {
    if (!this.first || this.choices.size === 0) return null;
    const choices: unknown[] = [];
    for (const [index, choice] of [...this.choices].sort(([a], [b]) => a - b)) {
      if (choice.finishReason === null) return null;
      const message: Record<string, unknown> = { role: choice.role, content: choice.content, refusal: choice.refusal };
      if (choice.toolCalls.length > 0) message.tool_calls = choice.toolCalls.filter(Boolean);
      choices.push({ index, message, logprobs: null, finish_reason: choice.finishReason });
    }
    const { id, model, created, system_fingerprint: fingerprint } = this.first as ChatCompletionChunk & { created?: number; system_fingerprint?: string };
    return {
      id,
      object: 'chat.completion',
      created: created ?? Math.floor(Date.now() / 1000),
      model,
      choices,
      ...(fingerprint ? { system_fingerprint: fingerprint } : {}),
      usage: this.usage,
    };
  }
}

interface CompletionChoice {
  index?: number;
  message?: { role?: string; content?: string | null; refusal?: string | null; tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }> };
  finish_reason?: string | null;
}

/** Most characters of text per replayed chunk: a hit streams in pieces like an answer would, not one blob. */
const REPLAY_CHUNK_CHARS = 64;

/**
 * The chunks of a stream that says what `completion` says, as OpenAI streams it: the role first, the text in
 * pieces, tool calls whole, then each choice's finish reason; with `includeUsage`, every chunk has `usage: null`
 * and a last chunk with no choices carries the usage; without it no chunk has a `usage` key.
 */
export function replayChunks(completion: ChatCompletion, includeUsage: boolean): ChatCompletionChunk[] {
  const base = { id: completion.id, object: 'chat.completion.chunk' as const, created: completion.created, model: completion.model };
  const fingerprint = completion.system_fingerprint === undefined ? {} : { system_fingerprint: completion.system_fingerprint };
  const usageNull = includeUsage ? { usage: null } : {};
  // Assigned onto a fresh object, not spread (see core/with-fields.ts): a spread then `choices` took V8's slow path.
  const chunk = (choices: unknown[]): ChatCompletionChunk => Object.assign({}, base, fingerprint, { choices }, usageNull);
  const chunks: ChatCompletionChunk[] = [];
  for (const raw of completion.choices as CompletionChoice[]) {
    const index = raw.index ?? 0;
    const message = raw.message ?? {};
    chunks.push(chunk([{ index, delta: { role: message.role ?? 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]));
    const text = typeof message.content === 'string' ? message.content : '';
    for (let at = 0; at < text.length; at += REPLAY_CHUNK_CHARS) {
      chunks.push(chunk([{ index, delta: { content: text.slice(at, at + REPLAY_CHUNK_CHARS) }, logprobs: null, finish_reason: null }]));
    }
    if (typeof message.refusal === 'string' && message.refusal) chunks.push(chunk([{ index, delta: { refusal: message.refusal }, logprobs: null, finish_reason: null }]));
    if (message.tool_calls && message.tool_calls.length > 0) {
      const calls = message.tool_calls.map((call, i) => ({ index: i, id: call.id, type: call.type, function: call.function }));
      chunks.push(chunk([{ index, delta: { tool_calls: calls }, logprobs: null, finish_reason: null }]));
    }
    chunks.push(chunk([{ index, delta: {}, logprobs: null, finish_reason: raw.finish_reason ?? 'stop' }]));
  }
  if (includeUsage && completion.usage) chunks.push(Object.assign({}, base, fingerprint, { choices: [], usage: completion.usage }));
  return chunks;
}
