import { GoogleGenAI, type GenerateContentResponse } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The Google Gen AI SDK's chats keep a streamed answer in the conversation only when every event of the stream is
// a valid response (candidates[0].content with at least one part, none of them empty) and one carries a
// finishReason; otherwise the turn is recorded as an empty model turn and left out of the curated history the next
// sendMessageStream sends, taking the user's message with it. A stream translated from another format must hold
// every event to that, the last (finishReason and usage) included, or a chat forgets each exchange. The history then
// holds one model content per event, which are one turn: they reach a provider of another format as one message.

let anthropic: AnthropicUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
});

afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await openai?.close();
});

beforeEach(() => {
  anthropic.reset();
  openai.reset();
});

async function collect(stream: AsyncGenerator<GenerateContentResponse>): Promise<GenerateContentResponse[]> {
  const events: GenerateContentResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('chats.sendMessageStream through a model of another format', () => {
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5']) {
    it(`keeps each streamed exchange in the chat history (${model})`, async () => {
      const chat = ai.chats.create({ model, config: { maxOutputTokens: 100 } });
      const first = await collect(await chat.sendMessageStream({ message: 'first question' }));
      expect(first.map((event) => event.text ?? '').join('')).toBe('echo: first question');
      const last = first.at(-1);
      expect(last?.candidates?.[0]?.finishReason).toBe('STOP');
      expect(last?.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0);
      // Every event is one the SDK takes as a valid response.
      for (const event of first) {
        const parts = event.candidates?.[0]?.content?.parts ?? [];
        expect(parts.length).toBeGreaterThan(0);
        for (const part of parts) expect(Object.keys(part).length).toBeGreaterThan(0);
      }
      const history = chat.getHistory(true);
      // The SDK keeps one model content per event; they are one turn, the answer whole.
      expect(history[0]).toEqual({ role: 'user', parts: [{ text: 'first question' }] });
      expect(history.slice(1).every((content) => content.role === 'model')).toBe(true);
      expect(history.slice(1).flatMap((content) => content.parts ?? []).map((part) => part.text ?? '').join('')).toBe('echo: first question');

      await collect(await chat.sendMessageStream({ message: 'second question' }));
      const upstream = model.startsWith('openai/') ? openai.calls.at(-1)?.body : anthropic.calls.at(-1)?.body;
      const sent = (upstream.messages as Array<{ role: string; content: unknown }>).map((message) => [message.role, message.content]);
      // The model contents of one turn reach the upstream as one assistant message.
      expect(sent).toEqual([
        ['user', 'first question'],
        ['assistant', 'echo: first question'],
        ['user', 'second question'],
      ]);
    });
  }

  it('keeps an exchange whose upstream stream ended without a finish_reason, the last event finishing it', async () => {
    const chunk = (choices: unknown[], usage?: unknown) => `data: ${JSON.stringify({ id: 'chatcmpl-nofinish', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices, ...(usage ? { usage } : {}) })}\n\n`;
    const body =
      chunk([{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }]) +
      chunk([{ index: 0, delta: { content: ' there' }, finish_reason: null }]) +
      chunk([], { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }) +
      'data: [DONE]\n\n';
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const chat = ai.chats.create({ model: 'openai/gpt-4o-mini' });
    const events = await collect(await chat.sendMessageStream({ message: 'greet me' }));
    expect(events.map((event) => event.text ?? '').join('')).toBe('Hi there');
    expect(events.at(-1)?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(events.at(-1)?.usageMetadata).toEqual({ promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 });
    await collect(await chat.sendMessageStream({ message: 'again' }));
    expect((openai.calls.at(-1)?.body.messages as Array<{ role: string; content: unknown }>).map((message) => [message.role, message.content])).toEqual([
      ['user', 'greet me'],
      ['assistant', 'Hi there'],
      ['user', 'again'],
    ]);
  });

  it('keeps a streamed function call turn, so the function response that follows matches it', async () => {
    const tools = [{ functionDeclarations: [{ name: 'lookup', parametersJsonSchema: { type: 'object', properties: { query: { type: 'string' } } } }] }];
    const chat = ai.chats.create({ model: 'anthropic/claude-sonnet-4-5', config: { maxOutputTokens: 100, tools, automaticFunctionCalling: { disable: true } } });
    const first = await collect(await chat.sendMessageStream({ message: 'please use the tool' }));
    const call = first.flatMap((event) => event.functionCalls ?? [])[0];
    expect(call).toMatchObject({ name: 'lookup', args: { query: 'please use the tool' } });
    const answer = await collect(await chat.sendMessageStream({ message: [{ functionResponse: { id: call?.id, name: 'lookup', response: { output: 'sunny' } } }] }));
    expect(answer.map((event) => event.text ?? '').join('')).toBe('echo: tool said {"output":"sunny"}');
    const roles = chat.getHistory(true).map((content) => content.role);
    expect(roles.slice(0, 3)).toEqual(['user', 'model', 'user']);
    expect(roles.slice(3).length).toBeGreaterThan(0);
    expect(roles.slice(3).every((role) => role === 'model')).toBe(true);
  });
});

describe('consecutive model contents (a streamed turn as the SDK keeps it)', () => {
  const tools = [{ functionDeclarations: [{ name: 'lookup', parametersJsonSchema: { type: 'object', properties: { query: { type: 'string' } } } }] }];

  it('are one assistant message, whose calls the function responses after them answer', async () => {
    const response = await ai.models.generateContent({
      model: 'openai/gpt-4o-mini',
      contents: [
        { role: 'user', parts: [{ text: 'find dogs' }] },
        { role: 'model', parts: [{ text: 'Let me ' }] },
        { role: 'model', parts: [{ text: 'check.' }] },
        { role: 'model', parts: [{ functionCall: { id: 'call_1', name: 'lookup', args: { query: 'dogs' } } }] },
        // Gemini's last event of a function-calling turn may carry an empty text.
        { role: 'model', parts: [{ text: '' }] },
        { role: 'user', parts: [{ functionResponse: { id: 'call_1', name: 'lookup', response: { hits: 5 } } }] },
      ],
      config: { tools },
    });
    expect(response.text).toBe('echo: {"hits":5}');
    expect(openai.calls.at(-1)?.body.messages).toEqual([
      { role: 'user', content: 'find dogs' },
      { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"query":"dogs"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"hits":5}' },
    ]);
  });

  it('gather calls made across them, each answered by its id (Anthropic)', async () => {
    const response = await ai.models.generateContent({
      model: 'anthropic/claude-sonnet-4-5',
      contents: [
        { role: 'user', parts: [{ text: 'find dogs and cats' }] },
        { role: 'model', parts: [{ functionCall: { id: 'call_dogs', name: 'lookup', args: { query: 'dogs' } } }] },
        { role: 'model', parts: [{ functionCall: { id: 'call_cats', name: 'lookup', args: { query: 'cats' } } }] },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'call_cats', name: 'lookup', response: { hits: 2 } } },
            { functionResponse: { id: 'call_dogs', name: 'lookup', response: { hits: 5 } } },
          ],
        },
      ],
      config: { tools, maxOutputTokens: 100 },
    });
    expect(response.candidates?.[0]?.finishReason).toBe('STOP');
    const messages = anthropic.calls.at(-1)?.body.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[1]?.content.map((block) => block.id)).toEqual(['call_dogs', 'call_cats']);
    expect(messages[2]?.content.map((block) => [block.tool_use_id, block.content])).toEqual([
      ['call_cats', '{"hits":2}'],
      ['call_dogs', '{"hits":5}'],
    ]);
  });
});

