import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// An upstream error answer with `x-should-retry: true` is retried by the OpenAI and Anthropic SDKs whatever its status
// (the OpenAI SDK's shouldRetry obeys the header before it looks at the status). tollgate retried such an answer only
// when its status was retryable anyway: a 400 that said `true` went straight back to the client. It now retries it as
// a retryable status (max_attempts, backoff, the same target), and passes the header on when the request ends with it.
let upstream: ScriptedUpstream;
let tg: RunningGateway;

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  upstream = await startOpenAIUpstream();
  tg = await startGateway({
    providers: { only: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-only' } },
    settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 }, breaker: { enabled: false } } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
afterEach(() => upstream.reset());

function statusOf(err: unknown): number | undefined {
  return err instanceof OpenAI.APIError ? err.status : undefined;
}

describe('x-should-retry: true from the upstream', () => {
  it('retries an answer that says x-should-retry: true on the same target, a 400 as a 409, and answers', async () => {
    // 409 (a lock timeout) was retried by its status already; a 400 was not, though its upstream said to retry it.
    for (const status of [409, 400]) {
      upstream.reset();
      upstream.enqueue({ kind: 'error', status, message: 'locked, try again', headers: { 'x-should-retry': 'true' } });
      const { data, response } = await tg.client.chat.completions.create({ model: 'only/m', messages }).withResponse();
      expect(data.choices[0]?.message.content).toBe('echo: hi');
      expect(response.headers.get('x-tollgate-attempts')).toBe('2');
      expect(upstream.calls).toHaveLength(2);
    }

    // An answer without the header is as before: a 400 is the client's, not retried.
    upstream.reset();
    upstream.enqueue({ kind: 'error', status: 400, message: 'bad request' });
    const refused = await tg.client.chat.completions.create({ model: 'only/m', messages }).catch((err: unknown) => err);
    expect(statusOf(refused)).toBe(400);
    expect((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBeNull();
    expect(upstream.calls).toHaveLength(1);
  });

  it('stops at max_attempts, and passes x-should-retry: true on so the client SDK may retry as it would have', async () => {
    upstream.setMode({ kind: 'error', status: 400, message: 'still busy', headers: { 'x-should-retry': 'true' } });
    const failure = await tg.client.chat.completions.create({ model: 'only/m', messages }).catch((err: unknown) => err);
    expect(statusOf(failure)).toBe(400);
    expect((failure as InstanceType<typeof OpenAI.APIError>).message).toContain('still busy');
    expect((failure as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('true');
    expect((failure as InstanceType<typeof OpenAI.APIError>).headers?.get('x-tollgate-attempts')).toBe('3');
    expect(upstream.calls).toHaveLength(3);
  });
});
