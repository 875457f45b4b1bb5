import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

// A stream an output rule blocks still cost what the model generated: the client's own count of it (the usage its SDK
// reports) must be the upstream's, as a /v1 client's usage chunk is, not zero.

let rig: AnthropicRig;
beforeAll(async () => {
  rig = await startAnthropicRig({ guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'output' }] } });
});
afterAll(async () => rig?.stop());

/** The usage of the upstream's last message_delta. */
function upstreamUsage(frames: readonly string[]): Record<string, unknown> {
  const delta = frames.filter((frame) => frame.startsWith('event: message_delta')).at(-1) ?? '';
  return (JSON.parse(delta.slice(delta.indexOf('data: ') + 6)) as { usage: Record<string, unknown> }).usage;
}

describe('a blocked /anthropic stream passed through', () => {
  it('ends with stop_reason refusal and the usage the upstream reported', async () => {
    const stream = rig.client.messages.stream({
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 200,
      messages: [{ role: 'user', content: `a long enough preamble to go out first, then pay with 4111 1111 1111 1111 and more words after it` }],
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('refusal');
    expect(JSON.stringify(message)).not.toContain('1111');
    const usage = upstreamUsage(rig.lastSent().frames as string[]);
    expect(usage.output_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBe(usage.output_tokens);
  });
});
