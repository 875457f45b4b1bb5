import { type APIError, BadRequestError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

const MODEL = 'anthropic/claude-haiku-4-5';
let upstream: AnthropicUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { anthropic: { base_url: `${upstream.url}/v1`, api_key: 'sk-ant-upstream' } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

async function refusal(request: Promise<unknown>): Promise<APIError> {
  const error = await request.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(BadRequestError);
  return error as APIError;
}

describe('anthropic: logprobs, which Claude does not give', () => {
  it('is a 400 naming logprobs for a chat completions client, whole and streamed, before any upstream call', async () => {
    const base = { model: MODEL, messages: [{ role: 'user' as const, content: 'rate this' }], logprobs: true, top_logprobs: 2 };
    const whole = await refusal(tg.client.chat.completions.create(base));
    expect(whole.param).toBe('logprobs');
    expect(whole.message).toMatch(/log probabilities/);
    const streamed = await refusal(tg.client.chat.completions.create({ ...base, stream: true }));
    expect(streamed.param).toBe('logprobs');
    expect(upstream.calls).toHaveLength(0);
  });

  it('still answers `logprobs: false` as before', async () => {
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'rate this' }], logprobs: false });
    expect(completion.choices[0]?.message.content).toBeTruthy();
    expect(upstream.calls.at(-1)?.body).not.toHaveProperty('logprobs');
  });

  it('answers a Responses API request that includes logprobs without any, as the README promises', async () => {
    const response = await tg.client.responses.create({ model: MODEL, input: 'rate this', include: ['message.output_text.logprobs'], top_logprobs: 2 });
    expect(response.output_text).toBeTruthy();
    const message = response.output.find((item) => item.type === 'message');
    expect(message?.type === 'message' && message.content[0]?.type === 'output_text' ? message.content[0].logprobs : null).toEqual([]);
    expect(upstream.calls.at(-1)?.body).not.toHaveProperty('logprobs');
  });
});
