import type { ChatCompletionRequest, ChatMessage, EmbeddingsRequest } from '../core/canonical.js';
import type { Finding } from './types.js';
import { isRecord } from '../core/is-record.js';

/** What the request side needs of compiled rules: findings in a text, and the text with its redact findings replaced. */
export interface TextScanner {
  scan(text: string): Finding[];
  redact(text: string, findings: readonly Finding[]): string;
}

/** What input rules made of a request: the first block (with where it was), and per rule what was redacted or flagged. */
export interface InputVerdict {
  blocked: { finding: Finding; param: string } | null;
  /** Every finding acted on, block included, in request order. */
  findings: Finding[];
  /** The request's texts changed (a redaction): the caller must not send the client's own body as it is. */
  changed: boolean;
}

/** One text of a request: where it is (`messages[2].content`), its value, and how to put a new value back. */
interface Slot {
  param: string;
  text: string;
  /** The index of the message it is in (chat), or of the input item (embeddings). */
  at: number;
  set(value: string): void;
}

/**
 * The texts a chat request sends a model: every message's content (a string, or its text and refusal parts), an
 * assistant turn's refusal and reasoning, tool call arguments (a custom tool call's input, a legacy function call's
 * arguments), and tool results. Images, audio and file parts carry no text to check.
 */
function chatSlots(request: ChatCompletionRequest): Slot[] {
  const slots: Slot[] = [];
  // Writes go to copies, each made once (the message array, a message changed with its parts and tool calls): the
  // client's parsed body stays as it came. Copying a message's parts or calls at each write was quadratic: 20 000
  // tool calls each holding an email to redact held the event loop for seconds.
  let copied = false;
  const owned = new Map<number, ChatMessage>();
  const replaceMessage = (i: number): ChatMessage => {
    let copy = owned.get(i);
    if (copy) return copy;
    if (!copied) {
      request.messages = [...request.messages];
      copied = true;
    }
    const original = request.messages[i] as ChatMessage;
    copy = { ...original };
    if (Array.isArray(original.content)) copy.content = [...(original.content as unknown[])];
    if (Array.isArray(original.tool_calls)) copy.tool_calls = [...(original.tool_calls as unknown[])];
    request.messages[i] = copy;
    owned.set(i, copy);
    return copy;
  };
  request.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    const content = message.content;
    if (typeof content === 'string') {
      slots.push({ param: `${at}.content`, text: content, at: i, set: (value) => (replaceMessage(i).content = value) });
    } else if (Array.isArray(content)) {
      content.forEach((part, j) => {
        // A plain-text file (an Anthropic document with a text source, a Gemini text/plain part) is text the model
        // reads: checked like a text part, its base64 data decoded and re-encoded.
        const file = isRecord(part) && part.type === 'file' && isRecord(part.file) ? part.file : null;
        const fileText = file && typeof file.file_data === 'string' ? plainTextData(file.file_data) : null;
        if (file && fileText !== null) {
          slots.push({
            param: `${at}.content[${j}].file.file_data`,
            text: fileText,
            at: i,
            set: (value) => {
              const parts = replaceMessage(i).content as unknown[];
              parts[j] = { ...(parts[j] as Record<string, unknown>), file: { ...file, file_data: `${PLAIN_TEXT_DATA}${Buffer.from(value, 'utf8').toString('base64')}` } };
            },
          });
        }
        // A refusal part handed back is the assistant's words: providers send it on as text (Gemini, Bedrock, Cohere).
        const key = isRecord(part) && part.type === 'text' ? 'text' : isRecord(part) && part.type === 'refusal' ? 'refusal' : null;
        if (key !== null && typeof (part as Record<string, unknown>)[key] === 'string') {
          slots.push({
            param: `${at}.content[${j}].${key}`,
            text: (part as Record<string, unknown>)[key] as string,
            at: i,
            set: (value) => {
              const parts = replaceMessage(i).content as unknown[];
              parts[j] = { ...(parts[j] as Record<string, unknown>), [key]: value };
            },
          });
        }
      });
    }
    // An assistant turn handed back carries text outside its content too, which goes upstream with it: a refusal,
    // reasoning (`reasoning_content`, vLLM's `reasoning`; unsigned, so a redaction there breaks nothing), and a legacy
    // function call's arguments. Left out, a client could carry anything a rule blocks past it in them.
    for (const field of ['refusal', 'reasoning_content', 'reasoning'] as const) {
      const text = (message as Record<string, unknown>)[field];
      if (typeof text === 'string') slots.push({ param: `${at}.${field}`, text, at: i, set: (value) => ((replaceMessage(i) as Record<string, unknown>)[field] = value) });
    }
    const legacy = (message as Record<string, unknown>).function_call;
    if (isRecord(legacy) && typeof legacy.arguments === 'string') {
      slots.push({
        param: `${at}.function_call.arguments`,
        text: legacy.arguments,
        at: i,
        set: (value) => ((replaceMessage(i) as Record<string, unknown>).function_call = { ...legacy, arguments: value }),
      });
    }
    const calls = message.tool_calls;
    if (Array.isArray(calls)) {
      calls.forEach((call, j) => {
        // A function's JSON `arguments`, or a custom (freeform) tool's `input` text (as the answer guard reads them).
        const fn = isRecord(call) && isRecord(call.function) && typeof call.function.arguments === 'string' ? call.function : null;
        const custom = !fn && isRecord(call) && isRecord(call.custom) && typeof call.custom.input === 'string' ? call.custom : null;
        const holder = fn ? 'function' : custom ? 'custom' : null;
        if (holder === null) return;
        const field = holder === 'function' ? 'arguments' : 'input';
        slots.push({
          param: `${at}.tool_calls[${j}].${holder}.${field}`,
          text: (fn ?? custom)?.[field] as string,
          at: i,
          set: (value) => {
            const list = replaceMessage(i).tool_calls as unknown[];
            const old = list[j] as Record<string, unknown>;
            list[j] = { ...old, [holder]: { ...(old[holder] as Record<string, unknown>), [field]: value } };
          },
        });
      });
    }
  });
  return slots;
}

const PLAIN_TEXT_DATA = 'data:text/plain;base64,';

/** The text of a `data:text/plain;base64,` URL, or null for any other. */
function plainTextData(url: string): string | null {
  return url.startsWith(PLAIN_TEXT_DATA) ? Buffer.from(url.slice(PLAIN_TEXT_DATA.length), 'base64').toString('utf8') : null;
}

function embeddingsSlots(request: EmbeddingsRequest): Slot[] {
  const input = request.input;
  if (typeof input === 'string') return [{ param: 'input', text: input, at: 0, set: (value) => (request.input = value) }];
  if (!Array.isArray(input)) return [];
  const slots: Slot[] = [];
  // The input list is copied once, at the first write (the client's parsed body stays as it came), not at each.
  let copy: string[] | null = null;
  (input as unknown[]).forEach((item, i) => {
    if (typeof item !== 'string') return;
    slots.push({
      param: `input[${i}]`,
      text: item,
      at: i,
      set: (value) => {
        copy ??= [...(request.input as string[])];
        copy[i] = value;
        request.input = copy;
      },
    });
  });
  return slots;
}


/**
 * The texts the input rules check, in request order, each with the index of its message (or input item): what a
 * moderation classifier is given to judge, so that it judges what the other input rules read (tool results, tool call
 * arguments, plain-text files, an assistant turn's refusal and reasoning), not the messages' content alone.
 */
export function requestTexts(request: ChatCompletionRequest | EmbeddingsRequest, operation: 'chat' | 'embeddings'): Array<{ at: number; text: string }> {
  const slots = operation === 'chat' ? chatSlots(request as ChatCompletionRequest) : embeddingsSlots(request as EmbeddingsRequest);
  return slots.map(({ at, text }) => ({ at, text }));
}

/**
 * Checks a request's texts: stops at the first text holding a `block` finding, else replaces every `redact`
 * finding in place (on copies: the client's parsed body stays as it came) and reports `flag` findings.
 */
export function guardRequest(request: ChatCompletionRequest | EmbeddingsRequest, operation: 'chat' | 'embeddings', scanner: TextScanner): InputVerdict {
  const slots = operation === 'chat' ? chatSlots(request as ChatCompletionRequest) : embeddingsSlots(request as EmbeddingsRequest);
  const findings: Finding[] = [];
  let changed = false;
  for (const slot of slots) {
    const found = scanner.scan(slot.text);
    if (found.length === 0) continue;
    const block = found.find((finding) => finding.action === 'block');
    if (block) {
      // Nothing goes upstream, but the request log may keep the body: what the rules found is taken out of it too.
      slot.set(scanner.redact(slot.text, asRedactions(found)));
      return { blocked: { finding: block, param: slot.param }, findings: [...findings, block], changed: true };
    }
    // A loop, not push(...): spread arguments live on the stack, and one text can hold 150 000 findings.
    for (const finding of found) findings.push(finding);
    if (found.some((finding) => finding.action === 'redact')) {
      slot.set(scanner.redact(slot.text, found));
      changed = true;
    }
  }
  return { blocked: null, findings, changed };
}

/** Where a native body's conversation is, which of its keys hold no text a person wrote, and which parts are thoughts. */
interface NativeTextLayout {
  fields: readonly string[];
  notText: ReadonlySet<string>;
  isThought: (value: Record<string, unknown>) => boolean;
  /** A plain-text document's text, held under a key `notText` skips (`data`), base64 or not; null for anything else. */
  plainText: (value: Record<string, unknown>) => { key: string; data: string; decode: boolean } | null;
  /**
   * Keys whose value is the client's own JSON (a tool's input, a function's arguments or result): every string in
   * it is text, whatever its key is called (`data`, `url`, `name` and `id` are ordinary names for a tool's fields).
   */
  payload: ReadonlySet<string>;
}

// OpenAI's Responses API: `input` (a string or items) and `instructions`. Ids, call ids, names, statuses, file and
// image references and base64 data are not text; reasoning items are the model's own, their content encrypted, and so
// is a compaction item's (what POST /v1/responses/compact gave, sent back as input).
// A function call's arguments and a tool's output are strings, checked like any text.
const RESPONSES_TEXT: NativeTextLayout = {
  fields: ['input', 'instructions'],
  notText: new Set(['type', 'role', 'id', 'call_id', 'name', 'status', 'image_url', 'file_id', 'file_data', 'file_url', 'filename', 'detail', 'format']),
  isThought: (value) => value.type === 'reasoning' || value.type === 'compaction',
  plainText: () => null,
  payload: new Set(),
};

const NATIVE_TEXT: Record<string, NativeTextLayout> = {
  'openai-responses': RESPONSES_TEXT,
  // A compaction body (POST /v1/responses/compact) is a Responses body.
  'openai-responses-compact': RESPONSES_TEXT,
  // A legacy Completions body (POST /v1/completions): the prompt (a string or strings; token arrays hold no text) and
  // the suffix a fill-in-the-middle completion fills up to.
  'openai-completions': { fields: ['prompt', 'suffix'], notText: new Set(), isThought: () => false, plainText: () => null, payload: new Set() },
  // Anthropic: ids, types, signatures, base64 data. Thinking blocks are left as they are: their signature covers
  // their text, and they are the model's own words, not the client's.
  anthropic: {
    fields: ['messages', 'system'],
    notText: new Set(['type', 'role', 'id', 'tool_use_id', 'name', 'signature', 'data', 'media_type', 'url', 'file_id', 'cache_control', 'citations']),
    isThought: (value) => value.type === 'thinking' || value.type === 'redacted_thinking',
    // A document's text source: `{type: 'text', media_type: 'text/plain', data: '...'}`.
    plainText: (value) => (value.type === 'text' && value.media_type === 'text/plain' && typeof value.data === 'string' ? { key: 'data', data: value.data, decode: false } : null),
    // tool_use, server_tool_use and mcp_tool_use blocks.
    payload: new Set(['input']),
  },
  // Gemini: roles, names, ids, MIME types, base64 data, file URIs and thought signatures; thought parts are the
  // model's own words.
  gemini: {
    fields: ['contents', 'systemInstruction', 'system_instruction'],
    notText: new Set(['role', 'name', 'id', 'mimeType', 'mime_type', 'data', 'fileUri', 'file_uri', 'thoughtSignature', 'thought_signature']),
    isThought: (value) => value.thought === true,
    // An inline text/plain part: `{mimeType: 'text/plain', data: '<base64>'}`.
    plainText: (value) => {
      const mime = value.mimeType ?? value.mime_type;
      return typeof mime === 'string' && mime.startsWith('text/plain') && typeof value.data === 'string' ? { key: 'data', data: value.data, decode: true } : null;
    },
    // functionCall.args and functionResponse.response.
    payload: new Set(['args', 'response']),
  },
};

/**
 * The client's own body (native pass-through) with `visit` applied to every string of its conversation
 * (Anthropic's `messages` and `system`, Gemini's `contents` and `systemInstruction`) that is text, not an id, a
 * signature or base64 data; on copies, the client's parsed body stays as it came. A format without a known layout
 * is returned as it is.
 */
function mapNativeText(body: Record<string, unknown>, format: string, visit: (text: string) => string): Record<string, unknown> {
  const layout = NATIVE_TEXT[format];
  if (!layout) return body;
  const walkPayload = (value: unknown): unknown => {
    if (typeof value === 'string') return visit(value);
    if (Array.isArray(value)) return value.map(walkPayload);
    if (!isRecord(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = walkPayload(item);
    return out;
  };
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return visit(value);
    if (Array.isArray(value)) return value.map(walk);
    if (!isRecord(value)) return value;
    if (layout.isThought(value)) return value;
    const plain = layout.plainText(value);
    if (plain) {
      const text = plain.decode ? Buffer.from(plain.data, 'base64').toString('utf8') : plain.data;
      const visited = visit(text);
      if (visited !== text) return { ...value, [plain.key]: plain.decode ? Buffer.from(visited, 'utf8').toString('base64') : visited };
      return value;
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = layout.payload.has(key) ? walkPayload(item) : layout.notText.has(key) ? item : walk(item);
    return out;
  };
  const out = { ...body };
  for (const field of layout.fields) if (field in body) out[field] = walk(body[field]);
  return out;
}

/**
 * Whether a native body holds text the model reads that its canonical form has no place for, though it translates:
 * an Anthropic document's `title` and `context` (Anthropic passes both to the model), in a message or a tool result.
 * Such a body is checked whole (guardNativeBody), or the rules would never see that text.
 */
export function hasNativeOnlyText(body: Record<string, unknown>, format: string): boolean {
  if (format !== 'anthropic' || !Array.isArray(body.messages)) return false;
  const described = (block: unknown): boolean => isRecord(block) && block.type === 'document' && (typeof block.title === 'string' || typeof block.context === 'string');
  return body.messages.some(
    (message: unknown) =>
      isRecord(message) &&
      Array.isArray(message.content) &&
      message.content.some((block: unknown) => described(block) || (isRecord(block) && block.type === 'tool_result' && Array.isArray(block.content) && block.content.some(described))),
  );
}

/** Findings with `block` ones turned into redactions: a blocked request's text scrubbed before anything records it. */
function asRedactions(findings: readonly Finding[]): Finding[] {
  return findings.map((finding) => (finding.action === 'block' ? { ...finding, action: 'redact' } : finding));
}

/**
 * The client's own body of a blocked request with every block and redact match replaced, so that the request log's
 * copy of it (log_bodies) never keeps what the rules refused.
 */
export function scrubNativeBody(body: Record<string, unknown>, scanner: TextScanner, format: string): Record<string, unknown> {
  return mapNativeText(body, format, (text) => {
    const found = asRedactions(scanner.scan(text)).filter((finding) => finding.action === 'redact');
    return found.length > 0 ? scanner.redact(text, found) : text;
  });
}

/** The client's own body redacted like the canonical request (after the canonical check changed some text). */
export function redactNativeBody(body: Record<string, unknown>, scanner: TextScanner, format: string): Record<string, unknown> {
  return mapNativeText(body, format, (text) => {
    const found = scanner.scan(text).filter((finding) => finding.action === 'redact');
    return found.length > 0 ? scanner.redact(text, found) : text;
  });
}

/**
 * The client's own body checked whole, for a request whose canonical form left parts out (code execution parts,
 * block kinds it has no counterpart for): those parts go to an upstream of the client's format as they are, so the
 * rules must see their text too. Every finding is returned; the first `block` one stops the request; `redact` ones
 * are replaced in the body returned.
 */
export function guardNativeBody(body: Record<string, unknown>, scanner: TextScanner, format: string): { blocked: Finding | null; findings: Finding[]; body: Record<string, unknown> } {
  const findings: Finding[] = [];
  let blocked: Finding | null = null;
  const checked = mapNativeText(body, format, (text) => {
    if (blocked) return text;
    const found = scanner.scan(text);
    if (found.length === 0) return text;
    for (const finding of found) findings.push(finding);
    blocked = found.find((finding) => finding.action === 'block') ?? null;
    const redact = found.filter((finding) => finding.action === 'redact');
    return redact.length > 0 ? scanner.redact(text, redact) : text;
  });
  return { blocked, findings, body: checked };
}
