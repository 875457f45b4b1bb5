import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';

// An Anthropic client's stop_sequences, translated to a provider that says its answer ended at one of them (Bedrock
// Converse's stopReason `stop_sequence`, Cohere's finish_reason `STOP_SEQUENCE`) without saying which: with one
// sequence asked for, which one is not in doubt, and Anthropic's answer is stop_reason `stop_sequence` naming it.
const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';

let bedrock: BedrockUpstream;
let cohere: CohereUpstream;
let tg: RunningGateway;
let client: Anthropic;

beforeAll(async () => {
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  cohere = await startCohereUpstream({ apiKey: 'co-test-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
      cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-test-key' },
    },
  });
  client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await bedrock?.close();
  await cohere?.close();
});

beforeEach(() => {
  bedrock.reset();
  cohere.reset();
});

describe.each([
  ['Bedrock (Converse)', 'bedrock/us.amazon.nova-pro-v1:0'],
  ['Cohere', 'cohere/command-a-03-2025'],
])('Anthropic SDK -> %s with stop_sequences', (_name, model) => {
  const params = { model, max_tokens: 100, stop_sequences: ['END'], messages: [{ role: 'user' as const, content: 'one two END three' }] };

  it('answers stop_reason stop_sequence naming the sequence, whole and streamed', async () => {
    const message = await client.messages.create(params);
    expect(message.content).toEqual([{ type: 'text', text: 'echo: one two ' }]);
    expect(message).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    const streamed = await client.messages.stream(params).finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'echo: one two ' }]);
    expect(streamed).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it('still answers end_turn when the answer ended on its own', async () => {
    const message = await client.messages.create({ ...params, messages: [{ role: 'user', content: 'one two three' }] });
    expect(message).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
    const streamed = await client.messages.stream({ ...params, messages: [{ role: 'user', content: 'one two three' }] }).finalMessage();
    expect(streamed).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
  });
});
