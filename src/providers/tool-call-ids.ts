import { createHash } from 'node:crypto';

/**
 * The tool call ids Anthropic's Messages API (`^[a-zA-Z0-9_-]+$`) and Bedrock's Converse (the same, 1 to 64
 * characters, API reference ToolUseBlock.toolUseId) take.
 */
const TAKEN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * A client's tool call id as such an upstream takes it. OpenAI's own ids (`call_...`) pass unchanged; an id another
 * vendor wrote (Kimi's `functions.get_weather:0`, an MCP client's dotted names), which would make the upstream
 * refuse the whole history with a 400, gets its other characters replaced and a hash of the whole id appended, so
 * the call and its result still match, in this request and in every later one, and two ids never become one.
 */
export function upstreamToolCallId(id: string): string {
  if (TAKEN.test(id)) return id;
  const hash = createHash('sha256').update(id).digest('base64url').slice(0, 16);
  return `${id.slice(0, 40).replace(/[^a-zA-Z0-9_-]/g, '_')}_${hash}`;
}
