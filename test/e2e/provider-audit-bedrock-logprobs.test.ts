// Bedrock's Converse returns no log probabilities. A chat request asking for them got an answer with `logprobs: null`
// and no sign the field was dropped (Anthropic's adapter answers the same request with a 400 naming it); the
// Responses API, which promises none when a provider gives none, still answers.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const MODEL = 'bedrock/amazon.nova-pro-v1:0';

let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { bedrock: { base_url: upstream.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

describe('log probabilities asked of a Bedrock model', () => {
  for (const stream of [false, true]) {
    it(`are a 400 naming logprobs on chat completions, before any call to Bedrock (stream: ${stream})`, async () => {
      const asked = tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], logprobs: true, top_logprobs: 2, stream } as never);
      const error = await (asked as Promise<unknown>).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('logprobs');
      expect(upstream.calls.length).toBe(0);
    });
  }

  it('logprobs: false is no request for them, and is answered', async () => {
    const answer = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], logprobs: false });
    expect(answer.choices[0]?.message.content).toBe('echo: hi');
  });

  it("are none on /v1/responses, which answers without them (the include is OpenAI's to honour)", async () => {
    const response = await tg.client.responses.create({ model: MODEL, input: 'hi', include: ['message.output_text.logprobs'] });
    expect(response.output_text).toBe('echo: hi');
    const message = response.output.find((item) => item.type === 'message');
    const part = message?.type === 'message' ? message.content[0] : undefined;
    expect(part?.type === 'output_text' ? part.logprobs : null).toEqual([]);
    expect(upstream.calls.length).toBe(1);
  });
});
