// A scripted upstream that speaks Anthropic's Messages API (POST /v1/messages): it checks requests the way
// Anthropic does (x-api-key, anthropic-version, max_tokens, user/assistant roles only, no unknown top-level
// fields, signed thinking blocks handed back unchanged) and answers in Anthropic's JSON and SSE shapes
// (https://docs.anthropic.com/en/api/messages, .../build-with-claude/extended-thinking, .../streaming), so a
// test through it proves the adapter translates, or passes through, faithfully.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiveExchange, readBody } from './exchange.js';
import { deliverJson, deliverRepeated, deliverStream, OK_MODE, type UpstreamMode } from './modes.js';
import { randomAlphanumeric } from './random-ids.js';
import { sendRaw } from './respond.js';

/**
 * The shared modes, plus an `error` event sent inside an open stream after `after` frames; the last `together` of those
 * frames go in one write with the error event (as one network read), the others one write each.
 */
export type AnthropicMode = UpstreamMode | { kind: 'stream-error'; after: number; type?: string; message?: string; together?: number };

export interface RecordedCall {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** The body exactly as received (JSON.parse rounds big numbers; this does not). */
  raw?: string;
}

/** What the upstream answered a successful /v1/messages request with: the message, or the stream's frames. */
export interface SentAnswer {
  message: Json;
  /** The SSE frames as written (`event: ...\ndata: ...\n\n`), for a stream. */
  frames: string[] | null;
}

export interface AnthropicUpstream {
  url: string;
  calls: RecordedCall[];
  /** The answers given, in order (successful /v1/messages requests only). */
  sent: SentAnswer[];
  setMode(mode: AnthropicMode): void;
  /** One-shot modes for the next /v1/messages requests, FIFO, before the default mode. */
  enqueue(...modes: AnthropicMode[]): void;
  /**
   * Cache tokens reported in every later answer's usage (Anthropic reports them beside input_tokens): reads, and
   * writes of the 5-minute and of the 1-hour cache (cache_creation_input_tokens is their sum).
   */
  setCacheTokens(read: number, write: number, write1h?: number): void;
  reset(): void;
  close(): Promise<void>;
}

export interface AnthropicUpstreamOptions {
  /** When a string, requests must carry `x-api-key: <apiKey>`. */
  apiKey?: string | null;
}

type Json = Record<string, any>;

const TOP_LEVEL = new Set([
  'model', 'messages', 'max_tokens', 'system', 'metadata', 'stop_sequences', 'stream', 'temperature', 'top_p', 'top_k',
  'tools', 'tool_choice', 'thinking', 'output_config', 'service_tier', 'container', 'mcp_servers',
]);
/** The tool_use ids Anthropic takes (its 400 quotes this pattern). */
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const BLOCK_TYPES = new Set(['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use', 'web_search_tool_result']);
/** Anthropic's documented prompt that makes a model with thinking enabled answer with a redacted_thinking block. */
export const REDACTED_THINKING_TRIGGER = 'ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253';
/** The web search server tool's type (Anthropic runs it and reports it in usage.server_tool_use). */
export const WEB_SEARCH_TOOL = 'web_search_20250305';
const DEFAULT_ERRORS: Record<number, [string, string]> = {
  400: ['invalid_request_error', 'Invalid request.'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'Not found'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The signature this upstream gives a thinking text. Anthropic's signatures are opaque and checked when a thinking
 * block comes back; a keyed hash lets this one refuse a block whose text or signature was changed or dropped.
 */
export function thinkingSignature(thinking: string): string {
  return `sig_${createHash('sha256').update(`scripted-upstream:${thinking}`).digest('base64url')}`;
}

function requestId(): string {
  return `req_${randomAlphanumeric(24)}`;
}

export function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId() });
}

/** The context window of Claude's models (without the 1M beta). */
const CONTEXT_WINDOW = 200_000;

function countTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** The text of a message's content, or of its tool results (what an echo answers). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: Json) => (block.type === 'text' ? block.text : block.type === 'tool_result' ? `tool ${block.is_error === true ? 'failed' : 'said'} ${textOf(block.content)}` : ''))
    .filter(Boolean)
    .join(' ');
}

// ---------------------------------------------------------------------------------------------------------
// Validation, in Anthropic's words.

function checkBlock(block: unknown, where: string): string | null {
  if (!isRecord(block) || typeof block.type !== 'string') return `${where}: Input should be a valid dictionary or object to extract fields from`;
  if (!BLOCK_TYPES.has(block.type)) return `${where}.type: Input tag '${String(block.type)}' found using 'type' does not match any of the expected tags`;
  if (block.type === 'text' && (typeof block.text !== 'string' || block.text === '')) return `${where}: text content blocks must be non-empty`;
  if (block.type === 'image') {
    const source = block.source;
    if (!isRecord(source)) return `${where}.source: Field required`;
    if (source.type === 'base64' && !IMAGE_TYPES.has(source.media_type)) return `${where}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
    if (source.type === 'base64' && typeof source.data !== 'string') return `${where}.source.base64.data: Field required`;
    if (source.type === 'url' && typeof source.url !== 'string') return `${where}.source.url.url: Field required`;
    if (source.type !== 'base64' && source.type !== 'url') return `${where}.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags`;
  }
  if (block.type === 'tool_use' && (typeof block.id !== 'string' || typeof block.name !== 'string' || !isRecord(block.input))) return `${where}: tool_use blocks need id, name and an object input`;
  if (block.type === 'tool_result' && typeof block.tool_use_id !== 'string') return `${where}.tool_use_id: Field required`;
  if (block.type === 'tool_use' && !TOOL_USE_ID.test(block.id)) return `${where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
  if (block.type === 'tool_result' && !TOOL_USE_ID.test(block.tool_use_id)) return `${where}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
  if (block.type === 'tool_result' && block.is_error !== undefined && typeof block.is_error !== 'boolean') return `${where}.is_error: Input should be a valid boolean`;
  if (block.type === 'tool_result' && Array.isArray(block.content)) {
    for (const [k, part] of block.content.entries()) {
      if (!isRecord(part) || (part.type !== 'text' && part.type !== 'image' && part.type !== 'document')) return `${where}.content.${k}: Input tag '${String(part?.type)}' found using 'type' does not match any of the expected tags`;
      const problem = checkBlock(part, `${where}.content.${k}`);
      if (problem) return problem;
    }
  }
  if (block.type === 'thinking') {
    if (typeof block.thinking !== 'string') return `${where}.thinking.thinking: Field required`;
    if (typeof block.signature !== 'string') return `${where}.thinking.signature: Field required`;
    if (block.signature !== thinkingSignature(block.thinking)) return `${where}: Invalid \`signature\` in \`thinking\` block`;
  }
  if (block.type === 'redacted_thinking' && (typeof block.data !== 'string' || !block.data.startsWith('redacted_'))) return `${where}: Invalid \`data\` in \`redacted_thinking\` block`;
  return null;
}

/** Keywords Claude's structured outputs refuse, by type (platform.claude.com structured outputs, JSON Schema limitations). */
const UNSUPPORTED_KEYWORDS: Record<string, string[]> = {
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  string: ['minLength', 'maxLength'],
  array: ['maxItems'],
};

/** The first keyword of a structured-output schema that Claude refuses, in its words, or null. */
function schemaProblem(node: unknown, at: string): string | null {
  if (Array.isArray(node)) {
    for (const item of node) {
      const problem = schemaProblem(item, at);
      if (problem) return problem;
    }
    return null;
  }
  if (!isRecord(node)) return null;
  for (const type of Array.isArray(node.type) ? node.type : [node.type]) {
    const refused = (UNSUPPORTED_KEYWORDS[type as string] ?? []).find((key) => node[key] !== undefined);
    if (refused) return `${at}: For '${String(type)}' type, property '${refused}' is not supported`;
    if (type === 'array' && node.minItems !== undefined && node.minItems !== 0 && node.minItems !== 1) return `${at}: For 'array' type, 'minItems' values other than 0 or 1 are not supported`;
  }
  for (const key of ['properties', '$defs', 'definitions']) {
    if (isRecord(node[key])) {
      const problem = schemaProblem(Object.values(node[key]), at);
      if (problem) return problem;
    }
  }
  for (const key of ['items', 'anyOf', 'allOf']) {
    const problem = schemaProblem(node[key], at);
    if (problem) return problem;
  }
  return null;
}

/** The ids of a message's tool_use blocks. */
function toolUseIdsOf(message: unknown): unknown[] {
  return isRecord(message) && Array.isArray(message.content) ? message.content.filter((block: Json) => block?.type === 'tool_use').map((block: Json) => block.id) : [];
}

/** The beta that lets a cache breakpoint name its scope (`cache_control.scope`, which Claude Code writes). */
const CACHE_SCOPE_BETA = 'prompt-caching-scope-2026-01-05';

/** Where a block's cache_control names a scope: system blocks, tools, message blocks and a tool result's blocks. */
function scopedCacheControl(body: Json): string | null {
  const scoped = (block: unknown): boolean => isRecord(block) && isRecord(block.cache_control) && block.cache_control.scope !== undefined;
  const inList = (list: unknown, at: string): string | null => {
    if (!Array.isArray(list)) return null;
    for (const [i, block] of list.entries()) {
      if (scoped(block)) return `${at}.${i}`;
      const inner = isRecord(block) && block.type === 'tool_result' ? inList(block.content, `${at}.${i}.content`) : null;
      if (inner) return inner;
    }
    return null;
  };
  const messages: unknown[] = Array.isArray(body.messages) ? body.messages : [];
  for (const [i, message] of messages.entries()) {
    const found = isRecord(message) ? inList(message.content, `messages.${i}.content`) : null;
    if (found) return found;
  }
  return inList(body.system, 'system') ?? inList(body.tools, 'tools');
}

/** Anthropic's refusal of a cache breakpoint's scope without its beta, or null. */
function unoptedScope(body: Json, betaHeader: string | string[] | undefined): string | null {
  const betas = (Array.isArray(betaHeader) ? betaHeader.join(',') : (betaHeader ?? '')).split(',').map((beta) => beta.trim());
  if (betas.includes(CACHE_SCOPE_BETA)) return null;
  const at = scopedCacheControl(body);
  return at === null ? null : `${at}.cache_control.ephemeral.scope: Extra inputs are not permitted`;
}

/** The first problem Anthropic would report for this body, or null. */
export function validate(body: unknown): string | null {
  if (!isRecord(body)) return 'Input should be a valid dictionary';
  for (const key of Object.keys(body)) if (!TOP_LEVEL.has(key)) return `${key}: Extra inputs are not permitted`;
  if (typeof body.model !== 'string') return 'model: Field required';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Input should be greater than or equal to 1';
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  if (body.messages.length === 0) return 'messages: at least one message is required';
  let toolBlocks = false;
  for (const [i, message] of body.messages.entries()) {
    if (!isRecord(message)) return `messages.${i}: Input should be a valid dictionary`;
    if (message.role !== 'user' && message.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const final = i === body.messages.length - 1 && message.role === 'assistant';
    if ((message.content === '' || (Array.isArray(message.content) && message.content.length === 0)) && !final) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    if (typeof message.content === 'string') continue;
    if (!Array.isArray(message.content)) return `messages.${i}.content: Input should be a valid list`;
    for (const [j, block] of message.content.entries()) {
      const problem = checkBlock(block, `messages.${i}.content.${j}`);
      if (problem) return problem;
      if (block.type === 'tool_use' || block.type === 'tool_result') toolBlocks = true;
      if (block.type === 'tool_use' && message.role !== 'assistant') return `messages.${i}.content.${j}: tool_use blocks are only allowed in assistant messages`;
      if (block.type === 'tool_result' && message.role !== 'user') return `messages.${i}.content.${j}: tool_result blocks are only allowed in user messages`;
      if (block.type === 'tool_result' && !toolUseIdsOf(body.messages[i - 1]).includes(block.tool_use_id)) {
        return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
  }
  if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) return 'temperature: Input should be less than or equal to 1';
  if (body.stop_sequences !== undefined && !Array.isArray(body.stop_sequences)) return 'stop_sequences: Input should be a valid list';
  if (body.metadata !== undefined && (!isRecord(body.metadata) || Object.keys(body.metadata).some((k) => k !== 'user_id'))) return 'metadata: Extra inputs are not permitted';
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return 'tools: Input should be a valid list';
    for (const [i, tool] of body.tools.entries()) {
      if (!isRecord(tool) || typeof tool.name !== 'string') return `tools.${i}.name: Field required`;
      if (tool.type === WEB_SEARCH_TOOL) continue;
      if (!isRecord(tool.input_schema) || tool.input_schema.type !== 'object') return `tools.${i}.input_schema: Field required`;
      if ('function' in tool || 'parameters' in tool) return `tools.${i}: Extra inputs are not permitted`;
      // Refused for every custom tool, strict or not (the words of Anthropic's 400).
      if (['oneOf', 'allOf', 'anyOf'].some((key) => tool.input_schema[key] !== undefined)) return `tools.${i}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level`;
      const problem = tool.strict === true ? schemaProblem(tool.input_schema, `tools.${i}.custom.input_schema`) : null;
      if (problem) return problem;
    }
  } else if (toolBlocks) return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
  if (body.tool_choice !== undefined && (!isRecord(body.tool_choice) || !['auto', 'any', 'tool', 'none'].includes(body.tool_choice.type))) {
    return "tool_choice: Input should be a valid dictionary with type 'auto', 'any', 'tool' or 'none'";
  }
  if (body.thinking?.type === 'enabled') {
    const budget = body.thinking.budget_tokens;
    if (!Number.isInteger(budget) || budget < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (budget >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
    // With thinking, a tool-use turn being continued must hand its thinking back first, unchanged.
    const lastAssistant = (body.messages as Json[]).findLastIndex((m) => m.role === 'assistant');
    const turn = body.messages[lastAssistant] as Json | undefined;
    if (turn && Array.isArray(turn.content) && turn.content.some((b: Json) => b.type === 'tool_use') && !['thinking', 'redacted_thinking'].includes(turn.content[0]?.type)) {
      return `messages.${lastAssistant}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(turn.content[0]?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
    }
  }
  const outputSchema = isRecord(body.output_config) && isRecord(body.output_config.format) ? body.output_config.format.schema : undefined;
  const outputProblem = schemaProblem(outputSchema, 'output_config.format.schema');
  if (outputProblem) return outputProblem;
  if (body.top_k !== undefined && (!Number.isInteger(body.top_k) || body.top_k < 0)) return 'top_k: Input should be a valid integer';
  if (body.service_tier !== undefined && body.service_tier !== 'auto' && body.service_tier !== 'standard_only') return "service_tier: Input should be 'auto' or 'standard_only'";
  // Claude's models refuse a prompt and max_tokens that add up to more than their context window (200K here).
  const input = countTokens([textOf(body.system ?? ''), ...body.messages.map((m: Json) => textOf(m.content))].join(' '));
  if (input + body.max_tokens > CONTEXT_WINDOW) {
    return `input length and \`max_tokens\` exceed context limit: ${input} + ${body.max_tokens} > ${CONTEXT_WINDOW}, decrease input length or \`max_tokens\` and try again`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------
// Answers.

interface Plan {
  message: Json;
  /** Tool input JSON split into the fragments a stream sends. */
  toolFragments: string[];
}

function plan(body: Json, cache: CacheTokens): Plan {
  const last = body.messages.at(-1) as Json;
  const lastText = last.role === 'user' ? textOf(last.content) : '';
  const tools: Json[] = Array.isArray(body.tools) ? body.tools : [];
  const choice = body.tool_choice as Json | undefined;
  const forced = choice?.type === 'any' || choice?.type === 'tool';
  const clientTools = tools.filter((tool) => tool.type !== WEB_SEARCH_TOOL);
  const webSearch = tools.some((tool) => tool.type === WEB_SEARCH_TOOL) && /search the web/i.test(lastText);
  // A message (the user's, or a tool's result) that says to call a tool by name ("now call get_weather") has it called.
  const named = clientTools.find((tool) => typeof tool.name === 'string' && textOf(last.content).includes(`call ${tool.name}`));
  const callTool = clientTools.length > 0 && choice?.type !== 'none' && (forced || named !== undefined || /call me again/i.test(textOf(last.content)) || (/use the tool/i.test(lastText) && !/^tool (said|failed)/.test(textOf(last.content))));
  const content: Json[] = [];
  if (body.thinking?.type === 'enabled') {
    if (lastText.includes(REDACTED_THINKING_TRIGGER)) content.push({ type: 'redacted_thinking', data: `redacted_${randomAlphanumeric(32)}` });
    const thinking = `thinking about: ${lastText.replace(REDACTED_THINKING_TRIGGER, '').trim()}`;
    content.push({ type: 'thinking', thinking, signature: thinkingSignature(thinking) });
  }
  if (webSearch) {
    // The server tool runs inside the API: its call and its result come back as blocks of the answer.
    const id = `srvtoolu_${randomAlphanumeric(24)}`;
    content.push({ type: 'server_tool_use', id, name: 'web_search', input: { query: lastText } });
    content.push({
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: [{ type: 'web_search_result', url: 'https://example.com/result', title: 'A result', encrypted_content: `enc_${randomAlphanumeric(24)}`, page_age: null }],
    });
  }
  let stopReason = 'end_turn';
  let stopSequence: string | null = null;
  let toolFragments: string[] = [];
  if (callTool) {
    const name = choice?.type === 'tool' ? choice.name : (named?.name ?? clientTools[0]?.name);
    const input = { query: lastText, units: 'metric' };
    const json = JSON.stringify(input);
    toolFragments = [json.slice(0, 5), json.slice(5, 17), json.slice(17)];
    content.push({ type: 'tool_use', id: `toolu_${randomAlphanumeric(24)}`, name, input });
    stopReason = 'tool_use';
  } else {
    let text = `echo: ${lastText}`;
    for (const stop of (body.stop_sequences ?? []) as string[]) {
      const at = text.indexOf(stop);
      if (at >= 0) {
        text = text.slice(0, at);
        stopReason = 'stop_sequence';
        stopSequence = stop;
      }
    }
    const words = text.split(' ');
    if (words.length > body.max_tokens) {
      text = words.slice(0, body.max_tokens).join(' ');
      stopReason = 'max_tokens';
    }
    content.push({ type: 'text', text });
  }
  const prompt = [textOf(body.system ?? ''), ...body.messages.map((m: Json) => textOf(m.content))].join(' ');
  const output = content.reduce((sum, block) => sum + countTokens(block.text ?? block.thinking ?? block.data ?? JSON.stringify(block.input ?? '')), 0);
  const message = {
    id: `msg_${randomAlphanumeric(24)}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    // Usage as Anthropic reports it: input_tokens leaves the cache out; cache_creation splits the writes by lifetime.
    usage: {
      input_tokens: Math.max(1, countTokens(prompt)),
      cache_creation_input_tokens: cache.write + cache.write1h,
      cache_read_input_tokens: cache.read,
      cache_creation: { ephemeral_5m_input_tokens: cache.write, ephemeral_1h_input_tokens: cache.write1h },
      output_tokens: Math.max(1, output),
      ...(webSearch ? { server_tool_use: { web_search_requests: 1 } } : {}),
      service_tier: 'standard',
    },
  };
  return { message, toolFragments };
}

interface CacheTokens {
  read: number;
  write: number;
  write1h: number;
}

function frame(type: string, data: Json): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** The exact event sequence Anthropic streams for a message. */
export function streamFrames({ message, toolFragments }: Plan): string[] {
  // message_start already counts the input (and the cache); output so far is a token.
  const { server_tool_use: serverTools, ...startUsage } = message.usage as Json;
  const frames = [frame('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...startUsage, output_tokens: 1 } } })];
  (message.content as Json[]).forEach((block, index) => {
    if (block.type === 'text') {
      frames.push(frame('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      if (index === 0) frames.push(frame('ping', {}));
      for (const piece of (block.text as string).match(/\S*\s*/g)?.filter(Boolean) ?? ['']) {
        frames.push(frame('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
      }
    } else if (block.type === 'thinking') {
      frames.push(frame('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
      if (index === 0) frames.push(frame('ping', {}));
      const thinking = block.thinking as string;
      const half = Math.ceil(thinking.length / 2);
      frames.push(frame('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: thinking.slice(0, half) } }));
      if (half < thinking.length) frames.push(frame('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: thinking.slice(half) } }));
      // The signature comes whole, just before the block ends.
      frames.push(frame('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }));
    } else if (block.type !== 'tool_use') {
      // Blocks without deltas (redacted_thinking, server tool calls and results) come whole in content_block_start.
      frames.push(frame('content_block_start', { index, content_block: block }));
      if (index === 0) frames.push(frame('ping', {}));
    } else {
      frames.push(frame('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      if (index === 0) frames.push(frame('ping', {}));
      frames.push(frame('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } }));
      for (const part of toolFragments) frames.push(frame('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }));
    }
    frames.push(frame('content_block_stop', { index }));
  });
  // message_delta's counts are cumulative; server tool use is known only now.
  const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } = message.usage as Json;
  const endUsage = { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens, ...(serverTools ? { server_tool_use: serverTools } : {}) };
  frames.push(frame('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence }, usage: endUsage }));
  frames.push(frame('message_stop', {}));
  return frames;
}

// ---------------------------------------------------------------------------------------------------------
// The server.

class Server implements AnthropicUpstream {
  readonly calls: RecordedCall[] = [];
  readonly sent: SentAnswer[] = [];
  url = '';
  private mode: AnthropicMode = OK_MODE;
  private queue: AnthropicMode[] = [];
  private cache: CacheTokens = { read: 0, write: 0, write1h: 0 };
  private remaining = 1000;
  private readonly server = createServer((req, res) => this.handle(req, res));

  constructor(private readonly apiKey: string | null) {}

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  setMode(mode: AnthropicMode): void {
    this.mode = mode;
  }

  enqueue(...modes: AnthropicMode[]): void {
    this.queue.push(...modes);
  }

  setCacheTokens(read: number, write: number, write1h = 0): void {
    this.cache = { read, write, write1h };
  }

  reset(): void {
    this.calls.length = 0;
    this.sent.length = 0;
    this.queue = [];
    this.mode = OK_MODE;
    this.cache = { read: 0, write: 0, write1h: 0 };
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const exchange = new LiveExchange(req, res, Date.now());
    res.on('close', () => exchange.markClosed());
    this.serve(exchange).catch(() => {
      if (!res.headersSent) this.send(exchange, 500, errorBody('api_error', 'Internal server error'));
      else res.destroy();
    });
  }

  private headers(): Record<string, string> {
    this.remaining = Math.max(0, this.remaining - 1);
    // As Anthropic's API sends them (docs: "Rate limits", response headers): requests, tokens (the most
    // restrictive of input and output), input and output tokens, each with its limit, what remains and when it
    // is whole again (RFC 3339).
    const reset = new Date(Date.now() + 60_000).toISOString();
    return {
      'request-id': requestId(),
      'anthropic-ratelimit-requests-limit': '1000',
      'anthropic-ratelimit-requests-remaining': String(this.remaining),
      'anthropic-ratelimit-requests-reset': reset,
      'anthropic-ratelimit-tokens-limit': '90000',
      'anthropic-ratelimit-tokens-remaining': '89000',
      'anthropic-ratelimit-tokens-reset': reset,
      'anthropic-ratelimit-input-tokens-limit': '80000',
      'anthropic-ratelimit-input-tokens-remaining': '79500',
      'anthropic-ratelimit-input-tokens-reset': reset,
      'anthropic-ratelimit-output-tokens-limit': '16000',
      'anthropic-ratelimit-output-tokens-remaining': '15500',
      'anthropic-ratelimit-output-tokens-reset': reset,
    };
  }

  private send(exchange: LiveExchange, status: number, body: string, extra: Record<string, string> = {}): void {
    exchange.res.writeHead(status, { ...this.headers(), 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...extra });
    exchange.res.end(body);
  }

  private async serve(exchange: LiveExchange): Promise<void> {
    const { req } = exchange;
    const raw = (await readBody(req)).toString('utf8');
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    this.calls.push({ method: req.method ?? 'GET', path, headers: req.headers, body, raw });
    if (req.method !== 'POST' || path !== '/v1/messages') return this.send(exchange, 404, errorBody('not_found_error', `${req.method} ${path} not found`));
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') return this.send(exchange, 401, errorBody('authentication_error', 'x-api-key header is required'));
    if (this.apiKey !== null && key !== this.apiKey) return this.send(exchange, 401, errorBody('authentication_error', 'invalid x-api-key'));
    if (typeof req.headers['anthropic-version'] !== 'string') return this.send(exchange, 400, errorBody('invalid_request_error', 'anthropic-version: header is required'));

    const mode = this.queue.shift() ?? this.mode;
    if (mode.kind === 'reset') return exchange.reset();
    // An answer written by the test as it is (framings Anthropic allows but this upstream does not write itself).
    if (mode.kind === 'raw') return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': 'application/json' }, mode.body);
    if (mode.kind === 'error') {
      const [type, message] = DEFAULT_ERRORS[mode.status] ?? ['api_error', 'Internal server error'];
      const limited: Record<string, string> = mode.status === 429 ? { 'retry-after': '1', 'anthropic-ratelimit-requests-remaining': '0' } : {};
      return this.send(exchange, mode.status, errorBody(mode.type ?? type, mode.message ?? message), { ...limited, ...mode.headers });
    }
    if (mode.kind === 'slow-headers' && !(await exchange.sleep(mode.delayMs))) return;
    if (mode.kind === 'long-stream') return deliverLongMessage(exchange, mode);
    if (body === undefined) return this.send(exchange, 400, errorBody('invalid_request_error', 'There was an issue with the format of your request: the body is not valid JSON'));
    const problem = validate(body) ?? unoptedScope(body as Json, req.headers['anthropic-beta']);
    if (problem) return this.send(exchange, 400, errorBody('invalid_request_error', problem));

    const answer = plan(body as Json, this.cache);
    const stream = (body as Json).stream === true;
    if (mode.kind === 'bad-json') return this.send(exchange, 200, stream ? 'event: message_start\ndata: {"type":"message_st' : '{"id":"msg_', stream ? { 'content-type': 'text/event-stream' } : {});
    const headers = { ...this.headers(), 'content-type': stream ? 'text/event-stream; charset=utf-8' : 'application/json' };
    if (!stream) {
      this.sent.push({ message: answer.message, frames: null });
      return deliverJson(exchange, headers, JSON.stringify(answer.message), mode as UpstreamMode);
    }
    let frames = streamFrames(answer);
    this.sent.push({ message: answer.message, frames });
    if (mode.kind === 'stream-error') {
      const error = `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: mode.type ?? 'overloaded_error', message: mode.message ?? 'Overloaded' } })}\n\n`;
      const apart = Math.max(0, mode.after - (mode.together ?? 0));
      frames = [...frames.slice(0, apart), frames.slice(apart, mode.after).join('') + error];
      return deliverStream(exchange, headers, frames, OK_MODE, 0);
    }
    return deliverStream(exchange, headers, frames, mode, 0);
  }
}

/** `long-stream` in Anthropic's format: one text block of `chunks` deltas of `chunkBytes` letters, then `end_turn`. */
function deliverLongMessage(exchange: LiveExchange, mode: Extract<UpstreamMode, { kind: 'long-stream' }>): Promise<void> {
  const event = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const head =
    event('message_start', { message: { id: 'msg_long', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }) +
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  const frame = event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'a'.repeat(mode.chunkBytes) } });
  const tail = event('content_block_stop', { index: 0 }) + event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 100 } }) + event('message_stop', {});
  return deliverRepeated(exchange, head, frame, mode.chunks, tail);
}

export async function startAnthropicUpstream(options: AnthropicUpstreamOptions = {}): Promise<AnthropicUpstream> {
  const server = new Server(options.apiKey ?? null);
  await server.listen();
  return server;
}
