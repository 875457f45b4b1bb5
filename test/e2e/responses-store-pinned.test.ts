// A Response OpenAI kept is continued (previous_response_id) and read (GET) with the provider key that made it, and
// only by a target of that provider: with two keys (two accounts, say) and a route mixing Claude and OpenAI, any
// other choice would ask an account that does not have it, or a provider that cannot read it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let anthropic: AnthropicUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  // No key check: the test reads which of the two keys each call carried.
  openai = await startOpenAIUpstream({ apiKey: null });
  tg = await startGateway({
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      openai: { base_url: `${openai.url}/v1`, keys: [{ value: 'sk-account-one', weight: 1 }, { value: 'sk-account-two', weight: 1 }] },
    },
    routes: { mixed: { targets: [{ model: 'anthropic/claude-sonnet-4-5', weight: 1 }, { model: 'openai/gpt-5', weight: 1 }] } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await openai?.close();
});

describe('a Response OpenAI kept', () => {
  it('is continued and read with the key that made it, through a route mixing providers', async () => {
    for (let i = 0; i < 8; i++) {
      const first = await tg.client.responses.create({ model: 'openai/gpt-5', input: `turn ${i}` });
      const made = openai.calls.at(-1)?.headers.authorization;
      const claudeCalls = anthropic.calls.length;
      // Twice, each by another way (the route, the model): the balancer takes turns between keys and targets.
      for (const model of ['mixed', 'mixed', 'openai/gpt-5']) {
        const next = await tg.client.responses.create({ model, input: 'go on', previous_response_id: first.id });
        expect(next.status).toBe('completed');
        expect(anthropic.calls).toHaveLength(claudeCalls);
        expect(openai.calls.at(-1)?.body.previous_response_id).toBe(first.id);
        expect(openai.calls.at(-1)?.headers.authorization).toBe(made);
      }
      await tg.client.responses.retrieve(first.id);
      expect([openai.calls.at(-1)?.method, openai.calls.at(-1)?.headers.authorization]).toEqual(['GET', made]);
    }
    // Both keys were used to make Responses (so the test could tell a wrong one).
    const keys = new Set(openai.calls.filter((call) => call.method === 'POST').map((call) => call.headers.authorization));
    expect(keys.size).toBe(2);
  });

  it('to a model of another provider alone is a 400 saying where it is kept', async () => {
    const first = await tg.client.responses.create({ model: 'openai/gpt-5', input: 'kept' });
    const error = await tg.client.responses.create({ model: 'anthropic/claude-sonnet-4-5', input: 'go on', previous_response_id: first.id }).then(() => null, (err: unknown) => err as { status: number; param: string; message: string });
    expect(error).toMatchObject({ status: 400, param: 'previous_response_id' });
    expect(error?.message).toContain("the provider 'openai' keeps itself");
  });
});
