import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Moonshot's thinking Kimi models (kimi-k2.5 and kimi-k2.6 think by default) answer 400 "thinking is enabled but
 * reasoning_content is missing in assistant tool call message at index N" to a tool loop's next turn without the
 * turn's reasoning, and k2.5/k2.6 take an empty one as missing (vendor-refusals.ts). An Anthropic client's tool
 * loop (Claude Code) must get through.
 */

let moonshot: ScriptedUpstream;
let tg: RunningGateway;
let anthropic: Anthropic;

beforeAll(async () => {
  moonshot = await startOpenAIUpstream({ apiKey: 'sk-moonshot', vendor: 'moonshot' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { moonshot: { base_url: `${moonshot.url}/v1`, api_key: 'sk-moonshot' } },
  });
  anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});
afterAll(async () => {
  await tg?.stop();
  await moonshot?.close();
});
beforeEach(() => moonshot.reset());

const lookup: Anthropic.Tool = { name: 'lookup', description: 'Looks things up', input_schema: { type: 'object', properties: { query: { type: 'string' } } } };

/** A tool loop's second request: the model (perhaps) thought, called a tool, and the tool answered. */
function continued(thinking: string | null): Anthropic.MessageParam[] {
  return [
    { role: 'user', content: 'what is the weather in Paris?' },
    {
      role: 'assistant',
      content: [
        ...(thinking === null ? [] : [{ type: 'thinking' as const, thinking, signature: '' }]),
        { type: 'tool_use' as const, id: 'toolu_01', name: 'lookup', input: { query: 'weather Paris' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'sunny, 21 C' }] },
  ];
}

function assistantSent(): Record<string, unknown> | undefined {
  return (moonshot.calls[0]?.body.messages as Array<Record<string, unknown>>).find((m) => m.role === 'assistant');
}

describe('an Anthropic tool loop on Moonshot Kimi', () => {
  it("sends the turn's thinking back as reasoning_content, so Kimi takes the next turn", async () => {
    const message = await anthropic.messages.create({ model: 'moonshot/kimi-k2.6', max_tokens: 2000, tools: [lookup], messages: continued('I should look the weather up.') });
    expect(message.stop_reason).toBe('end_turn');
    expect(assistantSent()).toMatchObject({ reasoning_content: 'I should look the weather up.', tool_calls: [{ id: 'toolu_01' }] });
  });

  it('gets through when the tool-call turn had no thinking block, streamed too', async () => {
    const message = await anthropic.messages.create({ model: 'moonshot/kimi-k2.5', max_tokens: 2000, tools: [lookup], messages: continued(null) });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([{ type: 'text', text: 'echo: sunny, 21 C' }]);
    moonshot.reset();
    const streamed = await anthropic.messages.stream({ model: 'moonshot/kimi-k2.6', max_tokens: 2000, tools: [lookup], messages: continued(null) }).finalMessage();
    expect(streamed.stop_reason).toBe('end_turn');
    expect(typeof assistantSent()?.reasoning_content).toBe('string');
  });

  it('sends no reasoning_content to the older moonshot-v1 models, which do not think', async () => {
    const message = await anthropic.messages.create({ model: 'moonshot/moonshot-v1-8k', max_tokens: 2000, tools: [lookup], messages: continued('I should look the weather up.') });
    expect(message.stop_reason).toBe('end_turn');
    expect(assistantSent()).not.toHaveProperty('reasoning_content');
  });
});

describe("Kimi's context cache", () => {
  // Moonshot reports its cache hits as usage.cached_tokens, a part of prompt_tokens, at the top level of the usage
  // (the Kimi K2 models may add OpenAI's prompt_tokens_details.cached_tokens; an answer without it is read the same).
  const usage = { prompt_tokens: 2006, completion_tokens: 3, total_tokens: 2009, cached_tokens: 1920 };

  it('shows the cache hits as cache_read_input_tokens, whole and streamed, out of input_tokens', async () => {
    moonshot.enqueue({ kind: 'usage', usage }, { kind: 'usage', usage });
    const ask = { model: 'moonshot/kimi-k2.6', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hello again' }] };
    const whole = await anthropic.messages.create(ask);
    const streamed = await anthropic.messages.stream(ask).finalMessage();
    for (const message of [whole, streamed]) {
      expect(message.usage).toMatchObject({ input_tokens: 86, cache_read_input_tokens: 1920, cache_creation_input_tokens: 0, output_tokens: 3 });
    }
  });
});
