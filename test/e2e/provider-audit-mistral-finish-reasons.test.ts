import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Mistral's FinishReason is one of stop, length, model_length, error, tool_calls (ChatCompletionChoice and
// CompletionResponseStreamChoice in Mistral's API spec): `model_length` is an answer the model's context window cut,
// which OpenAI calls `length`. Taken for a natural end, it reached an Anthropic client as `end_turn` and a Responses
// client as a `completed` response, so an agent went on with half an answer as if it were whole.

const MODEL = 'mistral-small-latest';
const usage = { prompt_tokens: 31990, completion_tokens: 10, total_tokens: 32000 };

function wholeAnswer(): string {
  return JSON.stringify({
    id: 'cmpl-e5cc70bb28c444948073e77776eb30ef',
    object: 'chat.completion',
    created: 1_764_547_200,
    model: MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content: 'The story goes that', tool_calls: null }, finish_reason: 'model_length' }],
    usage,
  });
}

function streamedAnswer(): string {
  const head = { id: 'cmpl-e5cc70bb28c444948073e77776eb30ef', object: 'chat.completion.chunk', created: 1_764_547_200, model: MODEL };
  const frame = (delta: object, finish: string | null, extra: object = {}) => `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  return [frame({ role: 'assistant', content: '' }, null), frame({ content: 'The story' }, null), frame({ content: ' goes that' }, null), frame({ content: '' }, 'model_length', { usage }), 'data: [DONE]\n\n'].join('');
}

describe('Mistral answers cut by the context window (finish_reason model_length)', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  let anthropic: Anthropic;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
    tg = await startGateway({ providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } } });
    anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it('reach an Anthropic client as stop_reason max_tokens', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, body: wholeAnswer() });
    const message = await anthropic.messages.create({ model: `mistral/${MODEL}`, max_tokens: 100, messages: [{ role: 'user', content: 'Tell me a story' }] });
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'The story goes that' })]);
    expect(message.stop_reason).toBe('max_tokens');
  });

  it('reach an Anthropic client as stop_reason max_tokens when streamed', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: streamedAnswer() });
    const message = await anthropic.messages.stream({ model: `mistral/${MODEL}`, max_tokens: 100, messages: [{ role: 'user', content: 'Tell me a story' }] }).finalMessage();
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'The story goes that' })]);
    expect(message.stop_reason).toBe('max_tokens');
  });

  it('reach a Responses client as an incomplete response', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, body: wholeAnswer() });
    const response = await tg.client.responses.create({ model: `mistral/${MODEL}`, input: 'Tell me a story' });
    expect(response.output_text).toBe('The story goes that');
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });
});
