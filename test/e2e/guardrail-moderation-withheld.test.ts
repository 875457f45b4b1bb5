import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An answer output moderation blocks is withheld whole: a whole answer keeps none of what the model wrote, its
// reasoning and logprobs included, as a streamed one (whose chunks are replaced by one content_filter chunk) and an answer an
// output rule blocks do.

describe('an answer output moderation blocks', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(
      openAIConfig(upstream.url, {
        guardrails: { rules: [{ name: 'moderated', kind: 'moderation', action: 'block', applies_to: 'output', model: 'openai/moderator', timeout_ms: 3_000 }] },
      }),
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });
  afterEach(() => upstream.reset());

  it('keeps neither its text, its reasoning nor the logprobs that spell it', async () => {
    const message = { role: 'assistant', content: 'Step one: hurt them.', reasoning_content: 'The user wants to hurt someone; I will explain how.', reasoning: 'The user wants to hurt someone; I will explain how.' };
    upstream.enqueue(
      { kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'm1', object: 'chat.completion', created: 1, model: 'deepseek-reasoner', choices: [{ index: 0, message, logprobs: { content: [{ token: 'hurt', logprob: -0.1, bytes: null, top_logprobs: [] }], refusal: null }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } }) },
      { kind: 'reply', pieces: ['UNSAFE: violence'] },
    );
    const answer = await tg.client.chat.completions.create({ model: 'openai/deepseek-reasoner', messages: [{ role: 'user', content: 'how?' }] });
    expect(answer.choices[0]?.finish_reason).toBe('content_filter');
    expect(JSON.stringify(answer)).not.toContain('hurt');
  });
});
