import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * DeepSeek ends a generation its inference system had to break off with `finish_reason: "insufficient_system_resource"`
 * (its chat completion's finish reasons: stop, length, content_filter, tool_calls, insufficient_system_resource, "the
 * request is interrupted due to insufficient resource of the inference system"). Half an answer, as Mistral's
 * `error`: tollgate passed it on as a whole one (Claude Code on /anthropic read `end_turn`, a Responses client a
 * completed Response, and the cache could keep it). It is now the retryable 502 upstream_generation_error Mistral's
 * `error` is: another attempt may answer, and the usage DeepSeek reported with it is charged.
 */

let deepseek: ScriptedUpstream;
let tg: RunningGateway;
let retrying: RunningGateway;

beforeAll(async () => {
  deepseek = await startOpenAIUpstream({ apiKey: 'sk-deepseek' });
  const providers = { deepseek: { base_url: `${deepseek.url}/v1`, api_key: 'sk-deepseek' } };
  tg = await startGateway({ providers, settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } } });
  retrying = await startGateway({ providers, settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1, max_delay_ms: 5 }, breaker: { enabled: false } } } });
});
afterAll(async () => {
  await tg?.stop();
  await retrying?.stop();
  await deepseek?.close();
});
beforeEach(() => deepseek.reset());

const USAGE = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, prompt_tokens_details: { cached_tokens: 0 }, prompt_cache_hit_tokens: 0, prompt_cache_miss_tokens: 12 };

/** DeepSeek's whole answer, broken off by the inference system after `text`. */
function interrupted(text: string): string {
  return JSON.stringify({
    id: '930c60df-bf64-41c9-a88e-3ec75f81e00e', object: 'chat.completion', created: 1705651092, model: 'deepseek-chat', system_fingerprint: 'fp_a49d71b8a1',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: 'insufficient_system_resource' }],
    usage: USAGE,
  });
}

/** The same, streamed: `text` in one delta, then the finish and the usage, then [DONE]. */
function interruptedStream(text: string): string {
  const head = { id: '930c60df-bf64-41c9-a88e-3ec75f81e00f', object: 'chat.completion.chunk', created: 1705651092, model: 'deepseek-chat', system_fingerprint: 'fp_a49d71b8a1' };
  return [
    { ...head, choices: [{ index: 0, delta: { role: 'assistant', content: text }, logprobs: null, finish_reason: null }] },
    { ...head, choices: [{ index: 0, delta: { content: '' }, logprobs: null, finish_reason: 'insufficient_system_resource' }], usage: USAGE },
  ].map((event) => `data: ${JSON.stringify(event)}\n\n`).join('') + 'data: [DONE]\n\n';
}

const JSON_TYPE = { 'content-type': 'application/json' };
const SSE_TYPE = { 'content-type': 'text/event-stream' };

async function lastLog(gateway: RunningGateway): Promise<Record<string, any>> {
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${gateway.url}/api/logs?limit=1`)).json()) as { data: Array<Record<string, any>> };
    if (body.data[0]) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe("DeepSeek's finish_reason insufficient_system_resource", () => {
  it('is not a whole answer for an Anthropic client: another attempt that answers is what it gets', async () => {
    deepseek.enqueue({ kind: 'raw', status: 200, headers: JSON_TYPE, body: interrupted('The first half of') });
    const client = new Anthropic({ baseURL: `${retrying.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const message = await client.messages.create({ model: 'deepseek/deepseek-chat', max_tokens: 200, messages: [{ role: 'user', content: 'hello' }] });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'echo: hello' })]);
    expect(deepseek.calls).toHaveLength(2);
  });

  it('is a 502 upstream_generation_error naming it, charged the usage DeepSeek reported', async () => {
    deepseek.enqueue({ kind: 'raw', status: 200, headers: JSON_TYPE, body: interrupted('The first half of') });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
    const error = (await client.chat.completions
      .create({ model: 'deepseek/deepseek-chat', messages: [{ role: 'user', content: 'hello' }] })
      .catch((err: unknown) => err)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_generation_error');
    expect(error.message).toContain('insufficient_system_resource');
    expect(await lastLog(tg)).toMatchObject({ status: 502, prompt_tokens: 12, completion_tokens: 5 });
  });

  it('ends an Anthropic client\'s stream with an error after the text that came, not with end_turn', async () => {
    deepseek.enqueue({ kind: 'raw', status: 200, headers: SSE_TYPE, body: interruptedStream('The first half of') });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const stream = await client.messages.create({ model: 'deepseek/deepseek-chat', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    let stopReason: string | null = null;
    const failure = await (async () => {
      for await (const event of stream) {
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
        if (event.type === 'message_delta') stopReason = event.delta.stop_reason;
      }
    })().catch((err: unknown) => err);
    expect(text).toBe('The first half of');
    expect(stopReason).toBeNull();
    expect(failure).toBeInstanceOf(Anthropic.APIError);
  });
});
