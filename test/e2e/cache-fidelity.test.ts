import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** What a cache hit serves, against what the same request answered from the provider would be. */
describe('response cache, what a hit serves', () => {
  let upstream: ScriptedUpstream;
  let gateway: RunningGateway;
  const stored = new Set<string>();

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    gateway.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
  });

  afterAll(async () => {
    await gateway.stop();
    await upstream.close();
  });

  /** Until the answer of request `id` is in the cache (it is stored after the client got it). */
  async function storedAnswerOf(id: string | null): Promise<void> {
    for (let i = 0; i < 100 && !stored.has(id ?? ''); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stored.has(id ?? '')).toBe(true);
  }

  it('echoes the model name the client asked for now, not the one the storing request used', async () => {
    const messages = [{ role: 'user' as const, content: 'Which model name is echoed?' }];
    // A bare name resolves to the one provider serving it: the pipeline (and the cache key) see openai/gpt-4o-mini.
    const first = await gateway.client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(first.data.model).toBe('gpt-4o-mini');
    await storedAnswerOf(first.response.headers.get('x-request-id'));

    const whole = await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
    expect(whole.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(whole.data.model).toBe('openai/gpt-4o-mini');

    const models = new Set<string>();
    for await (const chunk of await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true })) models.add(chunk.model);
    expect([...models]).toEqual(['openai/gpt-4o-mini']);
  });

  it('keeps a streamed legacy function call (functions / function_call) for a later hit', async () => {
    // An OpenAI model answering the deprecated `functions` parameter streams `delta.function_call` pieces.
    const frame = (choice: Record<string, unknown>) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-fn', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4o-mini', choices: [{ index: 0, logprobs: null, ...choice }] })}\n\n`;
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        frame({ delta: { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '' } }, finish_reason: null }) +
        frame({ delta: { function_call: { arguments: '{"city":' } }, finish_reason: null }) +
        frame({ delta: { function_call: { arguments: '"Paris"}' } }, finish_reason: null }) +
        frame({ delta: {}, finish_reason: 'function_call' }) +
        'data: [DONE]\n\n',
    });
    const body = {
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'What is the weather in Paris?' }],
      functions: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    };
    const { data: live, response } = await gateway.client.chat.completions.create({ ...body, stream: true }).withResponse();
    let args = '';
    for await (const chunk of live) args += chunk.choices[0]?.delta.function_call?.arguments ?? '';
    expect(args).toBe('{"city":"Paris"}');
    await storedAnswerOf(response.headers.get('x-request-id'));

    const hit = await gateway.client.chat.completions.create(body).withResponse();
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(hit.data.choices[0]).toMatchObject({ finish_reason: 'function_call', message: { function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' } } });

    const replayed = { name: '', arguments: '' };
    for await (const chunk of await gateway.client.chat.completions.create({ ...body, stream: true })) {
      replayed.name += chunk.choices[0]?.delta.function_call?.name ?? '';
      replayed.arguments += chunk.choices[0]?.delta.function_call?.arguments ?? '';
    }
    expect(replayed).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
  });
});
