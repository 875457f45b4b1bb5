import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

// Tool inputs and tool results are the client's data, whatever their keys are called: a card number under a `data`,
// `url`, `name` or `id` key of a tool's input is text the model reads like any other, and input rules must reach it
// in the client's own body that goes upstream on the native paths.

const CARD = '4111 1111 1111 1111';
const EMAIL = 'jane.doe@example.com';

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gk' });
  tg = await startGateway({
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gk' },
    },
    guardrails: {
      rules: [
        { name: 'cards', kind: 'payment_card', action: 'redact', applies_to: 'input' },
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'input' },
      ],
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([anthropic?.close(), gemini?.close()]);
});

describe('tool payloads on the native paths', () => {
  it('redacts an Anthropic tool_use input and tool_result under any key', async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    await client.messages.create({
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 100,
      tools: [{ name: 'charge', description: 'Charges a card.', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'Charge the customer.' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'charge', input: { data: { card: CARD }, name: `Jane ${EMAIL}`, url: `mailto:${EMAIL}`, type: CARD } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: `charged ${CARD}` }] },
      ],
    });
    const sent = anthropic.calls.at(-1)?.raw ?? '';
    expect(sent).not.toContain(CARD);
    expect(sent).not.toContain(EMAIL);
    const body = JSON.parse(sent) as { messages: Array<{ content: unknown }> };
    expect(body.messages[1]!.content).toEqual([
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'charge',
        input: { data: { card: '[REDACTED:payment_card]' }, name: 'Jane [REDACTED:email]', url: 'mailto:[REDACTED:email]', type: '[REDACTED:payment_card]' },
      },
    ]);
  });

  it('redacts a Gemini functionCall args and functionResponse under any key', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai` } });
    await ai.models.generateContent({
      model: 'gemini/gemini-2.5-flash',
      contents: [
        { role: 'user', parts: [{ text: 'Look up the customer.' }] },
        { role: 'model', parts: [{ functionCall: { name: 'lookup', args: { id: CARD, data: { email: EMAIL } } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { name: `Jane ${EMAIL}`, data: { card: CARD } } } }] },
      ],
    });
    const sent = gemini.calls.at(-1)?.raw ?? '';
    expect(sent).not.toContain(CARD);
    expect(sent).not.toContain(EMAIL);
    const body = JSON.parse(sent) as { contents: Array<{ parts: unknown }> };
    expect(body.contents[1]!.parts).toEqual([{ functionCall: { name: 'lookup', args: { id: '[REDACTED:payment_card]', data: { email: '[REDACTED:email]' } } } }]);
    expect(body.contents[2]!.parts).toEqual([
      { functionResponse: { name: 'lookup', response: { name: 'Jane [REDACTED:email]', data: { card: '[REDACTED:payment_card]' } } } },
    ]);
  });
});
