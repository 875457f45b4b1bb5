import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Moonshot (Kimi) answers an account out of balance, or suspended for it, with 429 and the type
 * `exceeded_current_quota_error` ("Your account ... is suspended, please check your plan and billing details", its
 * chat API's error table; the body below is the one its support quotes on forum.moonshot.ai, "429 Insufficient
 * Balance"), beside its real rate limit `rate_limit_reached_error`. No wait mends the first: like OpenAI's 429
 * insufficient_quota, a key of the config that answers it is not retried, the request moves on at once to the
 * fallback and the key is paused. tollgate took it for a rate limit: paused the key a second and called it again.
 */

const JSON_TYPE = { 'content-type': 'application/json' };
const QUOTA = JSON.stringify({ error: { message: 'You exceeded your current quota, please check your plan and billing details', type: 'exceeded_current_quota_error' } });
const RATE_LIMIT = JSON.stringify({
  error: { message: 'Your account org-1234<ak-5678> request reached organization max RPM: 3, please try again after 1 seconds', type: 'rate_limit_reached_error' },
});

let kimi: ScriptedUpstream;
let healthy: ScriptedUpstream;
let tg: RunningGateway;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [kimi, healthy] = await Promise.all([startOpenAIUpstream(), startOpenAIUpstream()]);
  tg = await startGateway({
    providers: {
      moonshot: { base_url: `${kimi.url}/v1`, api_key: 'sk-kimi-broke-account' },
      healthy: { type: 'openai', base_url: `${healthy.url}/v1`, api_key: 'sk-healthy-account' },
    },
    settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 } } },
    routes: { kimi: { targets: [{ model: 'moonshot/kimi-k2.6' }], fallbacks: ['healthy/gpt-4o-mini'] } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([kimi?.close(), healthy?.close()]);
});
afterEach(() => {
  kimi.reset();
  healthy.reset();
});

/** Past the pause a rate limit without retry-after gets (1 s): an account that cannot pay still cannot. */
const pastRateLimitPause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1_300));

describe("Moonshot's 429 exceeded_current_quota_error", () => {
  it('moves on to the fallback at once, and later requests go to the fallback without calling that key again', async () => {
    kimi.setMode({ kind: 'raw', status: 429, headers: JSON_TYPE, body: QUOTA });
    const first = await tg.client.chat.completions.create({ model: 'kimi', messages }).withResponse();
    expect(first.data.choices[0]?.message.content).toBe('echo: hi');
    expect(first.response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(kimi.calls).toHaveLength(1);
    await pastRateLimitPause();
    const second = await tg.client.chat.completions.create({ model: 'kimi', messages }).withResponse();
    expect(second.response.headers.get('x-tollgate-provider')).toBe('healthy');
    expect(kimi.calls).toHaveLength(1);
    expect(healthy.calls).toHaveLength(2);
  });

  it('with nowhere else to go, reaches the client once, with the status and error Moonshot wrote', async () => {
    kimi.setMode({ kind: 'raw', status: 429, headers: JSON_TYPE, body: QUOTA });
    // A key paused by the test before has its cool-down; a provider of the same vendor with its own key is called.
    const alone = await startGateway({
      providers: { moonshot: { base_url: `${kimi.url}/v1`, api_key: 'sk-kimi-broke-account' } },
      settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 } } },
    });
    try {
      const failure = await alone.client.chat.completions.create({ model: 'moonshot/kimi-k2.6', messages }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(OpenAI.RateLimitError);
      const error = failure as InstanceType<typeof OpenAI.RateLimitError>;
      expect(error.error).toMatchObject({ type: 'exceeded_current_quota_error' });
      expect(error.headers?.get('x-tollgate-attempts')).toBe('1');
      expect(kimi.calls).toHaveLength(1);
    } finally {
      await alone.stop();
    }
  });
});

describe("Moonshot's 429 rate_limit_reached_error", () => {
  it('is still a rate limit: the key is called again once its pause is over', async () => {
    const limited = await startGateway({
      providers: { moonshot: { base_url: `${kimi.url}/v1`, api_key: 'sk-kimi-busy-account' } },
      settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 5, max_delay_ms: 10 } } },
    });
    try {
      kimi.enqueue({ kind: 'raw', status: 429, headers: { ...JSON_TYPE, 'retry-after': '0' }, body: RATE_LIMIT });
      const answer = await limited.client.chat.completions.create({ model: 'moonshot/kimi-k2.6', messages });
      expect(answer.choices[0]?.message.content).toBe('echo: hi');
      expect(kimi.calls).toHaveLength(2);
    } finally {
      await limited.stop();
    }
  });
});
