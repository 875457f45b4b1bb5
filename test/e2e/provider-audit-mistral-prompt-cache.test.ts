import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Mistral's prompt caching (docs.mistral.ai, "Prompt caching"): a chat request may carry `prompt_cache_key`, the field
// OpenAI's SDK also sends, and the answer counts the prompt tokens read from the cache in
// `usage.prompt_tokens_details.cached_tokens`. The scripted Mistral refused the key as a field outside its schema,
// which Mistral takes.

describe('Mistral prompt caching', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
    tg = await startGateway({ providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } } });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it('sends an OpenAI client’s prompt_cache_key to Mistral as written', async () => {
    const answer = await tg.client.chat.completions.create({
      model: 'mistral/mistral-large-latest',
      prompt_cache_key: 'support-session-42',
      messages: [{ role: 'user', content: 'My API request returns a 401 error.' }],
    });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(upstream.calls[0]?.body).toMatchObject({ prompt_cache_key: 'support-session-42' });
  });

  it('reports the cached prompt tokens to an Anthropic client as cache reads', async () => {
    upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 2048, completion_tokens: 12, total_tokens: 2060, prompt_tokens_details: { cached_tokens: 1984 } } });
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'mistral/mistral-large-latest', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.usage).toMatchObject({ input_tokens: 64, cache_read_input_tokens: 1984, output_tokens: 12 });
  });
});
