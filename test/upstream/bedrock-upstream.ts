// A scripted upstream that speaks Amazon Bedrock's Converse / ConverseStream wire format: it verifies SigV4
// signatures (recomputed server-side with @smithy/signature-v4) or a Bedrock API key, validates the request as
// Converse does, and streams real binary event-stream frames encoded with @smithy/eventstream-codec.
// InvokeModel (`/model/{id}/invoke`) answers embeddings in the native bodies of Titan Text Embeddings and
// Cohere Embed, behind the same authentication, and InvokeModel / InvokeModelWithResponseStream answer Claude's
// models with Anthropic's Messages body (see bedrock-claude.ts; a scripted Anthropic upstream writes the answers).
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { LiveExchange, readBody } from './exchange.js';
import { ScriptedServer } from './scripted-server.js';
import { unitVectorOf } from './openai-embeddings.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './anthropic-upstream.js';
import { askClaude, claudeInvokeProblem, isClaudeModel } from './bedrock-claude.js';

export type BedrockMode =
  | { kind: 'ok' }
  /** An AWS REST-JSON error: `{"message"}` with `x-amzn-errortype: <errorType>:...`. */
  | { kind: 'error'; status: number; errorType: string; message: string; headers?: Record<string, string> }
  /** Streams `afterEvents` events, then an exception frame (`throttlingException`, `modelStreamErrorException`, ...). */
  | { kind: 'stream-exception'; exceptionType: string; message: string; afterEvents: number }
  /** Streams the answer cut into `bytes`-sized writes, so frames straddle network reads. */
  | { kind: 'split'; bytes: number }
  /** Streams `afterEvents` events, then ends the body without messageStop. */
  | { kind: 'truncate'; afterEvents: number }
  /** Answers with no content and this stopReason (malformed_tool_use, malformed_model_output, ...), streamed or not. */
  | { kind: 'stop-reason'; stopReason: string }
  /**
   * Streams `afterEvents` events, then the next one with a bit of its prelude's total length flipped (as a faulty
   * proxy might; the prelude CRC no longer matches), then the rest, and keeps the body open `holdMs` before ending it.
   */
  | { kind: 'garbled-prelude'; afterEvents: number; holdMs: number }
  /** Answers normally, streamed or not, but reports this usage instead of the real one (a hostile upstream's). */
  | { kind: 'usage'; usage: Record<string, unknown> };

export interface IssuedCredentials {
  secretAccessKey: string;
  sessionToken: string;
  expiration: Date;
}

export interface BedrockCall {
  method: string;
  /** The raw path as received (model id still percent-encoded). */
  path: string;
  modelId: string;
  action: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface BedrockUpstreamOptions {
  /** Region the signature's credential scope must name (default us-east-1). */
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** When set, SigV4 requests must carry it as x-amz-security-token. */
  sessionToken?: string;
  /** A Bedrock API key accepted as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /**
   * Temporary credentials AWS issued (an IAM role's, from STS or a credentials endpoint), by access key id: each is
   * accepted only with its own session token, signed, and only until it expires.
   */
  issued?: (accessKeyId: string) => IssuedCredentials | undefined;
  /**
   * Application inference profiles (or provisioned models) by ARN, each with the model id it serves: Bedrock calls
   * that model for a request naming the ARN, whose id says nothing of it.
   */
  profiles?: Record<string, string>;
}

export interface BedrockUpstream {
  url: string;
  calls: BedrockCall[];
  setMode(mode: BedrockMode): void;
  enqueue(...modes: BedrockMode[]): void;
  /** Cache tokens reported in later answers' usage (cacheReadInputTokens / cacheWriteInputTokens). */
  setCache(cache: { read: number; write: number }): void;
  /** The scripted Anthropic upstream that answers Claude's InvokeModel calls (its `sent` are Claude's answers). */
  anthropic: AnthropicUpstream;
  /** The JSON of each `chunk` event of the last InvokeModelWithResponseStream answer, as sent (base64-decoded). */
  invokeEvents: string[];
  reset(): void;
  close(): Promise<void>;
}

const ALLOWED_FIELDS = new Set([
  'messages', 'system', 'inferenceConfig', 'toolConfig', 'guardrailConfig', 'additionalModelRequestFields', 'promptVariables',
  'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig', 'outputConfig',
]);
const BLOCK_MEMBERS = ['text', 'image', 'document', 'video', 'toolUse', 'toolResult', 'guardContent', 'cachePoint', 'reasoningContent'];
const IMAGE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);
const DOCUMENT_FORMATS = new Set(['pdf', 'csv', 'doc', 'docx', 'xls', 'xlsx', 'html', 'txt', 'md']);
/** DocumentBlock.name: alphanumerics, whitespace (never two in a row), hyphens, parentheses, square brackets. */
const DOCUMENT_NAME = /^[A-Za-z0-9\s\-()[\]]{1,200}$/;
const codec = new EventStreamCodec(toUtf8, fromUtf8);

class ValidationError extends Error {}

function isRecord(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ValidationError(message);
}

/**
 * additionalModelRequestFields go to the model as its own request fields. Claude takes Anthropic's `thinking`
 * ({type: enabled, budget_tokens} with budget_tokens at least 1,024 and below max_tokens, in Anthropic's words)
 * and `top_k` (a non-negative integer); the other scripted families take none, and refuse an unknown one as
 * Bedrock relays it.
 */
function validateModelFields(modelId: string, body: Record<string, any>): void {
  const fields = body.additionalModelRequestFields;
  if (fields === undefined) return;
  check(isRecord(fields), 'additionalModelRequestFields must be an object.');
  for (const key of Object.keys(fields)) {
    check(isClaudeModel(modelId) && (key === 'thinking' || key === 'top_k' || key === 'tool_choice'), `Malformed input request: extraneous key [${key}] is not permitted, please reformat your input and try again.`);
  }
  if (fields.tool_choice !== undefined) validateClaudeToolChoice(fields.tool_choice, body);
  if (fields.top_k !== undefined) check(Number.isInteger(fields.top_k) && fields.top_k >= 0, 'The model returned the following errors: top_k: Input should be a valid integer');
  const thinking = fields.thinking;
  if (thinking === undefined) return;
  check(isRecord(thinking) && ['enabled', 'disabled'].includes(thinking.type), 'The model returned the following errors: thinking: Input tag does not match the expected tags: \'enabled\', \'disabled\'');
  if (thinking.type !== 'enabled') return;
  check(Number.isInteger(thinking.budget_tokens) && thinking.budget_tokens >= 1024, 'The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  // Claude's rule for a conversation that continues a tool-use turn (Anthropic's words, relayed by Bedrock): with
  // thinking enabled, the last assistant message must start with its thinking (reasoningContent in Converse).
  const messages: unknown[] = Array.isArray(body.messages) ? body.messages : [];
  const lastAssistant = messages.map((message, i) => [message, i] as const).filter(([message]) => isRecord(message) && message.role === 'assistant').at(-1);
  if (lastAssistant) {
    const content: unknown[] = Array.isArray((lastAssistant[0] as Record<string, any>).content) ? (lastAssistant[0] as Record<string, any>).content : [];
    const usesTool = content.some((block) => isRecord(block) && 'toolUse' in block);
    const thought = isRecord(content[0]) && 'reasoningContent' in content[0];
    check(!usesTool || thought, `The model returned the following errors: messages.${lastAssistant[1]}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`text\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`);
  }
  const maxTokens = body.inferenceConfig?.maxTokens;
  if (typeof maxTokens === 'number') check(maxTokens > thinking.budget_tokens, 'The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size');
}

/** ToolUseBlock.toolUseId and ToolResultBlock.toolUseId: 1 to 64 characters of [a-zA-Z0-9_-] (AWS's wording for a constraint). */
function checkToolUseId(id: unknown, at: string): void {
  check(typeof id === 'string' && id.length >= 1 && id.length <= 64, `1 validation error detected: Value at '${at}' failed to satisfy constraint: Member must have length between 1 and 64`);
  check(/^[a-zA-Z0-9_-]+$/.test(id as string), `1 validation error detected: Value '${String(id)}' at '${at}' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`);
}

/**
 * A DocumentBlock as Message and DocumentBlock document it: user turns only, a known format, base64 bytes, a name
 * of the allowed characters, unique in the request, and at most five documents in all.
 */
function checkDocument(document: any, message: any, where: string, names: Set<string>): void {
  check(message.role === 'user', `${where}: You can only include images and documents if the role is user.`);
  check(isRecord(document) && DOCUMENT_FORMATS.has(document.format), `${where}.document.format must be one of [pdf, csv, doc, docx, xls, xlsx, html, txt, md].`);
  const bytes = document.source?.bytes;
  check(isRecord(document.source) && Object.keys(document.source).length === 1 && typeof bytes === 'string' && bytes !== '' && Buffer.from(bytes, 'base64').toString('base64') === bytes, `${where}.document.source.bytes must be base64.`);
  const name = document.name;
  check(typeof name === 'string' && DOCUMENT_NAME.test(name) && !/\s\s/.test(name), `The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can't contain more than one consecutive whitespace character.`);
  check(!names.has(name.toLowerCase()), "Messages can't contain duplicate document names. Rename the document and retry your request.");
  names.add(name.toLowerCase());
  check(names.size <= 5, "You can't include more than 5 documents in a request.");
}

/**
 * Claude's own `tool_choice` in additionalModelRequestFields (how `disable_parallel_tool_use` reaches it through
 * Converse): Bedrock merges it into the tool_choice it writes from toolConfig.toolChoice, so a `type` beside a
 * toolChoice is refused as a conflict, and without a toolChoice Anthropic wants the type (errors as Bedrock relays them).
 */
function validateClaudeToolChoice(choice: unknown, body: Record<string, any>): void {
  check(isRecord(choice), 'The model returned the following errors: tool_choice: Input should be a valid dictionary');
  check(isRecord(body.toolConfig), 'The model returned the following errors: tool_choice may only be specified while providing tools.');
  const converseChoice = body.toolConfig.toolChoice;
  if (isRecord(converseChoice)) {
    const member = Object.keys(converseChoice)[0] as string;
    check(choice.type === undefined, `The additional field tool_choice/type conflicts with the existing field toolConfig.toolChoice.${member}. Remove tool_choice/type and try again.`);
  } else {
    check(['auto', 'any', 'tool', 'none'].includes(choice.type), 'The model returned the following errors: tool_choice.type: Field required');
  }
  if (choice.disable_parallel_tool_use !== undefined) check(typeof choice.disable_parallel_tool_use === 'boolean', 'The model returned the following errors: tool_choice.disable_parallel_tool_use: Input should be a valid boolean');
}

/** Validates a Converse body the way the service does, with its wording for the common mistakes. */
function validateConverse(body: unknown): void {
  check(isRecord(body), 'Malformed input request, please reformat your input and try again.');
  for (const key of Object.keys(body)) check(ALLOWED_FIELDS.has(key), `Malformed input request: extraneous key [${key}] is not permitted, please reformat your input and try again.`);
  const messages = body.messages;
  check(Array.isArray(messages) && messages.length > 0, 'The messages field is required and must contain at least one message.');
  check(messages[0]?.role === 'user', 'A conversation must start with a user message. Try again with a conversation that starts with a user message.');
  const toolUseIds = new Set<string>();
  const documentNames = new Set<string>();
  messages.forEach((message: any, i: number) => {
    check(message.role === 'user' || message.role === 'assistant', `messages.${i}.role must be one of [user, assistant].`);
    if (i > 0) check(messages[i - 1].role !== message.role, 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
    check(Array.isArray(message.content) && message.content.length > 0, `messages.${i}.content must contain at least one content block.`);
    if (message.content.some((block: any) => isRecord(block) && 'document' in block)) {
      check(message.content.some((block: any) => isRecord(block) && 'text' in block), 'If you include a document block in a message, you must also include a text block.');
    }
    message.content.forEach((block: any, j: number) => {
      const where = `messages.${i}.content.${j}`;
      const members = isRecord(block) ? Object.keys(block).filter((key) => BLOCK_MEMBERS.includes(key)) : [];
      check(members.length === 1 && Object.keys(block).length === 1, `The content block at ${where} must set exactly one member.`);
      if ('text' in block) check(typeof block.text === 'string' && block.text.trim() !== '', `The text field in the ContentBlock object at ${where} is blank. Add text to the text field, and try again.`);
      if ('image' in block) {
        check(IMAGE_FORMATS.has(block.image?.format), `${where}.image.format must be one of [png, jpeg, gif, webp].`);
        const bytes = block.image?.source?.bytes;
        check(typeof bytes === 'string' && bytes !== '' && Buffer.from(bytes, 'base64').toString('base64') === bytes, `${where}.image.source.bytes must be base64.`);
      }
      if ('document' in block) checkDocument(block.document, message, where, documentNames);
      if ('toolUse' in block) {
        check(message.role === 'assistant', `${where}: toolUse blocks belong to assistant messages.`);
        check(typeof block.toolUse.toolUseId === 'string' && typeof block.toolUse.name === 'string' && isRecord(block.toolUse.input), `${where}.toolUse needs toolUseId, name and an object input.`);
        checkToolUseId(block.toolUse.toolUseId, `messages.${i}.member.content.${j}.member.toolUse.toolUseId`);
        toolUseIds.add(block.toolUse.toolUseId);
      }
      if ('toolResult' in block) {
        check(message.role === 'user', `${where}: toolResult blocks belong to user messages.`);
        checkToolUseId(block.toolResult.toolUseId, `messages.${i}.member.content.${j}.member.toolResult.toolUseId`);
        check(toolUseIds.has(block.toolResult.toolUseId), `${where}.toolResult.toolUseId does not match any toolUse block.`);
        check(Array.isArray(block.toolResult.content), `${where}.toolResult.content must be a list.`);
        block.toolResult.content.forEach((part: any, k: number) => {
          if (isRecord(part) && 'text' in part) check(typeof part.text === 'string' && part.text.trim() !== '', `The text field in the ToolResultContentBlock object at ${where}.toolResult.content.${k} is blank. Add text to the text field, and try again.`);
        });
      }
      if (('toolUse' in block || 'toolResult' in block) && !isRecord(body.toolConfig)) {
        throw new ValidationError('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
      }
    });
  });
  if (body.system !== undefined) check(Array.isArray(body.system) && body.system.every((s: any) => typeof s.text === 'string'), 'system must be a list of {text} blocks.');
  if (body.system !== undefined) check(body.system.every((s: any) => s.text.trim() !== ''), 'The text field in the SystemContentBlock object is blank. Add text to the text field, and try again.');
  const inference = body.inferenceConfig;
  if (inference !== undefined) {
    check(isRecord(inference), 'inferenceConfig must be an object.');
    if (inference.maxTokens !== undefined) check(Number.isInteger(inference.maxTokens) && inference.maxTokens >= 1, 'inferenceConfig.maxTokens must be at least 1.');
    if (inference.temperature !== undefined) check(inference.temperature >= 0 && inference.temperature <= 1, 'inferenceConfig.temperature must be between 0 and 1.');
    if (inference.topP !== undefined) check(inference.topP >= 0 && inference.topP <= 1, 'inferenceConfig.topP must be between 0 and 1.');
    if (inference.stopSequences !== undefined) check(Array.isArray(inference.stopSequences), 'inferenceConfig.stopSequences must be a list.');
  }
  if (body.toolConfig !== undefined) {
    const tools = body.toolConfig.tools;
    check(Array.isArray(tools) && tools.length > 0, 'toolConfig.tools must contain at least one tool.');
    tools.forEach((tool: any, i: number) => {
      check(typeof tool.toolSpec?.name === 'string' && isRecord(tool.toolSpec?.inputSchema?.json), `toolConfig.tools.${i}.toolSpec needs a name and inputSchema.json.`);
    });
    const choice = body.toolConfig.toolChoice;
    if (choice !== undefined) {
      check(isRecord(choice) && Object.keys(choice).length === 1 && ['auto', 'any', 'tool'].includes(Object.keys(choice)[0] as string), 'toolConfig.toolChoice must set one of auto, any, tool.');
      if (choice.tool) check(tools.some((tool: any) => tool.toolSpec.name === choice.tool.name), `toolChoice names an unknown tool ${choice.tool.name}.`);
    }
  }
}

interface Answer {
  blocks: Array<{ text: string } | { toolUse: { toolUseId: string; name: string; input: Record<string, unknown> } } | { reasoningContent: { reasoningText: { text: string; signature: string } } }>;
  stopReason: string;
  usage: Record<string, unknown>;
}

function textOfBlocks(blocks: any[]): string {
  return blocks.filter((block) => typeof block.text === 'string').map((block) => block.text as string).join(' ');
}

function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * Echoes the last user text; calls a tool when forced or asked to ("use the tool"); answers tool results. With
 * Claude's thinking enabled the answer starts with a reasoningContent block (text and signature), as Converse's.
 */
function planAnswer(body: any, cache: { read: number; write: number }): Answer {
  const last = body.messages[body.messages.length - 1];
  const lastText = last.role === 'user' ? textOfBlocks(last.content) : '';
  const results = last.role === 'user' ? last.content.filter((block: any) => block.toolResult) : [];
  const tools: any[] = body.toolConfig?.tools ?? [];
  const choice = body.toolConfig?.toolChoice;
  const blocks: Answer['blocks'] = [];
  if (body.additionalModelRequestFields?.thinking?.type === 'enabled') {
    const text = `thinking about: ${lastText}`;
    blocks.push({ reasoningContent: { reasoningText: { text, signature: `sig_${Buffer.from(text).toString('base64url')}` } } });
  }
  let stopReason = 'end_turn';
  if (results.length > 0) {
    const said = results.map((block: any) => textOfBlocks(block.toolResult.content) || JSON.stringify(block.toolResult.content)).join(' ');
    blocks.push({ text: `tool said: ${said}` });
  } else if (tools.length > 0 && (choice?.any || choice?.tool || /use the tool/i.test(lastText))) {
    const name: string = choice?.tool?.name ?? tools[0].toolSpec.name;
    blocks.push({ toolUse: { toolUseId: `tooluse_${randomUUID().replace(/-/g, '').slice(0, 22)}`, name, input: { city: 'Paris', query: lastText, days: 3 } } });
    stopReason = 'tool_use';
  } else {
    let text = `echo: ${lastText}`;
    for (const stop of body.inferenceConfig?.stopSequences ?? []) {
      const at = text.indexOf(stop);
      if (at >= 0) {
        text = text.slice(0, at);
        stopReason = 'stop_sequence';
      }
    }
    const maxTokens = body.inferenceConfig?.maxTokens;
    if (typeof maxTokens === 'number' && estimateTokens(text) > maxTokens) {
      text = text.slice(0, maxTokens * 4);
      stopReason = 'max_tokens';
    }
    blocks.push({ text });
  }
  const prompt = JSON.stringify(body.messages) + JSON.stringify(body.system ?? []);
  const inputTokens = estimateTokens(prompt);
  const outputTokens = estimateTokens(JSON.stringify(blocks));
  const usage: Record<string, number> = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens + cache.read + cache.write };
  if (cache.read > 0) usage.cacheReadInputTokens = cache.read;
  if (cache.write > 0) usage.cacheWriteInputTokens = cache.write;
  return { blocks, stopReason, usage };
}

/** The scripted vectors (see unitVectorOf), exported so tests can check what reaches the client. */
export const bedrockEmbeddingVector = unitVectorOf;

/** The upstream's own token count for a text (what Titan's inputTextTokenCount and Bedrock's header report). */
export function bedrockEmbeddingTokens(text: string): number {
  return estimateTokens(text);
}

const malformed = (detail: string): string => `Malformed input request: ${detail}, please reformat your input and try again.`;

function checkKeys(body: Record<string, any>, allowed: string[], required: string[]): void {
  for (const key of Object.keys(body)) check(allowed.includes(key), malformed(`#: extraneous key [${key}] is not permitted`));
  for (const key of required) check(key in body, malformed(`#: required key [${key}] not found`));
}

interface EmbeddingAnswer {
  json: unknown;
  inputTokens: number;
}

/** Titan Text Embeddings: V2 `{inputText, dimensions?, normalize?, embeddingTypes?}`, G1 `{inputText}`. */
function answerTitan(body: unknown, v2: boolean): EmbeddingAnswer {
  check(isRecord(body), 'Malformed input request, please reformat your input and try again.');
  checkKeys(body, v2 ? ['inputText', 'dimensions', 'normalize', 'embeddingTypes'] : ['inputText'], ['inputText']);
  const text = body.inputText;
  check(typeof text === 'string', malformed(`#/inputText: expected type: String, found: ${Array.isArray(text) ? 'JSONArray' : typeof text}`));
  check(text.length >= 1, malformed('#/inputText: expected minLength: 1, actual: 0'));
  check(text.length <= 50_000, malformed(`#/inputText: expected maxLength: 50000, actual: ${text.length}`));
  const dimensions = body.dimensions ?? (v2 ? 1024 : 1536);
  check([256, 512, 1024].includes(dimensions) || (!v2 && dimensions === 1536), malformed(`#/dimensions: ${String(dimensions)} is not a valid enum value`));
  if (body.normalize !== undefined) check(typeof body.normalize === 'boolean', malformed(`#/normalize: expected type: Boolean, found: ${typeof body.normalize}`));
  const unit = bedrockEmbeddingVector(text, dimensions);
  // Unnormalised vectors keep the model's raw scale; a fixed factor stands in for it.
  const embedding = body.normalize === false ? unit.map((value) => value * 3.5) : unit;
  const inputTokens = bedrockEmbeddingTokens(text);
  const json: Record<string, unknown> = { embedding, inputTextTokenCount: inputTokens };
  if (v2) json.embeddingsByType = { float: embedding };
  return { json, inputTokens };
}

const COHERE_INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering', 'image'];
const COHERE_EMBEDDING_TYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary'];

/**
 * Cohere Embed v3: `{texts, input_type, truncate?, embedding_types?}`, up to 96 texts of up to 2048 characters,
 * `truncate` NONE, START or END. Embed v4 (`dimensions` null) adds `output_dimension` (256, 512, 1024 or 1536,
 * default 1536), `max_tokens` and `inputs`, takes long texts (128k tokens), and spells `truncate` NONE, LEFT or RIGHT
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v4.html).
 */
function answerCohere(body: unknown, fixed: number | null): EmbeddingAnswer {
  check(isRecord(body), 'Malformed input request, please reformat your input and try again.');
  const v4 = fixed === null;
  checkKeys(body, ['texts', 'images', 'input_type', 'truncate', 'embedding_types', ...(v4 ? ['inputs', 'output_dimension', 'max_tokens'] : [])], ['input_type']);
  if (v4 && body.output_dimension !== undefined) check([256, 512, 1024, 1536].includes(body.output_dimension), malformed(`#/output_dimension: ${String(body.output_dimension)} is not a valid enum value`));
  const dimensions = fixed ?? (typeof body.output_dimension === 'number' ? body.output_dimension : 1536);
  const truncations = v4 ? ['NONE', 'LEFT', 'RIGHT'] : ['NONE', 'START', 'END'];
  check(COHERE_INPUT_TYPES.includes(body.input_type), malformed(`#/input_type: ${String(body.input_type)} is not a valid enum value`));
  check((body.texts === undefined) !== (body.images === undefined), malformed('#: only one of [texts, images] may be set'));
  const texts = body.texts;
  check(Array.isArray(texts), malformed('#/texts: expected type: JSONArray'));
  check(texts.length <= 96, malformed(`#/texts: expected maxItems: 96, actual: ${texts.length}`));
  texts.forEach((text: unknown, i: number) => {
    check(typeof text === 'string', malformed(`#/texts/${i}: expected type: String`));
    if (!v4) check(text.length <= 2048, malformed(`#/texts/${i}: expected maxLength: 2048, actual: ${text.length}`));
  });
  if (body.truncate !== undefined) check(truncations.includes(body.truncate), malformed(`#/truncate: ${String(body.truncate)} is not a valid enum value`));
  const types = body.embedding_types;
  if (types !== undefined) {
    check(Array.isArray(types) && types.length > 0, malformed('#/embedding_types: expected minItems: 1'));
    types.forEach((type: unknown, i: number) => check(COHERE_EMBEDDING_TYPES.includes(type as string), malformed(`#/embedding_types/${i}: ${String(type)} is not a valid enum value`)));
  }
  const vectors = (texts as string[]).map((text) => bedrockEmbeddingVector(text, dimensions));
  const inputTokens = (texts as string[]).reduce((sum, text) => sum + bedrockEmbeddingTokens(text), 0);
  const id = randomUUID();
  if (types === undefined) return { json: { id, texts, embeddings: vectors, response_type: 'embeddings_floats' }, inputTokens };
  const byType: Record<string, unknown> = {};
  for (const type of types as string[]) {
    byType[type] = type === 'float' ? vectors : vectors.map((vector) => vector.map((value) => Math.round(value * 127)));
  }
  return { json: { id, texts, embeddings: byType, response_type: 'embeddings_by_type' }, inputTokens };
}

/** The InvokeModel answer for an embeddings model, or null when the model id is not one. */
function answerInvoke(modelId: string, body: unknown): EmbeddingAnswer | null {
  if (modelId.startsWith('amazon.titan-embed-text-v2')) return answerTitan(body, true);
  if (modelId.startsWith('amazon.titan-embed-text-v1')) return answerTitan(body, false);
  if (/^cohere\.embed-(english|multilingual)-light-v3/.test(modelId)) return answerCohere(body, 384);
  if (/^cohere\.embed-(english|multilingual)-v3/.test(modelId)) return answerCohere(body, 1024);
  if (modelId.startsWith('cohere.embed-v4')) return answerCohere(body, null);
  return null;
}

function frame(headers: Record<string, string>, payload: unknown): Uint8Array {
  const encoded: Record<string, { type: 'string'; value: string }> = {};
  for (const [name, value] of Object.entries(headers)) encoded[name] = { type: 'string', value };
  return codec.encode({ headers: encoded, body: fromUtf8(JSON.stringify(payload)) });
}

function eventFrame(type: string, payload: Record<string, unknown>): Uint8Array {
  // Bedrock pads events with a `p` field so their sizes do not reveal the tokens.
  return frame({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, { ...payload, p: 'abcdefgh'.slice(0, 1 + (Object.keys(payload).length % 8)) });
}

function pieces(text: string, count: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / count));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** The ConverseStream event sequence for an answer. */
function streamEvents(answer: Answer): Uint8Array[] {
  const events = [eventFrame('messageStart', { role: 'assistant' })];
  answer.blocks.forEach((block, index) => {
    if ('toolUse' in block) {
      const { toolUseId, name, input } = block.toolUse;
      events.push(eventFrame('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId, name } } }));
      for (const piece of pieces(JSON.stringify(input), 4)) events.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: piece } } }));
    } else if ('reasoningContent' in block) {
      const { text, signature } = block.reasoningContent.reasoningText;
      for (const piece of pieces(text, 2)) events.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text: piece } } }));
      events.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { signature } } }));
    } else {
      for (const piece of pieces(block.text, 3)) events.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { text: piece } }));
    }
    events.push(eventFrame('contentBlockStop', { contentBlockIndex: index }));
  });
  events.push(eventFrame('messageStop', { stopReason: answer.stopReason }));
  events.push(eventFrame('metadata', { usage: answer.usage, metrics: { latencyMs: 12 } }));
  return events;
}

function errorHeaders(errorType: string): Record<string, string> {
  return { 'content-type': 'application/json', 'x-amzn-errortype': `${errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': randomUUID() };
}

function sendAwsError(res: ServerResponse, status: number, errorType: string, message: string, extra: Record<string, string> = {}): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, { ...errorHeaders(errorType), ...extra, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** `20240101T000000Z` → Date. */
function amzDate(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : null;
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** SigV4's canonical request (path segments encoded once more, as for every service but S3), as AWS quotes it. */
function canonicalRequest(method: string, path: string, signedHeaders: string[], valueOf: (name: string) => string, body: Buffer): string {
  const escape = (segment: string): string => encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const headers = signedHeaders.map((name) => `${name}:${valueOf(name).trim().replace(/\s+/g, ' ')}\n`).join('');
  return [method, path.split('/').map(escape).join('/'), '', headers, signedHeaders.join(';'), valueOf('x-amz-content-sha256') || sha256Hex(body)].join('\n');
}

/** The key between the scripted Bedrock and the scripted Anthropic upstream behind it. */
const CLAUDE_BEHIND = 'anthropic-behind-bedrock';

class ScriptedBedrock extends ScriptedServer<BedrockMode, BedrockCall> implements BedrockUpstream {
  private cache = { read: 0, write: 0 };
  invokeEvents: string[] = [];

  constructor(
    private readonly options: BedrockUpstreamOptions,
    readonly anthropic: AnthropicUpstream,
  ) {
    super({ kind: 'ok' });
  }

  override async close(): Promise<void> {
    await super.close();
    await this.anthropic.close();
  }

  /** The model a request's id names: a profile's own model, else the id itself. */
  private modelBehind(id: string): string {
    const profiles = this.options.profiles ?? {};
    return Object.hasOwn(profiles, id) ? (profiles[id] as string) : id;
  }

  protected internalError(res: ServerResponse): void {
    sendAwsError(res, 500, 'InternalServerException', 'The server encountered an internal error.');
  }

  setCache(cache: { read: number; write: number }): void {
    this.cache = cache;
  }

  override reset(): void {
    super.reset();
    this.anthropic.reset();
    this.invokeEvents = [];
    this.cache = { read: 0, write: 0 };
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const rawUrl = req.url ?? '/';
    const path = rawUrl.split('?')[0] as string;
    const route = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/.exec(path);
    let body: unknown;
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    this.calls.push({ method: req.method ?? '', path, modelId: route ? decodeURIComponent(route[1] as string) : '', action: route?.[2] ?? '', headers: req.headers, body });
    if (!route || req.method !== 'POST') return sendAwsError(res, 404, 'UnknownOperationException', `No operation matches ${req.method} ${path}`);
    const denied = await this.authenticate(req, rawUrl, raw);
    if (denied) return sendAwsError(res, 403, denied.type, denied.message);

    const mode = this.nextMode();
    if (mode.kind === 'error') return sendAwsError(res, mode.status, mode.errorType, mode.message, mode.headers);
    const modelId = this.modelBehind(decodeURIComponent(route[1] as string));
    const action = route[2] as string;
    if (action.startsWith('invoke') && isClaudeModel(modelId)) return this.invokeClaude(new LiveExchange(req, res, Date.now()), modelId, body, action !== 'invoke', mode);
    if (action === 'invoke-with-response-stream') return sendAwsError(res, 400, 'ValidationException', 'The model does not support streaming inference in this test server.');
    if (route[2] === 'invoke') return this.invoke(res, modelId, body, req);
    try {
      validateConverse(body);
      validateModelFields(modelId, body as Record<string, any>);
    } catch (err) {
      if (err instanceof ValidationError) return sendAwsError(res, 400, 'ValidationException', err.message);
      throw err;
    }
    const planned = planAnswer(body, this.cache);
    const answer = mode.kind === 'stop-reason' ? { ...planned, blocks: [], stopReason: mode.stopReason } : mode.kind === 'usage' ? { ...planned, usage: mode.usage } : planned;
    const requestId = randomUUID();
    if (route[2] === 'converse') {
      const json = JSON.stringify({ output: { message: { role: 'assistant', content: answer.blocks } }, stopReason: answer.stopReason, usage: answer.usage, metrics: { latencyMs: 12 } });
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId, 'content-length': String(Buffer.byteLength(json)) });
      res.end(json);
      return;
    }
    await this.stream(new LiveExchange(req, res, Date.now()), streamEvents(answer), mode, requestId);
  }

  /**
   * Claude's InvokeModel and InvokeModelWithResponseStream: the body judged as Bedrock does, Claude's answer as it
   * wrote it, or its events each in a `chunk` frame (`{"bytes": base64 of the event's JSON}`), under the stream modes.
   */
  private async invokeClaude(exchange: LiveExchange, modelId: string, body: unknown, stream: boolean, mode: BedrockMode): Promise<void> {
    const { req, res } = exchange;
    if (headerValue(req, 'content-type') !== 'application/json') return sendAwsError(res, 415, 'UnsupportedMediaTypeException', 'Unsupported content type.');
    const problem = claudeInvokeProblem(body);
    if (problem !== null) return sendAwsError(res, 400, 'ValidationException', problem);
    const answer = await askClaude(this.anthropic.url, CLAUDE_BEHIND, modelId, body as Record<string, any>, stream);
    if (answer.kind === 'error') return sendAwsError(res, answer.status, answer.errorType, answer.message);
    const requestId = randomUUID();
    if (answer.kind === 'message') {
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-amzn-requestid': requestId,
        'x-amzn-bedrock-input-token-count': String(answer.usage.input_tokens),
        'x-amzn-bedrock-output-token-count': String(answer.usage.output_tokens),
        'x-amzn-bedrock-invocation-latency': '42',
        'content-length': String(Buffer.byteLength(answer.json)),
      });
      res.end(answer.json);
      return;
    }
    this.invokeEvents = answer.events;
    const frames = answer.events.map((json) => eventFrame('chunk', { bytes: Buffer.from(json).toString('base64') }));
    await this.stream(exchange, frames, mode, requestId);
  }

  /** InvokeModel for the embeddings models: the native answer with Bedrock's token-count and latency headers. */
  private invoke(res: ServerResponse, modelId: string, body: unknown, req: IncomingMessage): void {
    if (headerValue(req, 'content-type') !== 'application/json') return sendAwsError(res, 415, 'UnsupportedMediaTypeException', 'Unsupported content type.');
    let answer: EmbeddingAnswer | null;
    try {
      answer = answerInvoke(modelId, body);
    } catch (err) {
      if (err instanceof ValidationError) return sendAwsError(res, 400, 'ValidationException', err.message);
      throw err;
    }
    if (!answer) return sendAwsError(res, 400, 'ValidationException', 'The provided model identifier is invalid.');
    const json = JSON.stringify(answer.json);
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-amzn-requestid': randomUUID(),
      'x-amzn-bedrock-input-token-count': String(answer.inputTokens),
      'x-amzn-bedrock-invocation-latency': '23',
      'content-length': String(Buffer.byteLength(json)),
    });
    res.end(json);
  }

  private async stream(exchange: LiveExchange, events: Uint8Array[], mode: BedrockMode, requestId: string): Promise<void> {
    const { res } = exchange;
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': requestId });
    if (mode.kind === 'split') {
      const bytes = Buffer.concat(events);
      for (let i = 0; i < bytes.length; i += mode.bytes) {
        res.write(bytes.subarray(i, i + mode.bytes));
        if (!(await exchange.sleep(1))) return;
      }
      res.end();
      return;
    }
    if (mode.kind === 'garbled-prelude') {
      for (const [i, event] of events.entries()) {
        const bytes = Buffer.from(event);
        // The length's top byte: the frame now claims some 16 MB more than it holds.
        if (i === mode.afterEvents) bytes[0] = (bytes[0] as number) ^ 0x01;
        res.write(bytes);
        if (!(await exchange.sleep(1))) return;
      }
      if (!(await exchange.sleep(mode.holdMs))) return;
      res.end();
      return;
    }
    const cut = mode.kind === 'stream-exception' || mode.kind === 'truncate' ? mode.afterEvents : events.length;
    for (const event of events.slice(0, cut)) {
      res.write(event);
      if (!(await exchange.sleep(1))) return;
    }
    if (mode.kind === 'stream-exception') {
      res.write(frame({ ':exception-type': mode.exceptionType, ':content-type': 'application/json', ':message-type': 'exception' }, { message: mode.message }));
    }
    res.end();
  }

  /** SigV4 (recomputed here from the received request) or a Bedrock API key; null when the caller is who it claims. */
  private async authenticate(req: IncomingMessage, rawUrl: string, raw: Buffer): Promise<{ type: string; message: string } | null> {
    const authorization = headerValue(req, 'authorization');
    if (!authorization) return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
    const bearer = /^Bearer (.+)$/.exec(authorization);
    if (bearer) return bearer[1] === this.options.apiKey ? null : { type: 'UnrecognizedClientException', message: 'Invalid API Key format: Must start with pre-defined prefix' };
    const parsed = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(authorization);
    if (!parsed) return { type: 'IncompleteSignatureException', message: 'Authorization header requires Credential, SignedHeaders and Signature.' };
    const [, accessKeyId, , region, service, signedHeaders] = parsed as unknown as string[];
    const issued = this.options.issued?.(accessKeyId as string);
    if (accessKeyId !== this.options.accessKeyId && !issued) return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
    const secretAccessKey = issued ? issued.secretAccessKey : (this.options.secretAccessKey ?? '');
    const sessionToken = issued ? issued.sessionToken : this.options.sessionToken;
    if (issued && issued.expiration.getTime() <= Date.now()) return { type: 'ExpiredTokenException', message: 'The security token included in the request is expired' };
    const date = amzDate(headerValue(req, 'x-amz-date') ?? '');
    const expectedRegion = this.options.region ?? 'us-east-1';
    if (!date || region !== expectedRegion || service !== 'bedrock') {
      return { type: 'InvalidSignatureException', message: `Credential should be scoped to a valid region and service: ${expectedRegion}/bedrock.` };
    }
    if (sessionToken && headerValue(req, 'x-amz-security-token') !== sessionToken) {
      return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
    }
    // A session token is part of what is signed: one sent beside the signature could be swapped in transit.
    if (sessionToken && !(signedHeaders as string).split(';').includes('x-amz-security-token')) {
      return { type: 'InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided: x-amz-security-token is not among the signed headers.' };
    }
    const headers: Record<string, string> = {};
    for (const name of (signedHeaders as string).split(';')) {
      // Recomputed from the body below, so a body that does not match its declared hash fails the check.
      if (name === 'x-amz-content-sha256' || name === 'x-amz-date') continue;
      const value = headerValue(req, name);
      if (value !== undefined) headers[name] = value;
    }
    const url = new URL(rawUrl, `http://${headerValue(req, 'host') ?? 'localhost'}`);
    const query: Record<string, string> = {};
    for (const [name, value] of url.searchParams) query[name] = value;
    const signer = new SignatureV4({
      service: 'bedrock',
      region: expectedRegion,
      credentials: { accessKeyId: accessKeyId as string, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
      sha256: Sha256,
    });
    const expected = await signer.sign(
      { method: req.method ?? 'POST', protocol: 'http:', hostname: url.hostname, path: url.pathname, query, headers, body: raw.toString('utf8') },
      { signingDate: date },
    );
    if (expected.headers.authorization === authorization) return null;
    // AWS quotes the canonical request and string to sign it computed, every signed header with its value.
    const canonical = canonicalRequest(req.method ?? 'POST', url.pathname, (signedHeaders as string).split(';'), (name) => headerValue(req, name) ?? '', raw);
    const stringToSign = ['AWS4-HMAC-SHA256', headerValue(req, 'x-amz-date'), `${parsed[2]}/${region}/${service}/aws4_request`, sha256Hex(canonical)].join('\n');
    return {
      type: 'InvalidSignatureException',
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.' +
        `\n\nThe Canonical String for this request should have been\n'${canonical}'\n\nThe String-to-Sign should have been\n'${stringToSign}'\n`,
    };
  }
}

export async function startBedrockUpstream(options: BedrockUpstreamOptions = {}): Promise<BedrockUpstream> {
  const upstream = new ScriptedBedrock(options, await startAnthropicUpstream({ apiKey: CLAUDE_BEHIND }));
  await upstream.listen();
  return upstream;
}
