// Azure OpenAI's content filter, as its documentation shows it (concepts/content-filter): a prompt it blocks is a 400
// whose error carries `innererror` (ResponsibleAIPolicyViolation, the category that fired and its severity); an answer
// it blocks ends with finish_reason content_filter and the choice's content_filter_results. An OpenAI SDK client of
// tollgate reads all of it as Azure wrote it, streamed or not, on chat completions and on the Responses API.
import OpenAI, { type APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';

const AZURE_KEY = 'azure-upstream-key';
const MODEL = 'azure/gpt-4o-prod';
const hi = [{ role: 'user' as const, content: 'tell me a story' }];

let azure: AzureUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  azure = await startAzureUpstream({ apiKey: AZURE_KEY });
  tg = await startGateway({
    providers: { azure: { base_url: azure.url, api_key: AZURE_KEY, api_version: '2024-10-21' } },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await azure?.close();
});

beforeEach(() => azure.reset());

async function refusal(promise: Promise<unknown>): Promise<APIError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as APIError;
}

const promptBlocked = {
  code: 'content_filter',
  param: 'prompt',
  status: 400,
  innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { violence: { filtered: true, severity: 'high' }, jailbreak: { filtered: false, detected: false } } },
};

describe('a prompt the content filter blocks', () => {
  it('reaches a client that asked for a stream with the innererror, before any chunk', async () => {
    azure.enqueue({ kind: 'error', status: 400, code: 'content_filter' });
    const err = await refusal(tg.client.chat.completions.create({ model: MODEL, messages: hi, stream: true }));
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject(promptBlocked);
  });

  it('reaches a client of the Responses API with the innererror too', async () => {
    azure.enqueue({ kind: 'error', status: 400, code: 'content_filter' });
    const err = await refusal(tg.client.responses.create({ model: MODEL, input: 'tell me a story' }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('content_filter');
    expect(err.error).toMatchObject(promptBlocked);
  });
});

describe('an answer the content filter blocks', () => {
  const blocked = { filtered: true, severity: 'medium' };

  it('is a whole answer with finish_reason content_filter and the results that say why', async () => {
    azure.filterOutput('violence');
    const answer = await tg.client.chat.completions.create({ model: MODEL, messages: hi });
    const choice = answer.choices[0] as (typeof answer.choices)[number] & { content_filter_results?: unknown };
    expect(choice.finish_reason).toBe('content_filter');
    expect(choice.message.content ?? '').toBe('');
    expect(choice.content_filter_results).toMatchObject({ violence: blocked, hate: { filtered: false, severity: 'safe' } });
  });

  it('ends a stream with finish_reason content_filter and the results that say why, after what passed', async () => {
    azure.filterOutput('violence');
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: hi, stream: true });
    let text = '';
    const finishes: unknown[] = [];
    const results: unknown[] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices as Array<(typeof chunk.choices)[number] & { content_filter_results?: unknown }>) {
        text += choice.delta?.content ?? '';
        if (choice.finish_reason) finishes.push(choice.finish_reason);
        if (choice.content_filter_results !== undefined) results.push(choice.content_filter_results);
      }
    }
    expect(text).toBe('echo: tell me a story');
    expect(finishes).toEqual(['content_filter']);
    expect(results.at(-1)).toMatchObject({ violence: blocked });
  });
});
