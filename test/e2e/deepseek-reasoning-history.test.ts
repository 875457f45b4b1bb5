import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * DeepSeek's thinking mode wants an assistant turn's reasoning back with its tool calls, and answers 400 without
 * it (api-docs.deepseek.com/guides/thinking_mode#tool-calls). An Anthropic client's tool loop (Claude Code) sends
 * its thinking as thinking blocks: on /anthropic they reach DeepSeek as reasoning_content, and reach no other
 * OpenAI-format vendor at all.
 */

let deepseek: ScriptedUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let anthropic: Anthropic;

beforeAll(async () => {
  deepseek = await startOpenAIUpstream({ apiKey: 'sk-deepseek', vendor: 'deepseek' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      deepseek: { base_url: `${deepseek.url}/v1`, api_key: 'sk-deepseek' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
    },
  });
  anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});
afterAll(async () => {
  await tg?.stop();
  await deepseek?.close();
  await openai?.close();
});
beforeEach(() => {
  deepseek.reset();
  openai.reset();
});

const lookup: Anthropic.Tool = { name: 'lookup', description: 'Looks things up', input_schema: { type: 'object', properties: { query: { type: 'string' } } } };

/** A tool loop's second request: the model thought, called a tool, and the tool answered. */
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

describe('an Anthropic tool loop with thinking, on DeepSeek', () => {
  it("sends the turn's thinking back as reasoning_content, so DeepSeek takes the next turn", async () => {
    const message = await anthropic.messages.create({ model: 'deepseek/deepseek-v4-pro', max_tokens: 2000, tools: [lookup], messages: continued('I should look the weather up.') });
    expect(message.stop_reason).toBe('end_turn');
    const assistant = (deepseek.calls[0]?.body.messages as Array<Record<string, unknown>>).find((m) => m.role === 'assistant');
    expect(assistant).toMatchObject({ reasoning_content: 'I should look the weather up.', tool_calls: [{ id: 'toolu_01' }] });
  });

  it('gives a tool-call turn that had no thinking block an empty reasoning_content', async () => {
    await anthropic.messages.create({ model: 'deepseek/deepseek-v4-pro', max_tokens: 2000, tools: [lookup], messages: continued(null) });
    expect(deepseek.calls).toHaveLength(1);
    const assistant = (deepseek.calls[0]?.body.messages as Array<Record<string, unknown>>).find((m) => m.role === 'assistant');
    expect(assistant?.reasoning_content).toBe('');
  });

  it('sends no reasoning_content to another OpenAI-format vendor', async () => {
    await anthropic.messages.create({ model: 'openai/gpt-4o', max_tokens: 2000, tools: [lookup], messages: continued('I should look the weather up.') });
    const assistant = (openai.calls[0]?.body.messages as Array<Record<string, unknown>>).find((m) => m.role === 'assistant');
    expect(assistant).not.toHaveProperty('reasoning_content');
    expect(assistant).toMatchObject({ tool_calls: [{ id: 'toolu_01' }] });
  });
});

describe("DeepSeek's context cache, on /anthropic", () => {
  // DeepSeek reports its cache hits in usage.prompt_cache_hit_tokens and its misses in prompt_cache_miss_tokens,
  // prompt_tokens being their sum (api-docs.deepseek.com, Create Chat Completion; guides/kv_cache), not in OpenAI's
  // prompt_tokens_details.cached_tokens.
  const usage = { prompt_tokens: 2006, completion_tokens: 3, total_tokens: 2009, prompt_cache_hit_tokens: 1920, prompt_cache_miss_tokens: 86 };

  it('shows the cache hits as cache_read_input_tokens, whole and streamed, out of input_tokens', async () => {
    deepseek.enqueue({ kind: 'usage', usage }, { kind: 'usage', usage });
    const ask = { model: 'deepseek/deepseek-chat', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hello again' }] };
    const whole = await anthropic.messages.create(ask);
    const streamed = await anthropic.messages.stream(ask).finalMessage();
    for (const message of [whole, streamed]) {
      expect(message.usage).toMatchObject({ input_tokens: 86, cache_read_input_tokens: 1920, cache_creation_input_tokens: 0, output_tokens: 3 });
    }
  });
});
