// Cohere ends a generation that broke off with `finish_reason` ERROR or TIMEOUT, and its stream's message-end still
// carries the usage it bills for that generation. The stream fails (a 502 the client sees in the stream), but the
// usage Cohere reported was dropped with it: the gateway charged its own estimate instead (the whole prompt, system
// message included, which Cohere does not bill), so spend and budgets no longer matched Cohere's bill.
import { calcPrice } from '@pydantic/genai-prices';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { countWords } from '../upstream/openai-request.js';
import { splitTokens } from '../upstream/openai-responses.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';

const MODEL = 'cohere/command-a-03-2025';
const SYSTEM = 'You are a careful assistant for the operators of an LLM gateway who answer in full sentences with examples and caveats.';
const USER = 'tell me about the gateway in several words please';

let upstream: CohereUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startCohereUpstream({ apiKey: 'co-upstream-key' });
  tg = await startGateway({
    providers: { cohere: { base_url: `${upstream.url}/v2`, api_key: 'co-upstream-key' } },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

async function lastLog(matches: (entry: any) => boolean): Promise<any> {
  // The log entry of a request without a gateway key is written after the answer; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as any;
    if (body.data?.[0] && matches(body.data[0])) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe('a Cohere stream whose generation breaks off', () => {
  it.each(['ERROR', 'TIMEOUT'] as const)('charges the usage Cohere reported with finish_reason %s, not an estimate', async (reason) => {
    upstream.setBrokenGeneration({ reason, error: 'the model could not finish' });
    const stream = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: USER }],
      stream: true,
    });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toContain(`finish_reason ${reason}`);
    expect(text.startsWith('echo:')).toBe(true);
    // The scripted upstream bills the user turn's words (3 more per message), not the system message.
    const billedInput = countWords(USER) + 3;
    const log = await lastLog((entry) => entry.status === 502 && entry.error_code === 'upstream_generation_error');
    expect(log.prompt_tokens).toBe(billedInput);
    // Half the echo's tokens were generated (more only should the gateway count more in the text the client got).
    expect(log.completion_tokens).toBeGreaterThanOrEqual(Math.ceil(splitTokens(`echo: ${USER}`).length / 2));
    const expected = calcPrice({ input_tokens: billedInput, output_tokens: log.completion_tokens }, 'command-a-03-2025', { providerId: 'cohere' })?.total_price;
    expect(Math.abs(log.cost_usd - (expected ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });
});
