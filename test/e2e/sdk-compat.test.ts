import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { embed, embedMany, generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Popular clients, configured by base URL alone, against the scripted OpenAI upstream through the gateway.

const MODEL = 'openai/gpt-4o-mini';
const EMBEDDING_MODEL = 'openai/text-embedding-3-small';
const API_KEY = 'client-side-key';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  tg = await startGateway(openAIConfig(upstream.url));
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

function lastCall() {
  const call = upstream.calls.at(-1);
  if (!call) throw new Error('upstream saw no call');
  return call;
}

describe.each([
  ['the bare paths', ''],
  ['/v1', '/v1'],
])('the official openai client at %s', (_label, suffix) => {
  const client = (): OpenAI => new OpenAI({ baseURL: `${tg.url}${suffix}`, apiKey: API_KEY, maxRetries: 0, timeout: 15_000 });

  it('chats', async () => {
    const completion = await client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello sdk' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: hello sdk');
    expect(completion.model).toBe(MODEL);
    expect(lastCall()).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt-4o-mini' } });
  });

  it('streams', async () => {
    const stream = await client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'stream it' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: stream it');
  });

  it('embeds, lists models and retrieves one', async () => {
    const embeddings = await client().embeddings.create({ model: EMBEDDING_MODEL, input: ['a b', 'c d'] });
    expect(embeddings.data).toHaveLength(2);
    expect(embeddings.data[0]?.embedding.length).toBeGreaterThan(0);
    expect(embeddings.model).toBe(EMBEDDING_MODEL);
    const models = await client().models.list();
    expect(models.data.map((model) => model.id)).toContain(MODEL);
    const model = await client().models.retrieve(MODEL);
    expect(model).toEqual(models.data.find((listed) => listed.id === MODEL));
  });
});

describe('Vercel AI SDK (ai + @ai-sdk/openai)', () => {
  // `openai(model)` is the Responses API in @ai-sdk/openai v4 (its default); `openai.chat(model)` selects Chat
  // Completions. tollgate serves both.
  const provider = () => createOpenAI({ baseURL: `${tg.url}/v1`, apiKey: API_KEY });

  it('generateText and streamText with the default provider (the Responses API)', async () => {
    const result = await generateText({ model: provider()(MODEL), prompt: 'hello responses', maxRetries: 0 });
    expect(result.text).toBe('echo: hello responses');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.response.modelId).toBe(MODEL);
    expect(lastCall()).toMatchObject({ path: '/v1/responses', body: { model: 'gpt-4o-mini' } });
    const streamed = streamText({ model: provider()(MODEL), prompt: 'stream responses', maxRetries: 0 });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe('echo: stream responses');
    expect(lastCall().body.stream).toBe(true);
  });

  it('generateText', async () => {
    const result = await generateText({ model: provider().chat(MODEL), prompt: 'hello vercel', maxRetries: 0 });
    expect(result.text).toBe('echo: hello vercel');
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.response.modelId).toBe(MODEL);
    expect(lastCall().path).toBe('/v1/chat/completions');
  });

  it('streamText', async () => {
    const result = streamText({ model: provider().chat(MODEL), prompt: 'stream vercel', maxRetries: 0 });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe('echo: stream vercel');
    expect(lastCall().body.stream).toBe(true);
  });

  it('calls a tool and answers with its result', async () => {
    const seen: string[] = [];
    const result = await generateText({
      model: provider().chat(MODEL),
      prompt: 'weather in Paris',
      maxRetries: 0,
      tools: {
        lookup: tool({
          description: 'Looks something up',
          inputSchema: z.object({ query: z.string() }),
          execute: async ({ query }) => {
            seen.push(query);
            return `sunny in ${query}`;
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    // The scripted upstream calls the first tool with the user text, then echoes the tool result.
    expect(seen).toEqual(['weather in Paris']);
    expect(result.steps[0]?.toolCalls.map((call) => call.toolName)).toEqual(['lookup']);
    expect(result.text).toContain('sunny in weather in Paris');
    expect(upstream.calls).toHaveLength(2);
    expect(upstream.calls[1]?.body.messages.at(-1)).toMatchObject({ role: 'tool' });
  });

  it('embed and embedMany', async () => {
    const one = await embed({ model: provider().embedding(EMBEDDING_MODEL), value: 'single text', maxRetries: 0 });
    expect(one.embedding.length).toBeGreaterThan(0);
    expect(lastCall()).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small' } });
    const many = await embedMany({ model: provider().embedding(EMBEDDING_MODEL), values: ['first', 'second', 'third'], maxRetries: 0 });
    expect(many.embeddings).toHaveLength(3);
    expect(many.embeddings[0]).not.toEqual(many.embeddings[1]);
  });
});

describe('@langchain/openai', () => {
  const chat = () => new ChatOpenAI({ model: MODEL, apiKey: API_KEY, maxRetries: 0, configuration: { baseURL: `${tg.url}/v1` } });

  it('ChatOpenAI.invoke', async () => {
    const message = await chat().invoke('hello langchain');
    expect(message.content).toBe('echo: hello langchain');
    expect(lastCall()).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt-4o-mini' } });
  });

  it('ChatOpenAI.stream', async () => {
    let text = '';
    for await (const chunk of await chat().stream('stream langchain')) text += typeof chunk.content === 'string' ? chunk.content : '';
    expect(text).toBe('echo: stream langchain');
    expect(lastCall().body.stream).toBe(true);
  });

  it('OpenAIEmbeddings.embedQuery and embedDocuments', async () => {
    const embeddings = new OpenAIEmbeddings({ model: EMBEDDING_MODEL, apiKey: API_KEY, maxRetries: 0, configuration: { baseURL: `${tg.url}/v1` } });
    const vector = await embeddings.embedQuery('query text');
    expect(vector.length).toBeGreaterThan(0);
    expect(lastCall()).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small' } });
    const vectors = await embeddings.embedDocuments(['doc one', 'doc two']);
    expect(vectors).toHaveLength(2);
  });
});
