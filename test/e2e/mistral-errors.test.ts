import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Mistral answers errors with OpenAI's fields at the top level, not under `error`:
 * `{"object":"error","message":...,"type":...,"param":...,"code":...}`, and a request its schema refuses (a field
 * it does not know) gets a 422 whose `message` is pydantic's `{"detail":[{loc, msg, ...}]}` (vendor-refusals.ts).
 */

let mistral: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  mistral = await startOpenAIUpstream({ apiKey: 'mistral-upstream', vendor: 'mistral' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { mistral: { base_url: `${mistral.url}/v1`, api_key: 'mistral-upstream' } },
  });
  client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
});

afterAll(async () => {
  await tg?.stop();
  await mistral?.close();
});

beforeEach(() => mistral.reset());

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

describe('a Mistral error', () => {
  it('says which field Mistral refused (a 422 whose message is a list of problems)', async () => {
    const error = await client.chat.completions
      .create({ model: 'mistral/mistral-small-latest', messages, logit_bias: { '1234': -100 } })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.message).toContain('Extra inputs are not permitted');
    expect(apiError.message).toContain('logit_bias');
    expect(apiError.type).toBe('invalid_request_error');
    expect(mistral.calls[0]?.body.logit_bias).toEqual({ '1234': -100 });

    // An Anthropic client is told the same, in its own shape.
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    mistral.enqueue({
      kind: 'raw',
      status: 422,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        object: 'error',
        message: { detail: [{ type: 'less_than_equal', loc: ['body', 'temperature'], msg: 'Input should be less than or equal to 1.5', input: 2, ctx: { le: 1.5 } }] },
        type: 'invalid_request_error',
        param: null,
        code: null,
      }),
    });
    const refused = await anthropic.messages
      .create({ model: 'mistral/mistral-small-latest', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.APIError);
    expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(422);
    expect((refused as InstanceType<typeof Anthropic.APIError>).message).toContain('Input should be less than or equal to 1.5');
  });

  it("keeps the type and code Mistral gives beside a plain message", async () => {
    mistral.enqueue({
      kind: 'raw',
      status: 400,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ object: 'error', message: 'Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.', type: 'invalid_function_call', param: null, code: '3280' }),
    });
    const error = await client.chat.completions.create({ model: 'mistral/mistral-small-latest', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.message).toBe('400 Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.');
    expect(apiError.type).toBe('invalid_function_call');
    expect(apiError.code).toBe('3280');
  });
});
