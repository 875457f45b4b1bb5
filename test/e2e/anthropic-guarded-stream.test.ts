import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

/**
 * An output guardrail on a streamed /anthropic answer from an Anthropic provider (native pass-through). The guard
 * rebuilds every chunk, so the answer is written from tollgate's chunks; a read that made no chunk (a content block's
 * start) used to be taken for the end of the text, and every text after it was lost: a 200 with no content.
 */
let rig: AnthropicRig;

beforeAll(async () => {
  rig = await startAnthropicRig({ guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact' }] } });
});
afterAll(async () => rig.stop());

const model = 'anthropic/claude-sonnet-4-5';

describe('a guarded /anthropic stream', () => {
  it('streams the whole text, with the redaction made', async () => {
    const stream = rig.client.messages.stream({ model, max_tokens: 200, messages: [{ role: 'user', content: 'mail jane@example.com please' }] });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: expect.stringMatching(/^echo: mail \[REDACTED:email\] please$/) }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(JSON.stringify(message)).not.toContain('jane@example.com');
  });

  it('streams a text with nothing to redact whole, thinking included', async () => {
    const stream = rig.client.messages.stream({ model, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'nothing personal here' }] });
    const message = await stream.finalMessage();
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content.at(-1)).toMatchObject({ type: 'text', text: 'echo: nothing personal here' });
  });
});

describe('output rules on /anthropic answers with thinking', () => {
  let out: AnthropicRig;
  beforeAll(async () => {
    // Output only: the prompt reaches the model whole, so its thinking and answer repeat the address.
    out = await startAnthropicRig({ guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] } });
  });
  afterAll(async () => out.stop());
  const thinking = { type: 'enabled' as const, budget_tokens: 1024 };

  it('redacts the thinking too, whole and streamed', async () => {
    const params = { model, max_tokens: 2000, thinking, messages: [{ role: 'user' as const, content: 'mail jane@example.com please' }] };
    const whole = await out.client.messages.create(params);
    expect(JSON.stringify(out.lastSent().message)).toContain('jane@example.com');
    expect(whole.content).toEqual([
      { type: 'thinking', thinking: 'thinking about: mail [REDACTED:email] please', signature: '' },
      { type: 'text', text: 'echo: mail [REDACTED:email] please' },
    ]);
    const streamed = await out.client.messages.stream(params).finalMessage();
    expect(streamed.content.map((block) => (block.type === 'thinking' ? block.thinking : block.type === 'text' ? block.text : ''))).toEqual([
      'thinking about: mail [REDACTED:email] please',
      'echo: mail [REDACTED:email] please',
    ]);
    expect(JSON.stringify(streamed)).not.toContain('jane@example.com');
  });

  it('leaves a whole answer nothing was found in as the upstream sent it: the thinking keeps its signature', async () => {
    const whole = await out.client.messages.create({ model, max_tokens: 2000, thinking, messages: [{ role: 'user', content: 'nothing personal here' }] });
    const sent = out.lastSent().message as { content: unknown[]; usage: unknown };
    expect(whole.content).toEqual(sent.content);
    expect(whole.content[0]).toMatchObject({ type: 'thinking', signature: expect.stringMatching(/^sig_/) });
    expect(whole.usage).toEqual(sent.usage);
  });
});
