import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// vLLM, OpenRouter and Groq stream a reasoning model's thinking as `reasoning` (vLLM under `reasoning_content` too),
// and put it in a whole answer's message the same way. Output rules read a model's reasoning (reasoning_content,
// Anthropic's thinking): under this name too, or an address or key the model thought about reaches the client.

const chunk = (delta: string, finish = 'null') =>
  `{"id":"r1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]}`;
const sse = (events: readonly string[]) => `${events.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;

describe('output rules and reasoning sent as `reasoning`', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
    tg = await startGateway({
      providers: { lab: { type: 'vllm', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', models: ['qwen3'] } },
      guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  it('redacts a streamed reasoning, split across events, and keeps it ahead of the answer', async () => {
    const thinking = ['The user is ', 'jane.d', 'oe@exam', 'ple.com, so ', 'I will greet her.'];
    const events = [chunk('{"role":"assistant","content":""}'), ...thinking.map((piece) => chunk(`{"reasoning":${JSON.stringify(piece)}}`)), chunk('{"content":"Hello!"}'), chunk('{}', '"stop"')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ model: 'lab/qwen3', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let reasoning = '';
    let content = '';
    const order: string[] = [];
    for await (const part of stream) {
      const delta = part.choices[0]?.delta as { reasoning?: string; content?: string } | undefined;
      if (delta?.reasoning) {
        reasoning += delta.reasoning;
        order.push('reasoning');
      }
      if (delta?.content) {
        content += delta.content;
        order.push('content');
      }
    }
    expect(reasoning).toBe('The user is [REDACTED:email], so I will greet her.');
    expect(content).toBe('Hello!');
    expect(order.at(-1)).toBe('content');
  });

  it('redacts both names of a reasoning sent under both (vLLM) as one text', async () => {
    const thinking = ['The user is ', 'jane.d', 'oe@exam', 'ple.com, so ', 'I will greet her.'];
    const both = (piece: string) => chunk(`{"reasoning_content":${JSON.stringify(piece)},"reasoning":${JSON.stringify(piece)}}`);
    const events = [chunk('{"role":"assistant","content":""}'), ...thinking.map(both), chunk('{"content":"Hello!"}'), chunk('{}', '"stop"')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ model: 'lab/qwen3', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let reasoning = '';
    let reasoningContent = '';
    for await (const part of stream) {
      const delta = part.choices[0]?.delta as { reasoning?: string; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning ?? '';
      reasoningContent += delta?.reasoning_content ?? '';
    }
    expect(reasoning).toBe('The user is [REDACTED:email], so I will greet her.');
    expect(reasoningContent).toBe(reasoning);
  });

  it('redacts a whole answer’s reasoning', async () => {
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'r2', object: 'chat.completion', created: 1, model: 'qwen3', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!', reasoning: 'The user is jane.doe@example.com.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
    });
    const answer = await tg.client.chat.completions.create({ model: 'lab/qwen3', messages: [{ role: 'user', content: 'hi' }] });
    const message = answer.choices[0]?.message as { content: string; reasoning?: string };
    expect(message.reasoning).toBe('The user is [REDACTED:email].');
    expect(message.content).toBe('Hello!');
  });
});
