// Claude on Amazon Bedrock through InvokeModel (`/model/{id}/invoke`) and InvokeModelWithResponseStream
// (`/model/{id}/invoke-with-response-stream`), as the scripted Bedrock upstream serves them: the body is Anthropic's
// Messages body as Bedrock takes it (no `model`, no `stream`, `anthropic_version: bedrock-2023-05-31`, beta opt-ins
// as an `anthropic_beta` array), judged as Bedrock does, then answered by a scripted Anthropic upstream behind, so the
// answer is Claude's own JSON, and the stream its events, each the JSON of one `chunk` frame's base64 `bytes`
// (AWS Bedrock user guide, Anthropic Claude Messages API; API reference, InvokeModelWithResponseStream).
import { request } from 'undici';

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** Claude on Bedrock, by base model id, a cross-region inference profile (`us.anthropic.claude-…`) or an ARN naming one. */
export function isClaudeModel(modelId: string): boolean {
  return /(^|[.:/])anthropic\.claude-/.test(modelId);
}

function isRecord(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Beta flags Bedrock serves for Claude (AWS user guide, Anthropic Claude Messages API: `anthropic_beta`); any other
 * fails the whole request with "invalid beta flag", as Bedrock answers Claude Code's first-party flags.
 */
const BEDROCK_BETAS = new Set([
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'token-efficient-tools-2025-02-19',
  'interleaved-thinking-2025-05-14',
  'output-128k-2025-02-19',
  'dev-full-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'tool-search-tool-2025-10-19',
  'tool-examples-2025-10-29',
]);

const malformed = (detail: string): string => `Malformed input request: ${detail}, please reformat your input and try again.`;

/** What Bedrock refuses in an InvokeModel body for Claude before the model sees it (its wording), or null. */
export function claudeInvokeProblem(body: unknown): string | null {
  if (!isRecord(body)) return malformed('#: expected type: JSONObject');
  // The URL names the model and the operation says whether to stream: Bedrock refuses both fields in the body.
  for (const key of ['model', 'stream']) if (key in body) return malformed(`#: extraneous key [${key}] is not permitted`);
  if (!('anthropic_version' in body)) return malformed('#: required key [anthropic_version] not found');
  if (body.anthropic_version !== BEDROCK_ANTHROPIC_VERSION) return malformed(`#/anthropic_version: ${String(body.anthropic_version)} is not a valid enum value`);
  const betas = body.anthropic_beta;
  if (betas !== undefined && !(Array.isArray(betas) && betas.every((beta) => typeof beta === 'string'))) return malformed('#/anthropic_beta: expected type: JSONArray of strings');
  if (Array.isArray(betas) && betas.some((beta) => !BEDROCK_BETAS.has(beta))) return 'invalid beta flag';
  return null;
}

/** The AWS error Bedrock answers for an Anthropic error status (its message is Claude's). */
function awsErrorOf(status: number): { status: number; errorType: string } {
  if (status === 400) return { status: 400, errorType: 'ValidationException' };
  if (status === 401 || status === 403) return { status: 403, errorType: 'AccessDeniedException' };
  if (status === 404) return { status: 404, errorType: 'ResourceNotFoundException' };
  if (status === 429) return { status: 429, errorType: 'ThrottlingException' };
  if (status === 529 || status === 503) return { status: 503, errorType: 'ServiceUnavailableException' };
  return { status: 500, errorType: 'InternalServerException' };
}

export type ClaudeAnswer =
  | { kind: 'error'; status: number; errorType: string; message: string }
  | { kind: 'message'; json: string; usage: Record<string, number> }
  /** The stream's events as Bedrock carries them: each one event's JSON (pings are not sent). */
  | { kind: 'events'; events: string[] };

/** Claude's answer to a valid InvokeModel body, from the Anthropic upstream at `anthropicUrl` (key `apiKey`). */
export async function askClaude(anthropicUrl: string, apiKey: string, modelId: string, body: Record<string, any>, stream: boolean): Promise<ClaudeAnswer> {
  const { anthropic_version: _version, anthropic_beta: betas, ...rest } = body;
  // Claude's own model name: the id without its inference-profile prefix or ARN.
  const model = modelId.replace(/^.*anthropic\./, '');
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' };
  if (Array.isArray(betas) && betas.length > 0) headers['anthropic-beta'] = betas.join(',');
  const answer = await request(`${anthropicUrl}/v1/messages`, { method: 'POST', headers, body: JSON.stringify({ ...rest, model, ...(stream ? { stream: true } : {}) }) });
  const text = await answer.body.text();
  if (answer.statusCode !== 200) {
    let message = text;
    try {
      message = JSON.parse(text).error.message;
    } catch {
      // not Anthropic's error shape: the text as it is
    }
    return { kind: 'error', ...awsErrorOf(answer.statusCode), message };
  }
  if (!stream) {
    const usage = JSON.parse(text).usage as Record<string, number>;
    return { kind: 'message', json: text, usage };
  }
  const events: string[] = [];
  let input = 0;
  let output = 0;
  for (const frame of text.split('\n\n')) {
    const data = frame.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
    if (data === '') continue;
    const event = JSON.parse(data);
    if (event.type === 'ping') continue;
    if (event.type === 'message_start') input = event.message.usage.input_tokens;
    if (event.type === 'message_delta') output = event.usage.output_tokens;
    // Bedrock adds its own counts and latencies to the last event.
    const metrics = { inputTokenCount: input, outputTokenCount: output, invocationLatency: 42, firstByteLatency: 17 };
    events.push(event.type === 'message_stop' ? JSON.stringify({ ...event, 'amazon-bedrock-invocationMetrics': metrics }) : data);
  }
  return { kind: 'events', events };
}
