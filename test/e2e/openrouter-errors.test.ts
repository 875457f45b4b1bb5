import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * OpenRouter answers `{"error":{"code","message","metadata"}}`; when the provider it routed to failed, the message
 * is only "Provider returned error" and that provider's own answer is in `metadata.raw`, with `provider_name`
 * (openrouter.ai/docs/api/reference/errors-and-debugging).
 */

let openrouter: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  openrouter = await startOpenAIUpstream({ apiKey: 'sk-or-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openrouter: { base_url: `${openrouter.url}/v1`, api_key: 'sk-or-upstream' } },
  });
  client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
});

afterAll(async () => {
  await tg?.stop();
  await openrouter?.close();
});

beforeEach(() => openrouter.reset());

const RAW = '{"error":{"message":"max_tokens must be at most 8192 for this model","type":"invalid_request_error"}}';

describe('an OpenRouter error', () => {
  it("carries the routed provider's own answer (metadata.raw) to the client", async () => {
    openrouter.enqueue({
      kind: 'raw',
      status: 400,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { code: 400, message: 'Provider returned error', metadata: { raw: RAW, provider_name: 'Together' } } }),
    });
    const error = await client.chat.completions
      .create({ model: 'openrouter/meta-llama/llama-3.1-8b-instruct', max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const message = (error as InstanceType<typeof OpenAI.BadRequestError>).message;
    expect(message).toContain('Provider returned error');
    expect(message).toContain('Together');
    expect(message).toContain('max_tokens must be at most 8192 for this model');
  });

  it('keeps a message that says it all as written', async () => {
    openrouter.enqueue({
      kind: 'raw',
      status: 402,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { code: 402, message: 'Insufficient credits. Add more using https://openrouter.ai/settings/credits' } }),
    });
    const error = await client.chat.completions
      .create({ model: 'openrouter/openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain('Insufficient credits. Add more using https://openrouter.ai/settings/credits');
    expect((error as InstanceType<typeof OpenAI.APIError>).message).not.toContain('(');
  });
});
