import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue, valueText } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';
import { fitBudget, thinkingOf } from '../anthropic/thinking.js';
import { upstreamToolCallId } from '../tool-call-ids.js';
import { asksSingleToolCall, refuseSingleToolCall } from '../single-tool-call.js';
import { DocumentTranslator, documentsText, type DocumentBlock } from './documents.js';

/** A Converse content block (only the members tollgate sends). */
export type ConverseBlock =
  | { text: string }
  | { image: { format: ImageFormat; source: { bytes: string } } }
  | DocumentBlock
  | { toolUse: { toolUseId: string; name: string; input: unknown } }
  | { toolResult: { toolUseId: string; content: Array<{ text: string }> } };

type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ConverseBlock[];
}

export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: Array<{ text: string }>;
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] };
  toolConfig?: { tools: unknown[]; toolChoice?: unknown };
  outputConfig?: unknown;
  additionalModelRequestFields?: Record<string, unknown>;
}

const IMAGE_FORMATS: Record<string, ImageFormat> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

function bad(message: string, param: string | null = null): GatewayError {
  return gatewayError('unsupported_for_provider', `bedrock: ${message}`, { param: param });
}

function imageBlock(url: unknown, where: string): ConverseBlock {
  const match = typeof url === 'string' ? /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url) : null;
  if (!match) {
    // Converse takes image bytes only; fetching a client's URL from the gateway is not ours to do.
    throw bad('images must be sent as base64 data: URLs; Bedrock cannot fetch http(s) image URLs.', where);
  }
  const mediaType = (match[1] as string).toLowerCase();
  // Own keys only: a client's 'constructor' media type must find no format.
  const format = Object.hasOwn(IMAGE_FORMATS, mediaType) ? IMAGE_FORMATS[mediaType] : undefined;
  if (!format) throw bad(`image type ${match[1]} is not supported (png, jpeg, gif, webp).`, where);
  return { image: { format, source: { bytes: (match[2] as string).replace(/\s+/g, '') } } };
}

/** Text of a content value that may only hold text (system prompts, tool results, assistant turns). */
function textOf(content: unknown, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad('message content must be a string or an array of parts.', where);
  return content
    .map((part: unknown) => {
      if (isRecord(part) && (part.type === 'text' || part.type === 'refusal')) return valueText(part.text ?? part.refusal ?? '');
      throw bad(`only text parts are allowed here, got '${isRecord(part) ? quoteValue(part.type) : typeof part}'.`, where);
    })
    .join('');
}

/**
 * A user message's blocks. Whitespace-only texts are left out: Converse refuses a text block that is blank ("text
 * content blocks must contain non-whitespace text"), and whitespace says nothing to the model.
 */
function userBlocks(content: unknown, where: string, documents: DocumentTranslator): ConverseBlock[] {
  if (typeof content === 'string') return content.trim() === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw bad('message content must be a string or an array of parts.', where);
  const blocks: ConverseBlock[] = [];
  content.forEach((part: unknown, i) => {
    if (!isRecord(part)) throw bad('content parts must be objects.', `${where}.${i}`);
    if (part.type === 'text') {
      if (typeof part.text === 'string' && part.text.trim() !== '') blocks.push({ text: part.text });
    } else if (part.type === 'image_url') {
      const image = part.image_url;
      blocks.push(imageBlock(isRecord(image) ? image.url : image, `${where}.${i}`));
    } else if (part.type === 'file') {
      blocks.push(documents.block(part, `${where}.${i}`));
    } else {
      throw bad(`content part type '${quoteValue(part.type)}' is not supported.`, `${where}.${i}`);
    }
  });
  return blocks;
}

function parseArguments(raw: unknown, where: string): unknown {
  if (raw === undefined || raw === null || raw === '') return {};
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw bad('tool call arguments must be JSON.', where);
  }
}

function assistantBlocks(message: ChatMessage, where: string): ConverseBlock[] {
  const blocks: ConverseBlock[] = [];
  // Converse rejects blank text blocks, which OpenAI clients send next to tool calls.
  const text = textOf(message.content, `${where}.content`);
  if (text.trim() !== '') blocks.push({ text });
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as unknown[]) : [];
  calls.forEach((call, i) => {
    const fn = isRecord(call) && isRecord(call.function) ? call.function : null;
    if (!isRecord(call) || !fn || typeof fn.name !== 'string') throw bad('tool calls need a function name.', `${where}.tool_calls.${i}`);
    blocks.push({
      toolUse: { toolUseId: upstreamToolCallId(valueText(call.id ?? `call_${i}`)), name: fn.name, input: parseArguments(fn.arguments, `${where}.tool_calls.${i}.function.arguments`) },
    });
  });
  return blocks;
}

/**
 * Converse wants user and assistant turns to alternate, and tool results inside a user turn, so consecutive
 * messages of the same role become one.
 */
function pushTurn(turns: ConverseMessage[], role: 'user' | 'assistant', blocks: ConverseBlock[]): void {
  if (blocks.length === 0) return;
  const last = turns[turns.length - 1];
  if (last && last.role === role) for (const block of blocks) last.content.push(block);
  else turns.push({ role, content: blocks });
}

/** A tool result's text when the tool's answer held none. */
const NO_TEXT_OUTPUT = '(no text output)';

function translateMessages(messages: ChatMessage[]): { turns: ConverseMessage[]; system: Array<{ text: string }>; usesTools: boolean } {
  const turns: ConverseMessage[] = [];
  const system: Array<{ text: string }> = [];
  let usesTools = false;
  const documents = new DocumentTranslator();
  messages.forEach((message, i) => {
    const where = `messages.${i}`;
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content, `${where}.content`);
        // A blank system text goes the way of a blank user text (see userBlocks).
        if (text.trim() !== '') system.push({ text });
        break;
      }
      case 'user':
        pushTurn(turns, 'user', userBlocks(message.content, `${where}.content`, documents));
        break;
      case 'assistant': {
        const blocks = assistantBlocks(message, where);
        if (blocks.some((block) => 'toolUse' in block)) usesTools = true;
        pushTurn(turns, 'assistant', blocks);
        break;
      }
      case 'tool': {
        usesTools = true;
        if (typeof message.tool_call_id !== 'string') throw bad('tool messages need a tool_call_id.', `${where}.tool_call_id`);
        // Text, not `json` or `status`: every Converse model takes text results; json and status are Claude-only.
        // Converse refuses a blank text in a tool result as it does elsewhere; a tool that printed nothing, or
        // answered only with a file (Claude Code's Read of a PDF, whose document follows in the user turn), says so.
        const text = textOf(message.content, `${where}.content`);
        const content = [{ text: text.trim() === '' ? NO_TEXT_OUTPUT : text }];
        pushTurn(turns, 'user', [{ toolResult: { toolUseId: upstreamToolCallId(message.tool_call_id), content } }]);
        break;
      }
      default:
        throw bad(`message role '${quoteValue(message.role)}' is not supported.`, `${where}.role`);
    }
  });
  // Checked once turns are merged: a document's text block may come from the next message of the same turn.
  for (const turn of turns) {
    const text = turn.role === 'user' ? documentsText(turn.content) : null;
    if (text) turn.content.push(text);
  }
  return { turns, system, usesTools };
}

/**
 * The toolConfig of a request that offers no tools but whose history holds tool calls: Converse refuses such a
 * history without a toolConfig ("The toolConfig field must be defined when using toolUse and toolResult content
 * blocks"), while OpenAI takes it (an agent's last turn often drops `tools`). One tool that does nothing is
 * declared rather than the history's own, so the model is not offered a tool the client did not offer.
 */
const HISTORY_ONLY_TOOLS: NonNullable<ConverseRequest['toolConfig']> = {
  tools: [
    {
      toolSpec: {
        name: 'no_tools_available',
        description: 'No tools are available for this turn. Do not call this tool; answer in text.',
        inputSchema: { json: { type: 'object', properties: {} } },
      },
    },
  ],
};

function toolConfig(request: ChatCompletionRequest, historyUsesTools: boolean): ConverseRequest['toolConfig'] {
  const tools = Array.isArray(request.tools) ? (request.tools as unknown[]) : [];
  if (tools.length === 0) return historyUsesTools ? HISTORY_ONLY_TOOLS : undefined;
  const choice = request.tool_choice;
  // Converse has no "none" (its default with tools offered is auto): leave the tools out, and when the history
  // holds tool blocks, which Converse only accepts with a toolConfig present, declare the do-nothing tool instead
  // of the client's, so the model is not offered a tool the client forbade.
  if (choice === 'none') return historyUsesTools ? HISTORY_ONLY_TOOLS : undefined;
  const specs = tools.map((tool, i) => {
    const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : null;
    if (!fn || typeof fn.name !== 'string') throw bad('only function tools with a name are supported.', `tools.${i}`);
    return {
      toolSpec: {
        name: fn.name,
        ...(typeof fn.description === 'string' && fn.description !== '' ? { description: fn.description } : {}),
        inputSchema: { json: isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} } },
      },
    };
  });
  let toolChoice: unknown;
  if (choice === 'auto') toolChoice = { auto: {} };
  else if (choice === 'required') toolChoice = { any: {} };
  else if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') toolChoice = { tool: { name: choice.function.name } };
  return { tools: specs, ...(toolChoice ? { toolChoice } : {}) };
}

function inferenceConfig(request: ChatCompletionRequest): ConverseRequest['inferenceConfig'] {
  const config: NonNullable<ConverseRequest['inferenceConfig']> = {};
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (typeof maxTokens === 'number') config.maxTokens = maxTokens;
  if (typeof request.temperature === 'number') config.temperature = request.temperature;
  if (typeof request.top_p === 'number') config.topP = request.top_p;
  const stop = request.stop;
  if (typeof stop === 'string') config.stopSequences = [stop];
  else if (Array.isArray(stop) && stop.length > 0) config.stopSequences = stop.map((sequence: unknown) => valueText(sequence));
  return Object.keys(config).length > 0 ? config : undefined;
}

function outputConfig(format: unknown): unknown {
  // json_object has no Converse counterpart (it is a hint in OpenAI's API too); only a schema is enforced.
  if (!isRecord(format) || format.type !== 'json_schema' || !isRecord(format.json_schema)) return undefined;
  const spec = format.json_schema;
  return {
    textFormat: {
      type: 'json_schema',
      structure: {
        jsonSchema: {
          // Converse takes the schema as a JSON string.
          schema: JSON.stringify(spec.schema ?? {}),
          name: typeof spec.name === 'string' ? spec.name : 'response',
          ...(typeof spec.description === 'string' ? { description: spec.description } : {}),
        },
      },
    },
  };
}

/**
 * `parallel_tool_calls: false` for Claude: Converse's ToolConfiguration holds tools and a toolChoice (auto, any, tool)
 * and no switch for one call a turn, so it goes as Anthropic's `tool_choice.disable_parallel_tool_use` in
 * additionalModelRequestFields, which Bedrock merges into the tool_choice it writes from toolConfig.toolChoice. With a
 * toolChoice set, the type is that one's (Bedrock refuses a `type` here as conflicting with it); without one (Converse's
 * default, auto) Anthropic's tool_choice needs its type, `auto`.
 */
function singleToolCallChoice(toolChoiceSet: boolean): Record<string, unknown> {
  return toolChoiceSet ? { disable_parallel_tool_use: true } : { type: 'auto', disable_parallel_tool_use: true };
}

/**
 * The refusal of `parallel_tool_calls: false` for the other families (see refuseSingleToolCall): Converse has no
 * setting for one tool call per turn, and their own fields hold none.
 */
const SINGLE_TOOL_CALL_REFUSAL = "bedrock: parallel_tool_calls: false is not supported for this model: Converse has no setting for one tool call per turn, and the model may answer with several. Leave the field out (or set it true) and handle each call of a turn. (Claude takes it, also behind an application inference profile or a provisioned model listed in the provider's claude_models.)";

/**
 * Claude's own request fields. Converse has no reasoning or top-k field of its own: Claude takes Anthropic's
 * `thinking` in additionalModelRequestFields, the budget an Anthropic client set or the one reasoning_effort maps
 * to (fitted under maxTokens as on Anthropic's API), `top_k` (AWS's Converse example for Claude sends it there) and
 * `tool_choice.disable_parallel_tool_use` (see singleToolCallChoice). Other families are sent nothing: some take other
 * fields or none, and an unknown field is a 400 (see README).
 */
function modelFields(request: ChatCompletionRequest, claude: boolean, body: ConverseRequest): ConverseRequest['additionalModelRequestFields'] {
  if (!claude) return undefined;
  const maxTokens = body.inferenceConfig?.maxTokens;
  const turns = body.messages;
  const fields: Record<string, unknown> = {};
  let thinking = thinkingOf(request);
  const explicit = request.thinking !== undefined && request.thinking !== null;
  // Thinking off is Claude's default: nothing to send. Thinking asked for by reasoning_effort is left off for the turn
  // after a tool call that carries none (OpenAI's formats cannot hand Claude's signed thinking back): Claude refuses
  // it ("a final assistant message must start with a thinking block"); thinking set explicitly is Claude's to judge.
  if (thinking && thinking.type !== 'disabled' && (explicit || !continuesUnthoughtToolTurn(turns))) {
    if (maxTokens !== undefined) thinking = fitBudget(thinking, maxTokens, explicit);
    fields.thinking = thinking;
  }
  if (typeof request.top_k === 'number') fields.top_k = request.top_k;
  if (asksSingleToolCall(request)) fields.tool_choice = singleToolCallChoice(body.toolConfig?.toolChoice !== undefined);
  return Object.keys(fields).length > 0 ? fields : undefined;
}

/** Whether the last assistant turn calls a tool without starting with its reasoning (see modelFields). */
function continuesUnthoughtToolTurn(turns: readonly ConverseMessage[]): boolean {
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i] as ConverseMessage;
    if (turn.role !== 'assistant') continue;
    const first = turn.content[0];
    return !(first !== undefined && 'reasoningContent' in first) && turn.content.some((block) => 'toolUse' in block);
  }
  return false;
}

/**
 * The Converse body for a canonical request; fields Converse cannot express are dropped (seed, user, ...). `claude`:
 * the model is Claude, which takes Anthropic's own fields (see modelFields).
 */
export function converseBody(request: ChatCompletionRequest, claude: boolean): ConverseRequest {
  if (typeof request.n === 'number' && request.n > 1) throw bad('n > 1 is not supported; Converse returns one answer per request.', 'n');
  // Converse returns no log probabilities: an answer with `logprobs: null` would look like a provider fault, not a
  // choice of model (as for Claude on Anthropic's API, anthropic/logprobs.ts).
  if (request.logprobs === true) throw bad('log probabilities are not supported; Converse returns none (logprobs must be false or left out).', 'logprobs');
  if (!claude) refuseSingleToolCall(request, SINGLE_TOOL_CALL_REFUSAL);
  const { turns, system, usesTools } = translateMessages(request.messages);
  if (turns.length === 0) throw bad('at least one user message is required.', 'messages');
  const body: ConverseRequest = { messages: turns };
  if (system.length > 0) body.system = system;
  const inference = inferenceConfig(request);
  if (inference) body.inferenceConfig = inference;
  const tools = toolConfig(request, usesTools);
  if (tools) body.toolConfig = tools;
  const output = outputConfig(request.response_format);
  if (output) body.outputConfig = output;
  const fields = modelFields(request, claude, body);
  if (fields) body.additionalModelRequestFields = fields;
  return body;
}
