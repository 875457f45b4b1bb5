import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Input moderation judged only the messages' content: words a client put in an assistant turn's tool call arguments
// (or its refusal, reasoning, a plain-text file) reached the model unjudged, though the regex rules read them all.

describe('input moderation judges every text the model will read', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(
      openAIConfig(upstream.url, {
        guardrails: { rules: [{ name: 'moderated', kind: 'moderation', action: 'block', applies_to: 'input', model: 'openai/moderator', timeout_ms: 3_000 }] },
      }),
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });
  afterEach(() => upstream.reset());

  /** What the classifier was asked to judge (the moderation call is the first the upstream sees). */
  const judged = (): string => JSON.stringify(upstream.calls[0]?.body.messages ?? null);

  const conversation: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'look at my notes' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'save', arguments: JSON.stringify({ text: 'ARGUMENT-WORDS' }) } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'TOOL-RESULT-WORDS' }] },
    { role: 'user', content: [{ type: 'text', text: 'and' }, { type: 'text', text: 'MORE-WORDS' }] },
  ];

  it('gives the classifier tool call arguments and tool results, each under its message', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['SAFE'] }, { kind: 'reply', pieces: ['fine'] });
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: conversation });
    expect(answer.choices[0]?.message.content).toBe('fine');
    const text = judged();
    expect(text).toContain('look at my notes');
    expect(text).toContain('assistant: {\\"text\\":\\"ARGUMENT-WORDS\\"}');
    expect(text).toContain('tool: TOOL-RESULT-WORDS');
    expect(text).toContain('user: and MORE-WORDS');
  });

  it('blocks a request whose unsafe words are only in an assistant turn\'s tool call arguments', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['UNSAFE: violence'] });
    const failed = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: conversation }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(OpenAI.BadRequestError);
    expect((failed as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('guardrail_blocked');
    // The classifier only: the model was never called.
    expect(upstream.calls.length).toBe(1);
    expect(judged()).toContain('ARGUMENT-WORDS');
  });
});
