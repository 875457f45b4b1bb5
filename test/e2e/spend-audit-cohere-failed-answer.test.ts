// Cohere ends a generation that broke off with `finish_reason` ERROR or TIMEOUT (docs.cohere.com, v2 chat: the
// response's finish_reason is one of COMPLETE, STOP_SEQUENCE, MAX_TOKENS, TOOL_CALL, ERROR, TIMEOUT), and a whole
// (non-streamed) answer still carries the `usage` Cohere bills for what it generated. The gateway turns such an answer
// into a 502 (the answer is incomplete), but dropped its usage with it: the request was charged an estimate of its own
// (or nothing), not what Cohere billed. The usage of the attempt that ends the request is charged as reported.
import { calcPrice } from '@pydantic/genai-prices';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { countWords } from '../upstream/openai-request.js';
import { splitTokens } from '../upstream/openai-responses.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';

const MODEL = 'command-a-03-2025';
const SYSTEM = 'You are a careful assistant for the operators of an LLM gateway who answer in full sentences with examples and caveats.';
const USER = 'tell me about the gateway in several words please';

let upstream: CohereUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

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

/** The key's one logged request, once written. */
async function loggedRequest(keyId: string): Promise<Record<string, any>> {
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; ) {
    const logged = (await api('GET', `/api/logs?key_id=${keyId}`)).body.data as Array<Record<string, any>>;
    if (logged.length > 0) return logged[0] as Record<string, any>;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe('a whole Cohere answer whose generation broke off', () => {
  it.each(['ERROR', 'TIMEOUT'] as const)('is a 502 charged the usage Cohere billed with finish_reason %s', async (reason) => {
    upstream.setBrokenGeneration({ reason });
    const key = await createKey({ name: `cohere-${reason.toLowerCase()}` });
    const error = await clientFor(key.key)
      .chat.completions.create({ model: `cohere/${MODEL}`, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: USER }] })
      .then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((error as Error).message).toContain(`finish_reason ${reason}`);

    // What the scripted upstream billed: the user turn's words (3 more per message; the system message is free) and
    // half the echo's tokens.
    const billedInput = countWords(USER) + 3;
    const billedOutput = Math.ceil(splitTokens(`echo: ${USER}`).length / 2);
    const log = await loggedRequest(key.id);
    expect(log.status).toBe(502);
    expect(log.prompt_tokens).toBe(billedInput);
    expect(log.completion_tokens).toBe(billedOutput);
    expect(log.estimated).toBe(false);
    const expected = calcPrice({ input_tokens: billedInput, output_tokens: billedOutput }, MODEL, { providerId: 'cohere' })?.total_price as number;
    expect(expected).toBeGreaterThan(0);
    expect(log.cost_usd).toBeCloseTo(expected, 9);
    expect((await api('GET', `/api/keys/${key.id}`)).body.spend).toBeCloseTo(expected, 9);
  });
});
