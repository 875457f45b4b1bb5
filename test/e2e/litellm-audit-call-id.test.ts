import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// LiteLLM's clients find a request in their logs by `x-litellm-call-id`, which the LiteLLM proxy sends on its errors
// too. On /litellm every answer carries it, a request the route refuses before the pipeline (bad JSON, a bad model
// name or cache control, mock_response) as well as one the pipeline answers.

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-openai' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

async function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

function expectCallId(headers: Headers): void {
  expect(headers.get('x-request-id')).toBeTruthy();
  expect(headers.get('x-litellm-call-id')).toBe(headers.get('x-request-id'));
}

describe('x-litellm-call-id on /litellm refusals', () => {
  it('comes with the 400s the route gives before the pipeline, through the openai SDK', async () => {
    const litellm = new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const bodies: Array<[Record<string, unknown>, string]> = [
      [{ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], mock_response: 'canned' }, 'mock_response'],
      [{ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], cache: { ttl: 'an hour' } }, 'cache.ttl'],
      [{ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], fallbacks: 'openai/gpt-4o' }, 'fallbacks'],
      [{ model: 'together_ai/модель', messages: [{ role: 'user', content: 'x' }] }, 'model'],
      [{ model: 'openai/gpt-4o-mini', messages: [] }, 'messages'],
    ];
    for (const [body, param] of bodies) {
      const error = await refusal(litellm.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming));
      expect(error.status).toBe(400);
      expect(error.param).toBe(param);
      expectCallId(error.headers as Headers);
    }
    const embeddings = await refusal(litellm.embeddings.create({ input: 'x' } as unknown as OpenAI.EmbeddingCreateParams));
    expect(embeddings.status).toBe(400);
    expectCallId(embeddings.headers as Headers);
    expect(upstream.calls).toHaveLength(0);
  });

  it('comes with a body that is not JSON, under /litellm and /litellm/v1', async () => {
    for (const path of ['/litellm/chat/completions', '/litellm/v1/chat/completions', '/litellm/embeddings']) {
      const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
      expectCallId(response.headers);
    }
  });

  it('is not sent on /v1, which is OpenAI API', async () => {
    const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-litellm-call-id')).toBeNull();
  });
});
