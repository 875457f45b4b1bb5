import type { ChatCompletion, NativeRequest } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import type { Target, UpstreamRequest } from '../../core/provider.js';
import { COMPACT_FORMAT } from '../../wire/openai-responses/format.js';
import { completionUsageOf } from '../../wire/openai-responses/usage.js';
import { withoutTranslatedReasoning } from '../../wire/openai-responses/translated-reasoning.js';
import { invalidUpstreamBody } from '../upstream-error.js';
import { jsonHeaders, joinUrl } from '../upstream-request.js';

export { COMPACT_FORMAT };

/** Whether the target compacts a conversation itself (`POST {base}/responses/compact`): OpenAI's own API does. */
export function servesCompaction(target: Target, format: string): boolean {
  return format === COMPACT_FORMAT && target.provider.vendor.id === 'openai';
}

/**
 * The client's compaction body for the upstream at `url`: only `model` changes, to the target's upstream name (and
 * reasoning items tollgate wrote for another provider's answer are left out, as on /v1/responses); the rest goes as
 * the client wrote it, for OpenAI to judge.
 */
export function compactionRequest(native: NativeRequest, target: Target, url = joinUrl(target.provider.baseUrl, '/responses/compact')): UpstreamRequest {
  return { method: 'POST', url, headers: jsonHeaders(target), body: JSON.stringify({ ...withoutTranslatedReasoning(native.body), model: target.model }) };
}

/**
 * A compaction answer (`response.compaction`) as the canonical completion the stages read: no text (its output is
 * the client's own user messages and an encrypted item, nothing the model wrote that a guardrail could read), a
 * `stop`, and its usage, which cost, budgets and the request log charge. The client gets the answer as it came.
 */
export function compactionCompletion(body: unknown, target: Target): ChatCompletion {
  if (!isRecord(body) || !Array.isArray(body.output)) throw invalidUpstreamBody(target.provider.name, 'a compaction without output');
  return {
    id: typeof body.id === 'string' ? body.id : '',
    object: 'chat.completion',
    created: typeof body.created_at === 'number' ? Math.floor(body.created_at) : Math.floor(Date.now() / 1000),
    model: target.model,
    choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'stop', logprobs: null }],
    usage: completionUsageOf(body.usage),
  };
}
