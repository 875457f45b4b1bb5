// A reasoning item tollgate wrote for Claude carries Claude's signed thinking blocks in its encrypted_content (see
// translated-reasoning.ts), read back when the client sends the item again. The client writes that text: one that
// decodes to a few hundred thousand blocks (a few hundred KB of request) overflowed the stack while the blocks were
// gathered, and every such request was a 500, whatever its model (the translation is read for OpenAI's targets too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let anthropic: AnthropicUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await openai?.close();
});

/** A conversation handing back a reasoning item whose encrypted_content holds `count` (empty) thinking blocks. */
function withBlocks(count: number): OpenAI.Responses.ResponseInputItem[] {
  const blocks = Buffer.from(JSON.stringify(Array.from({ length: count }, () => ({})))).toString('base64url');
  return [
    { role: 'user', content: 'hi' },
    { type: 'reasoning', id: 'rs_tg_0123456789abcdef', summary: [], encrypted_content: `tg_anthropic_thinking.${blocks}` },
    { role: 'assistant', content: 'hello' },
    { role: 'user', content: 'again' },
  ];
}

describe('a reasoning item whose encrypted_content holds very many thinking blocks', () => {
  it.each([['anthropic/claude-sonnet-4-5'], ['openai/gpt-5']])('to %s is answered, not a 500', async (model) => {
    const response = await tg.client.responses.create({ model, input: withBlocks(200_000), store: false });
    expect(response.status).toBe('completed');
    expect(response.output_text).toContain('again');
  }, 60_000);
});
