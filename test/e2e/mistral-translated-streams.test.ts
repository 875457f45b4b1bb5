import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Mistral refuses any field outside its request schema (422 extra_forbidden), stream_options among them, and reports a
// stream's usage on its last chunk unasked. The Anthropic, GenAI and Responses routes ask every stream for usage
// themselves: that request must reach Mistral without the field, or every streamed answer they ask of it fails.

describe('streams translated to Mistral', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
    tg = await startGateway({ providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } } });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it('streams to an Anthropic client, with Mistral’s usage', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['Hel', 'lo!'] });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const message = await client.messages.stream({ model: 'mistral/mistral-small-latest', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(message.content.map((block) => (block.type === 'text' ? block.text : block.type))).toEqual(['Hello!']);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(upstream.calls[0]?.body).not.toHaveProperty('stream_options');
  });

  it('streams to a GenAI client', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['Hel', 'lo!'] });
    const ai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: `${tg.url}/genai` } });
    let text = '';
    for await (const part of await ai.models.generateContentStream({ model: 'mistral/mistral-small-latest', contents: 'hi' })) text += part.text ?? '';
    expect(text).toBe('Hello!');
  });

  it('streams to a Responses client', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['Hel', 'lo!'] });
    const stream = await tg.client.responses.create({ model: 'mistral/mistral-small-latest', input: 'hi', stream: true });
    let text = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text).toBe('Hello!');
  });

  it('streams to an OpenAI client that asked for usage, as OpenAI shapes it', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['Hel', 'lo!'] });
    const stream = await tg.client.chat.completions.create({ model: 'mistral/mistral-small-latest', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let usage: unknown = null;
    for await (const part of stream) {
      text += part.choices[0]?.delta.content ?? '';
      if (part.usage) usage = part.usage;
    }
    expect(text).toBe('Hello!');
    expect(usage).toMatchObject({ completion_tokens: expect.any(Number) as number });
  });
});
