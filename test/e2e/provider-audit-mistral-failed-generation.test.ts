import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Mistral's FinishReason includes `error` (ChatCompletionChoice and CompletionResponseStreamChoice in Mistral's API
// spec: stop, length, model_length, error, tool_calls): the generation broke off. OpenAI's API has no such reason,
// and it passed for a finished answer: an Anthropic client got `end_turn`, a Responses client a `completed` response.
// As Cohere's ERROR, it is a failed upstream call: a retryable 502, charged the usage Mistral reported with it.

const MODEL = 'mistral-small-latest';
const usage = { prompt_tokens: 1200, completion_tokens: 3, total_tokens: 1203 };

async function newestLog(url: string): Promise<any> {
  const body = (await (await fetch(`${url}/api/logs?limit=1`)).json()) as any;
  return body.data?.[0] ?? null;
}

/** The log entry of the request made after `before` (the newest entry then): written after the answer, so waited for. */
async function logAfter(url: string, before: any): Promise<any> {
  for (let i = 0; i < 50; i++) {
    const entry = await newestLog(url);
    if (entry && JSON.stringify(entry) !== JSON.stringify(before)) return entry;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

function wholeAnswer(): string {
  return JSON.stringify({
    id: 'cmpl-0b6b1bb2d43a4f1d9d3f0d0f43c0a3a1',
    object: 'chat.completion',
    created: 1_764_547_200,
    model: MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content: 'The answer is', tool_calls: null }, finish_reason: 'error' }],
    usage,
  });
}

function streamedAnswer(): string {
  const head = { id: 'cmpl-0b6b1bb2d43a4f1d9d3f0d0f43c0a3a1', object: 'chat.completion.chunk', created: 1_764_547_200, model: MODEL };
  const frame = (delta: object, finish: string | null, extra: object = {}) => `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  return [frame({ role: 'assistant', content: '' }, null), frame({ content: 'The answer' }, null), frame({ content: ' is' }, null), frame({ content: '' }, 'error', { usage }), 'data: [DONE]\n\n'].join('');
}

describe('a Mistral generation that ends with finish_reason error', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  let anthropic: Anthropic;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
    tg = await startGateway({
      providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    });
    anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it('is a 502 for an OpenAI client, not a finished answer', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, body: wholeAnswer() });
    const before = await newestLog(tg.url);
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: `mistral/${MODEL}`, messages: [{ role: 'user', content: 'hi' }] }).then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((error as Error).message).toContain('finish_reason error');
    // Charged what Mistral reported for the broken generation, not the gateway's estimate of a two-letter prompt.
    const log = await logAfter(tg.url, before);
    expect(log).toMatchObject({ status: 502, error_code: 'upstream_generation_error', prompt_tokens: 1200, completion_tokens: 3 });
  });

  it('is an error for an Anthropic client, not end_turn', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, body: wholeAnswer() });
    const error = await anthropic.messages.create({ model: `mistral/${MODEL}`, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
  });

  it('fails an Anthropic client’s stream after the text that came, not with end_turn', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: streamedAnswer() });
    const before = await newestLog(tg.url);
    const stream = anthropic.messages.stream({ model: `mistral/${MODEL}`, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const error = await stream.finalMessage().then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).toContain('finish_reason error');
    expect(text).toBe('The answer is');
    const log = await logAfter(tg.url, before);
    expect(log).toMatchObject({ status: 502, error_code: 'upstream_generation_error', prompt_tokens: 1200, completion_tokens: 3 });
  });

  it('retries another attempt when the route allows one', async () => {
    const retrying = await startGateway({
      providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } },
      settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    });
    try {
      upstream.enqueue({ kind: 'raw', status: 200, body: wholeAnswer() }, { kind: 'reply', pieces: ['Whole', ' answer.'] });
      const answer = await retrying.client.chat.completions.create({ model: `mistral/${MODEL}`, messages: [{ role: 'user', content: 'hi' }] });
      expect(answer.choices[0]?.message.content).toBe('Whole answer.');
      expect(answer.choices[0]?.finish_reason).toBe('stop');
      expect(upstream.calls).toHaveLength(2);
    } finally {
      await retrying.stop();
    }
  });
});
