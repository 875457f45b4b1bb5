import { BadRequestError, type OpenAI } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// `stream_options` is rewritten on its way to the provider (the gateway asks every stream for usage, to charge by
// the provider's count), so a value of the wrong type never reached the provider to be refused as it is: a string
// arrived spread into `{"0":"x","include_usage":true}`, a number or `include_usage: "yes"` was silently replaced
// and the client got a 200. OpenAI refuses them with a 400 naming the field; so does the gateway, before any call.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
afterEach(() => upstream.reset());

/** What the official client raises for a streamed request with these stream_options (sent as written). */
async function refusal(streamOptions: unknown): Promise<BadRequestError> {
  const error: unknown = await tg.client.chat.completions
    .create({
      model: 'openai/gpt-4o-mini',
      stream: true,
      stream_options: streamOptions as OpenAI.ChatCompletionStreamOptions,
      messages: [{ role: 'user', content: 'hi' }],
    })
    .then(
      () => null,
      (caught: unknown) => caught,
    );
  expect(error).toBeInstanceOf(BadRequestError);
  return error as BadRequestError;
}

describe('stream_options of the wrong type', () => {
  it.each([['a string', 'x'], ['a number', 5], ['an array', [true]]])('is refused when it is %s, naming stream_options, with no upstream call', async (_what, value) => {
    const error = await refusal(value);
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ type: 'invalid_request_error', param: 'stream_options', code: 'invalid_type' });
    expect(upstream.calls).toHaveLength(0);
  });

  it('is refused when include_usage is not a boolean', async () => {
    const error = await refusal({ include_usage: 'yes' });
    expect(error.error).toMatchObject({ type: 'invalid_request_error', param: 'stream_options.include_usage', code: 'invalid_type' });
    expect(upstream.calls).toHaveLength(0);
  });

  it('still lets an object through as the client wrote it, include_obfuscation included', async () => {
    const stream = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true, include_obfuscation: false },
      messages: [{ role: 'user', content: 'hi' }],
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0);
    expect(upstream.calls[0]?.body.stream_options).toEqual({ include_usage: true, include_obfuscation: false });
  });
});
