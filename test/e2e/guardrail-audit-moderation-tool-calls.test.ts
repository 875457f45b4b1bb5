import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Output moderation judged only an answer's `content`: an answer that is a tool call (content null, the words in its
// arguments) had nothing to judge, so no classifier was asked and a blocking rule let it through, tool call and all.

const ARGS = JSON.stringify({ path: 'plan.txt', text: 'Step one: hurt them.' });
const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'write_file', parameters: { type: 'object' } } }];
const chunk = (delta: unknown, finish: string | null = null) => ({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
const sse = (events: readonly unknown[]) => `${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('')}data: [DONE]\n\n`;

describe('output moderation and an answer that is a tool call', () => {
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

  /** What the classifier was asked to judge (the moderation call is the second the upstream sees). */
  const judged = (): string => JSON.stringify(upstream.calls[1]?.body.messages ?? null);

  it('judges a whole answer’s tool call arguments and withholds the call when blocked', async () => {
    const message = { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'write_file', arguments: ARGS } }] };
    upstream.enqueue(
      { kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'm1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } }) },
      { kind: 'reply', pieces: ['UNSAFE: violence'] },
    );
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', tools, messages: [{ role: 'user', content: 'write the plan' }] });
    expect(judged()).toContain('hurt them');
    expect(answer.choices[0]?.finish_reason).toBe('content_filter');
    expect(answer.choices[0]?.message.tool_calls).toBeUndefined();
    expect(JSON.stringify(answer)).not.toContain('hurt');
  });

  it('judges a streamed tool call’s arguments, joined from their fragments', async () => {
    const pieces = ['{"path":"plan.txt","text":"Step one: hu', 'rt them."}'];
    const events = [
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'write_file', arguments: '' } }] }),
      ...pieces.map((piece) => chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
      chunk({}, 'tool_calls'),
    ];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) }, { kind: 'reply', pieces: ['UNSAFE: violence'] });
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, tools, messages: [{ role: 'user', content: 'write the plan' }] });
    let args = '';
    let finish: string | null = null;
    for await (const part of stream) {
      for (const call of part.choices[0]?.delta.tool_calls ?? []) args += call.function?.arguments ?? '';
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(judged()).toContain('Step one: hurt them.');
    expect(finish).toBe('content_filter');
    expect(args).toBe('');
  });
});
