import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

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

describe('a blocked /genai stream passed through', () => {
  let gemini: GeminiUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    gemini = await startGeminiUpstream({ apiKey: 'gk' });
    tg = await startGateway({
      providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gk' } },
      guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'output' }] },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await gemini?.close();
  });

  it('ends the candidate with finishReason SAFETY and the usage of the upstream\'s last event', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai` } });
    const stream = await ai.models.generateContentStream({
      model: 'gemini/gemini-2.5-flash',
      // The upstream sends the answer in three events: the card is seen whole, and blocked, before the last one.
      contents: `pay with 4111 1111 1111 1111 ${'and then a great many more words follow here '.repeat(4)}`,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1);
    expect(last?.candidates?.[0]?.finishReason).toBe('SAFETY');
    expect(JSON.stringify(chunks)).not.toContain('1111');
    const sent = gemini.streamed.at(-1)?.at(-1) as { usageMetadata: { candidatesTokenCount: number } };
    expect(sent.usageMetadata.candidatesTokenCount).toBeGreaterThan(0);
    expect(last?.usageMetadata?.candidatesTokenCount).toBe(sent.usageMetadata.candidatesTokenCount);
  });
});
