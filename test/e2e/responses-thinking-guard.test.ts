// Claude's signed thinking (thinking_blocks, a Responses reasoning item's encrypted_content) repeats its reasoning's
// text: when an output rule redacts or blocks something in that text, the signed copy is withheld, whole answer or
// stream, so what the rule caught never reaches the client (nor a later turn) through it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
let anthropic: AnthropicUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    providers: { anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' } },
    guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] },
  });
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
});
beforeEach(() => anthropic.reset());

const ask = { model: CLAUDE, reasoning: { effort: 'low' as const }, max_output_tokens: 4000 };

describe('output guardrails and Claude\'s signed thinking', () => {
  it.each([false, true])('a redaction in the thinking withholds its signed copy on /v1/responses (stream: %s)', async (stream) => {
    let output: any[];
    if (stream) {
      const events = tg.client.responses.stream({ ...ask, input: 'write to ada@example.com' });
      for await (const _event of events) void _event;
      output = (await events.finalResponse()).output;
    } else output = (await tg.client.responses.create({ ...ask, input: 'write to ada@example.com' })).output;
    const reasoning = output.find((item) => item.type === 'reasoning');
    expect(JSON.stringify(reasoning.summary)).not.toContain('ada@example.com');
    expect(reasoning.encrypted_content).toBeUndefined();
    // Without a finding the signed block comes along.
    const clean = await tg.client.responses.create({ ...ask, input: 'nothing to hide' });
    expect(clean.output.find((item) => item.type === 'reasoning')).toMatchObject({ encrypted_content: expect.stringMatching(/^tg_anthropic_thinking\./) });
  });

  it('and on /v1/chat/completions (thinking_blocks)', async () => {
    const answer = await tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'write to ada@example.com' }], reasoning_effort: 'low', max_completion_tokens: 4000 });
    expect(JSON.stringify(answer)).not.toContain('ada@example.com');
    expect((answer.choices[0]?.message as any).thinking_blocks).toBeUndefined();
  });
});
