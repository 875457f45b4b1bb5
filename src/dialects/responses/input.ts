import type { ChatMessage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';
import { thinkingBlocksIn } from '../../wire/openai-responses/translated-reasoning.js';
import { readSignatures, restoreSignatures } from './gemini-signatures.js';

type Json = Record<string, unknown>;

/**
 * Where a translation records what the canonical request cannot say: the first thing, the 400 it gives. Only that one
 * is kept (an error costs a stack trace, and an input of a million unknown items would hold a million of them).
 */
export type Untranslatable = GatewayError[];

/** What only a provider serving the Responses API can take: the attempt on any other fails with this 400. */
export function stateful(untranslatable: Untranslatable, param: string, what: string): void {
  if (untranslatable.length > 0) return;
  untranslatable.push(
    gatewayError('unsupported_for_provider', `${what} needs a provider that serves the Responses API itself (such as openai/...); this model's provider gets the request translated to chat completions, which cannot carry it.`, { param }),
  );
}

/**
 * What tollgate cannot read (a malformed item, a type it does not know): a provider serving the Responses API gets
 * the body as it is and judges it (a type OpenAI added since passes through); any other gets this 400.
 */
export function unreadable(untranslatable: Untranslatable, param: string, message: string): void {
  if (untranslatable.length > 0) return;
  untranslatable.push(gatewayError('invalid_value', `Invalid '${param}': ${message}`, { param }));
}

/** A content part of an input message as a canonical (chat completions) part; null when it is left out. */
function partOf(part: Json, param: string, untranslatable: Untranslatable): Json | null {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'refusal': {
      // Text that is missing or not a string is refused: sent as '' the model would answer a question never asked.
      const field = part.type === 'refusal' ? 'refusal' : 'text';
      const text = part[field];
      if (typeof text === 'string') return { type: 'text', text };
      unreadable(untranslatable, `${param}.${field}`, 'expected a string.');
      return null;
    }
    case 'input_image':
      if (typeof part.image_url !== 'string') {
        if (typeof part.file_id === 'string') stateful(untranslatable, param, 'An image by file_id (a Files API upload)');
        else unreadable(untranslatable, param, "an input_image needs an 'image_url' (a URL or a data URL) or a 'file_id'.");
        return null;
      }
      return { type: 'image_url', image_url: { url: part.image_url, ...(typeof part.detail === 'string' ? { detail: part.detail } : {}) } };
    case 'input_file':
      if (typeof part.file_data !== 'string') {
        if (typeof part.file_id === 'string' || typeof part.file_url === 'string') stateful(untranslatable, param, 'A file by file_id or file_url');
        else unreadable(untranslatable, param, "an input_file needs 'file_data', a 'file_id' or a 'file_url'.");
        return null;
      }
      return { type: 'file', file: { file_data: part.file_data, ...(typeof part.filename === 'string' ? { filename: part.filename } : {}) } };
    case 'input_audio':
      return { type: 'input_audio', input_audio: part.input_audio };
    default:
      unreadable(untranslatable, `${param}.type`, `'${quoteValue(part.type)}' is not a content part type tollgate can translate.`);
      return null;
  }
}

/** A message's content as canonical content: a string as it is, parts translated (an assistant's joined as text). */
function contentOf(content: unknown, role: string, param: string, untranslatable: Untranslatable): unknown {
  if (typeof content === 'string') return content;
  const parts: Json[] = [];
  if (!Array.isArray(content)) {
    unreadable(untranslatable, param, 'expected a string or an array of content parts.');
    return parts;
  }
  content.forEach((part: unknown, j) => {
    if (!isRecord(part)) return unreadable(untranslatable, `${param}[${j}]`, 'expected an object (a content part).');
    const translated = partOf(part, `${param}[${j}]`, untranslatable);
    if (translated) parts.push(translated);
  });
  // Chat completions' assistant turns are text: what the model said earlier goes back as one string.
  if (role === 'assistant') return parts.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
  return parts;
}

/** A function_call_output's output: a string as it is; parts as canonical parts, or their text when all are text. */
function toolOutputOf(output: unknown, param: string, untranslatable: Untranslatable): unknown {
  if (typeof output === 'string') return output;
  const parts = contentOf(output, 'tool', param, untranslatable) as Json[] | string;
  if (typeof parts === 'string') return parts;
  return parts.every((part) => part.type === 'text') ? parts.map((part) => part.text).join('') : parts;
}

/** Item types that are a built-in tool's call or its result: the provider that ran the tool must see them. */
const BUILT_IN_ITEMS = /^(?:web_search_call|file_search_call|computer_call|computer_call_output|code_interpreter_call|image_generation_call|local_shell_call|local_shell_call_output|shell_call|shell_call_output|apply_patch_call|apply_patch_call_output|mcp_list_tools|mcp_approval_request|mcp_approval_response|mcp_call|custom_tool_call|custom_tool_call_output|tool_search_call|tool_search_output|compaction)$/;

/**
 * A Responses `input` as canonical chat messages: a string is one user message; items become messages in order
 * (system, developer, user, assistant), function_call items the tool calls of an assistant turn (joined to the
 * assistant message just before them), function_call_output items tool messages. Reasoning items are dropped: their
 * encrypted content is only readable by the model (and provider) that wrote it, but for those tollgate wrote: Claude's
 * signed thinking, and with `geminiSignatures` Gemini's thought signatures, put back on the calls they sign. What needs
 * the provider's own state (item references, built-in tools' items, files by id) is recorded in `untranslatable` and
 * left out.
 */
export function messagesOf(input: unknown, untranslatable: Untranslatable, geminiSignatures = false): ChatMessage[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const messages: ChatMessage[] = [];
  /** Gemini's thought signatures from reasoning items tollgate wrote, by call_id (restored once all calls are read). */
  const signatures = new Map<string, string>();
  /** Claude's signed thinking from reasoning items tollgate wrote, for the assistant turn they lead (see attach). */
  let thinking: Json[] = [];
  const attach = (message: ChatMessage): void => {
    if (thinking.length === 0) return;
    message.thinking_blocks = [...((message.thinking_blocks as Json[] | undefined) ?? []), ...thinking];
    thinking = [];
  };
  (input as Json[]).forEach((item, i) => {
    const param = `input[${i}]`;
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
        return unreadable(untranslatable, `${param}.role`, "expected one of 'user', 'assistant', 'system' or 'developer'.");
      }
      const message: ChatMessage = { role, content: contentOf(item.content, role, `${param}.content`, untranslatable) };
      if (role === 'assistant') attach(message);
      else thinking = [];
      messages.push(message);
    } else if (type === 'function_call') {
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string') return unreadable(untranslatable, param, "a function_call item needs a string 'call_id' and 'name'.");
      // Arguments not written as a JSON string would reach the model as a call without them.
      if (typeof item.arguments !== 'string') return unreadable(untranslatable, `${param}.arguments`, 'expected a string (the arguments as JSON text).');
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages.at(-1);
      // Appended in place (the message is this translation's own): copying the calls at each one was quadratic, seconds
      // of a stalled event loop for an input of 20 000 parallel calls.
      if (last?.role === 'assistant') {
        ((last.tool_calls as unknown[] | undefined) ?? (last.tool_calls = [])).push(call);
        attach(last);
      } else {
        const message: ChatMessage = { role: 'assistant', content: null, tool_calls: [call] };
        attach(message);
        messages.push(message);
      }
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string') return unreadable(untranslatable, param, "a function_call_output item needs a string 'call_id'.");
      if (item.output === undefined || item.output === null) return unreadable(untranslatable, `${param}.output`, 'expected a string or an array of content parts (the tool\'s result).');
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: toolOutputOf(item.output, `${param}.output`, untranslatable) });
    } else if (type === 'reasoning') {
      // Claude's signed thinking that tollgate carried in encrypted_content goes back with the turn it led (only an
      // Anthropic-format provider reads it: others never get thinking_blocks); any other reasoning is another model's.
      // A loop, not push(...): the blocks are the client's to write, and a spread of 200 000 of them (a few hundred KB
      // of encrypted_content) overflowed the stack, a 500 instead of the request going on.
      for (const block of thinkingBlocksIn(item.encrypted_content) ?? []) thinking.push(block);
      // Gemini's thought signatures, by call_id: matched to the calls wherever they are in the input (the item comes
      // just before its call as tollgate writes it, but a client may reorder).
      if (geminiSignatures) readSignatures(item.encrypted_content, signatures);
    } else if (type === 'item_reference') {
      stateful(untranslatable, param, 'An item_reference (an item the provider stored; send the item itself instead, as the Vercel AI SDK does with providerOptions.openai.store: false)');
    } else if (typeof type === 'string' && BUILT_IN_ITEMS.test(type)) {
      stateful(untranslatable, param, `A '${type}' item (a built-in tool's call or result)`);
    } else {
      unreadable(untranslatable, `${param}.type`, `'${quoteValue(type)}' is not an input item type tollgate can translate.`);
    }
  });
  restoreSignatures(messages, signatures);
  return messages;
}
