import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * OpenRouter answers with the error's status only when the request failed before a model began (a bad request, no
 * credits); "otherwise, the returned HTTP response status will be 200 and any error occurred while the LLM is
 * producing the output will be emitted in the response body or as an SSE data event", in its ErrorResponse shape
 * `{"error":{"code":number,"message","metadata"}}` (openrouter.ai/docs/api/reference/errors-and-debugging). A whole
 * answer of that shape is the error OpenRouter wrote, as the same error inside a stream already was.
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

/** OpenRouter's answer to a generation that failed after it began: 200, the error in the body (after its keep-alive whitespace). */
function answeredError(error: Record<string, unknown>): { kind: 'raw'; status: number; headers: Record<string, string>; body: string } {
  return { kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: `\n\n${JSON.stringify({ error })}` };
}

describe('an OpenRouter error written into a 200 answer', () => {
  it("reaches the OpenAI client with OpenRouter's message, code and metadata, as a retryable 502", async () => {
    openrouter.enqueue(answeredError({ code: 502, message: 'Provider disconnected unexpectedly', metadata: { provider_name: 'Fireworks' } }));
    const error = await client.chat.completions
      .create({ model: 'openrouter/meta-llama/llama-3.3-70b-instruct', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const failure = error as InstanceType<typeof OpenAI.APIError>;
    expect(failure.status).toBe(502);
    expect(failure.message).toContain('Provider disconnected unexpectedly');
    expect(failure.code).toBe('502');
    expect(failure.error).toMatchObject({ message: 'Provider disconnected unexpectedly', code: '502', metadata: { provider_name: 'Fireworks' } });
  });

  it('with the routed provider\'s own answer (metadata.raw) in the message, as for an error status', async () => {
    const raw = '{"error":{"message":"upstream connect error or disconnect/reset before headers","type":"server_error"}}';
    openrouter.enqueue(answeredError({ code: 502, message: 'Provider returned error', metadata: { raw, provider_name: 'Together' } }));
    const error = (await client.chat.completions
      .create({ model: 'openrouter/meta-llama/llama-3.3-70b-instruct', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(502);
    expect(error.message).toContain('Provider returned error');
    expect(error.message).toContain('Together');
    expect(error.message).toContain('upstream connect error or disconnect/reset before headers');
  });

  it('is retried like a failed stream: another attempt that answers is what the client gets', async () => {
    const retrying = await startGateway({
      settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
      providers: { openrouter: { base_url: `${openrouter.url}/v1`, api_key: 'sk-or-upstream' } },
    });
    try {
      openrouter.enqueue(answeredError({ code: 502, message: 'Provider disconnected unexpectedly' }));
      const completion = await retrying.client.chat.completions.create({ model: 'openrouter/openai/gpt-4o-mini', messages: [{ role: 'user', content: 'again' }] });
      expect(completion.choices[0]?.message.content).toBe('echo: again');
      expect(openrouter.calls).toHaveLength(2);
    } finally {
      await retrying.stop();
    }
  });
});

/**
 * OpenRouter's choices carry an `error` (its ErrorResponse) beside `finish_reason: "error"` when the model finished the
 * request with one (NonStreamingChoice and StreamingChoice in its response schema, openrouter.ai/docs/api-reference/overview):
 * the failed generation's retryable 502 says what OpenRouter said went wrong, whole and streamed.
 */
describe("an OpenRouter choice that ends with finish_reason error and its error", () => {
  const choiceError = { code: 502, message: 'Upstream idle timeout exceeded' };

  it('gives the whole answer\'s 502 the message OpenRouter wrote', async () => {
    const answer = {
      id: 'gen-1', object: 'chat.completion', created: 1, model: 'meta-llama/llama-3.3-70b-instruct', provider: 'Together',
      choices: [{ index: 0, logprobs: null, finish_reason: 'error', native_finish_reason: 'error', message: { role: 'assistant', content: 'Half an ans' }, error: choiceError }],
      usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
    };
    openrouter.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) });
    const error = (await client.chat.completions
      .create({ model: 'openrouter/meta-llama/llama-3.3-70b-instruct', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_generation_error');
    expect(error.message).toContain('Upstream idle timeout exceeded');
  });

  it("gives a stream's error event the message OpenRouter wrote, after the text that came first", async () => {
    const head = { id: 'gen-2', object: 'chat.completion.chunk', created: 1, model: 'meta-llama/llama-3.3-70b-instruct', provider: 'Together' };
    const body = [
      ': OPENROUTER PROCESSING\n\n',
      `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { role: 'assistant', content: 'Half an ans' }, finish_reason: null, native_finish_reason: null }] })}\n\n`,
      `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error', native_finish_reason: 'error', error: choiceError }] })}\n\n`,
      'data: [DONE]\n\n',
    ].join('');
    openrouter.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const stream = await client.chat.completions.create({ model: 'openrouter/meta-llama/llama-3.3-70b-instruct', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    const failure = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((err: unknown) => err);
    expect(text).toBe('Half an ans');
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).message).toContain('Upstream idle timeout exceeded');
  });
});

