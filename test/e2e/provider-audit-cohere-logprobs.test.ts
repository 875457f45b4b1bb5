import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { cohereLogprobItem, startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { splitTokens } from '../upstream/openai-responses.js';

/**
 * Cohere's Chat API v2 takes `logprobs: true` and answers each generated text chunk's log probabilities (a whole answer's
 * top-level `logprobs`, a list of LogprobItem `{text, token_ids, logprobs}`; in a stream, each content-delta event's own
 * `logprobs`), with no alternatives. An OpenAI client's `logprobs: true` was dropped: the answer said `logprobs: null`
 * with no sign anything was lost. Now it reaches Cohere and the chunks come back as OpenAI's `logprobs.content` (whole
 * and streamed, and on the Responses API's output_text); `top_logprobs` above 0, which Cohere cannot give, is a 400
 * naming it on chat completions (answered without alternatives on the Responses API, which promises none).
 */

let cohere: CohereUpstream;
let tg: RunningGateway;
const MODEL = 'cohere/command-a-03-2025';
const QUESTION = 'tell me something wonderful';
const ANSWER = `echo: ${QUESTION}`;

/** What the gateway should answer for the scripted chunks of ANSWER: one entry per chunk, its log probabilities summed. */
function expectedContent(): Array<{ token: string; logprob: number; bytes: number[]; top_logprobs: [] }> {
  return splitTokens(ANSWER).map((token, at) => {
    const item = cohereLogprobItem(token, at);
    return { token, logprob: item.logprobs.reduce((sum, value) => sum + value, 0), bytes: [...Buffer.from(token, 'utf8')], top_logprobs: [] };
  });
}

beforeAll(async () => {
  cohere = await startCohereUpstream({ apiKey: 'co-upstream-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-upstream-key' } },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await cohere?.close();
});
beforeEach(() => cohere.reset());

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: QUESTION }];

function closeTo(actual: Array<{ token: string; logprob: number; bytes: number[] | null; top_logprobs: unknown[] }>): void {
  const expected = expectedContent();
  expect(actual.map((entry) => entry.token)).toEqual(expected.map((entry) => entry.token));
  expect(actual.map((entry) => entry.bytes)).toEqual(expected.map((entry) => entry.bytes));
  expect(actual.map((entry) => entry.top_logprobs)).toEqual(expected.map(() => []));
  actual.forEach((entry, i) => expect(entry.logprob).toBeCloseTo(expected[i]?.logprob as number, 10));
}

describe('logprobs to Cohere on chat completions', () => {
  it('whole: reach Cohere as logprobs: true and come back as logprobs.content, one entry per text chunk', async () => {
    const answer = await tg.client.chat.completions.create({ model: MODEL, messages, logprobs: true });
    expect(answer.choices[0]?.message.content).toBe(ANSWER);
    const content = answer.choices[0]?.logprobs?.content ?? null;
    expect(content).not.toBeNull();
    closeTo(content as never);
    expect(content?.map((entry) => entry.token).join('')).toBe(ANSWER);
    expect(cohere.calls).toHaveLength(1);
    expect(cohere.calls[0]?.body.logprobs).toBe(true);
  });

  it('streamed: each text chunk carries its log probabilities', async () => {
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages, logprobs: true, top_logprobs: 0, stream: true });
    const entries: Array<{ token: string; logprob: number; bytes: number[] | null; top_logprobs: unknown[] }> = [];
    let text = '';
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.delta.content ?? '';
      for (const entry of choice?.logprobs?.content ?? []) entries.push(entry);
      // A chunk's log probabilities are those of the text it carries.
      if (choice?.logprobs?.content) expect(choice.logprobs.content.map((entry) => entry.token).join('')).toBe(choice.delta.content);
    }
    expect(text).toBe(ANSWER);
    closeTo(entries);
    expect(cohere.calls[0]?.body.logprobs).toBe(true);
    expect(Object.keys(cohere.calls[0]?.body ?? {})).not.toContain('top_logprobs');
  });

  it('are not asked for unless the client asks: nothing is sent and the answer has none', async () => {
    const answer = await tg.client.chat.completions.create({ model: MODEL, messages });
    expect(answer.choices[0]?.logprobs ?? null).toBeNull();
    const off = await tg.client.chat.completions.create({ model: MODEL, messages, logprobs: false });
    expect(off.choices[0]?.logprobs ?? null).toBeNull();
    for (const call of cohere.calls) expect(Object.keys(call.body)).not.toContain('logprobs');
  });

  it('top_logprobs above 0 is a 400 naming it, whole and streamed, before any Cohere call', async () => {
    for (const stream of [false, true]) {
      const error = await tg.client.chat.completions.create({ model: MODEL, messages, logprobs: true, top_logprobs: 3, stream }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(OpenAI.APIError);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(400);
      expect(apiError.param).toBe('top_logprobs');
      expect(apiError.message).toMatch(/cohere: top_logprobs is not supported/);
    }
    expect(cohere.calls).toHaveLength(0);
  });
});

describe('logprobs to Cohere on the Responses API', () => {
  it('include message.output_text.logprobs (with top_logprobs) reaches Cohere and fills the output_text, whole', async () => {
    const response = await tg.client.responses.create({ model: MODEL, input: QUESTION, include: ['message.output_text.logprobs'], top_logprobs: 2 });
    expect(response.output_text).toBe(ANSWER);
    const message = response.output.find((item) => item.type === 'message');
    const part = message?.type === 'message' ? message.content[0] : undefined;
    expect(part?.type).toBe('output_text');
    closeTo((part?.type === 'output_text' ? part.logprobs : []) as never);
    expect(cohere.calls[0]?.body.logprobs).toBe(true);
    expect(Object.keys(cohere.calls[0]?.body ?? {})).not.toContain('top_logprobs');
  });

  it('and streamed, on each response.output_text.delta and the done part', async () => {
    const stream = await tg.client.responses.create({ model: MODEL, input: QUESTION, include: ['message.output_text.logprobs'], stream: true });
    const deltas: Array<{ token: string; logprob: number; bytes: number[] | null; top_logprobs: unknown[] }> = [];
    let done: unknown[] = [];
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') for (const entry of event.logprobs) deltas.push(entry as never);
      if (event.type === 'response.output_text.done') done = event.logprobs ?? [];
    }
    closeTo(deltas);
    closeTo(done as never);
    expect(cohere.calls[0]?.body.logprobs).toBe(true);
  });
});
