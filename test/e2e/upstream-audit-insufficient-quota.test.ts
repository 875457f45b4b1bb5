import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// OpenAI answers an account without credit (or past its spend limit) with a 429 whose error says insufficient_quota:
// "You exceeded your current quota, please check your plan and billing details". It is the status of a rate limit,
// but no wait mends it (OpenAI: retrying billing and quota errors does not restore access). tollgate treated it as a
// rate limit: the target was paused about a second and retried, in the request and by the next requests.

const QUOTA = {
  message: 'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
  type: 'insufficient_quota',
  param: null,
  code: 'insufficient_quota',
};
const QUOTA_ANSWER = { kind: 'raw', status: 429, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: QUOTA }) } as const;

let broke: ScriptedUpstream;
let healthy: ScriptedUpstream;
let tg: RunningGateway | null = null;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [broke, healthy] = await Promise.all([startOpenAIUpstream(), startOpenAIUpstream()]);
});
afterAll(async () => {
  await Promise.all([broke.close(), healthy.close()]);
});
afterEach(async () => {
  await tg?.stop();
  tg = null;
  broke.reset();
  healthy.reset();
});

async function start(): Promise<RunningGateway> {
  tg = await startGateway({
    providers: {
      broke: { type: 'openai', base_url: `${broke.url}/v1`, api_key: 'sk-broke-account' },
      healthy: { type: 'openai', base_url: `${healthy.url}/v1`, api_key: 'sk-healthy-account' },
    },
    settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 } } },
    routes: { chat: { targets: [{ model: 'broke/gpt-4o-mini' }], fallbacks: ['healthy/gpt-4o-mini'] } },
  });
  return tg;
}

describe("an upstream 429 insufficient_quota (the account's credit or spend limit is used up)", () => {
  it('is not retried: with nowhere else to go the client gets the 429 and its error as the upstream wrote it', async () => {
    const gateway = await start();
    broke.setMode(QUOTA_ANSWER);
    const startedAt = Date.now();
    const failure = await gateway.client.chat.completions.create({ model: 'broke/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.RateLimitError);
    const error = failure as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.status).toBe(429);
    expect(error.error).toEqual(QUOTA);
    expect(error.code).toBe('insufficient_quota');
    expect(error.headers?.get('x-tollgate-attempts')).toBe('1');
    expect(broke.calls).toHaveLength(1);
    // No rate-limit pause waited out (a second each, before).
    expect(Date.now() - startedAt).toBeLessThan(900);
    // The next request, with that target kept out of later requests' way, still reaches it (there is nothing else)
    // and gets its answer, not tollgate's 503.
    const again = await gateway.client.chat.completions.create({ model: 'broke/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(again).toBeInstanceOf(OpenAI.RateLimitError);
    expect((again as InstanceType<typeof OpenAI.RateLimitError>).error).toEqual(QUOTA);
    expect(broke.calls).toHaveLength(2);
  });

  it('moves on to the fallback at once, and later requests go to the fallback without calling that target again', async () => {
    const gateway = await start();
    broke.setMode(QUOTA_ANSWER);
    const first = await gateway.client.chat.completions.create({ model: 'chat', messages }).withResponse();
    expect(first.data.choices[0]?.message.content).toBe('echo: hi');
    expect(first.response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(broke.calls).toHaveLength(1);
    // Past the pause a rate limit without retry-after gets (1 s): a used-up quota is still used up.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const second = await gateway.client.chat.completions.create({ model: 'chat', messages }).withResponse();
    expect(second.response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(broke.calls).toHaveLength(1);
    expect(healthy.calls).toHaveLength(2);
  });
});
