import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

// An upstream may answer 200 and then report the failure as the stream's first event (OpenAI's `data: {"error":
// {...}}`, Anthropic's `event: error`). Before any of the answer reached the client the request may still move on,
// but an error the upstream types as the request's own (invalid_request_error: a context too long, a bad field) comes
// back the same on every retry. tollgate retried it on the same target, with backoff, as if the upstream had broken
// down, and ended with a 502 that the client's SDK retries again. Gemini's stream errors were already classified by
// their code, as an HTTP status is.

const CONTEXT = { message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' };

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream()]);
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
    },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), anthropic?.close()]);
});
afterEach(() => {
  openai.reset();
  anthropic.reset();
});

/** The error a streamed chat request ends with, and how many chunks came before it. */
async function streamFailure(model: string): Promise<{ error: unknown; chunks: number }> {
  let chunks = 0;
  try {
    const stream = await tg.client.chat.completions.create({ model, stream: true, messages });
    for await (const _chunk of stream) chunks++;
  } catch (error) {
    return { error, chunks };
  }
  throw new Error('the stream ended without an error');
}

describe('an invalid-request error event opening a 200 stream', () => {
  it('from an OpenAI-format upstream is not retried, and reaches the client as the 400 it is', async () => {
    openai.setMode({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: `data: ${JSON.stringify({ error: CONTEXT })}\n\n` });
    const { error, chunks } = await streamFailure('openai/gpt-4o-mini');
    expect(chunks).toBe(0);
    expect(openai.calls).toHaveLength(1);
    // BadRequestError: the client's SDK does not send it again either (it retries a 502).
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toEqual(CONTEXT);
  });

  it('from an Anthropic upstream is not retried either', async () => {
    anthropic.setMode({ kind: 'stream-error', after: 0, type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' });
    const { error, chunks } = await streamFailure('anthropic/claude-sonnet-4-5');
    expect(chunks).toBe(0);
    expect(anthropic.calls).toHaveLength(1);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' });
  });

  it("from an Anthropic upstream reaches an Anthropic client as Anthropic's 400, not retried", async () => {
    anthropic.setMode({ kind: 'stream-error', after: 0, type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' });
    const claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-key', maxRetries: 0, timeout: 10_000 });
    const failure = await claude.messages
      .create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .then(async (stream) => {
        for await (const _event of stream);
        return null;
      })
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Anthropic.BadRequestError);
    expect((failure as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } });
    expect(anthropic.calls).toHaveLength(1);
  });

  it('while an overloaded error event is still retried, and the retry answers', async () => {
    anthropic.enqueue({ kind: 'stream-error', after: 0, type: 'overloaded_error', message: 'Overloaded' });
    let text = '';
    const stream = await tg.client.chat.completions.create({ model: 'anthropic/claude-sonnet-4-5', stream: true, messages });
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).not.toBe('');
    expect(anthropic.calls).toHaveLength(2);
  });
});
