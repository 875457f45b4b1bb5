import { ApiError, GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * Gemini says how long to wait after a 429 RESOURCE_EXHAUSTED in its error body (a RetryInfo detail's `retryDelay`),
 * not in a retry-after header. The gateway's own retries honour it as they honour an Anthropic 429's retry-after:
 * the target is paused that long, a retry waits it out, and none starts when the wait outlasts the request's deadline.
 */

let gemini: GeminiUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  tg = await startGateway({
    // Three attempts; a 10 s deadline, so a 37 s wait is past it and a 2 s wait is not.
    settings: { routing: { retry: { max_attempts: 3, initial_delay_ms: 10, max_delay_ms: 50, deadline_ms: 10_000 }, breaker: { enabled: false } } },
    providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' } },
  });
  // The SDK's own retries are off: only the gateway's are under test.
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000, retryOptions: { attempts: 1 } } });
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
});

beforeEach(() => gemini.reset());

/** A generateContent call's error (it is expected to fail) and how long it took. */
async function failedCall(model: string): Promise<{ error: ApiError; ms: number }> {
  const started = performance.now();
  const error = await ai.models.generateContent({ model, contents: 'hi' }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ApiError);
  return { error: error as ApiError, ms: performance.now() - started };
}

describe('a Gemini 429 whose body asks for a wait (RetryInfo)', () => {
  it('is not retried when the wait outlasts the deadline, nor called again at once by the next request', async () => {
    gemini.setMode({ kind: 'error', status: 429, retryDelay: '37s' });
    const first = await failedCall('gemini-quota-long');
    expect(first.error.status).toBe(429);
    expect(gemini.calls).toHaveLength(1);
    expect(first.ms).toBeLessThan(3_000);

    // The target is paused for the 37 s: the next request makes the one call a paused target's first attempt may, no retries.
    const second = await failedCall('gemini-quota-long');
    expect(second.error.status).toBe(429);
    expect(gemini.calls).toHaveLength(2);
  });

  it('waits the asked delay before each retry when it fits the deadline', async () => {
    // Two seconds: more than the one second a 429 that names no wait pauses its target for.
    gemini.setMode({ kind: 'error', status: 429, retryDelay: '2s' });
    const { error, ms } = await failedCall('gemini-quota-short');
    expect(error.status).toBe(429);
    // Three attempts (max_attempts), the two retries each after the asked two seconds (the backoff alone is under 50 ms).
    expect(gemini.calls).toHaveLength(3);
    expect(ms).toBeGreaterThanOrEqual(3_900);
  }, 15_000);
});
