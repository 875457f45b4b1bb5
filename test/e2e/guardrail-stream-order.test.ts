import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Under an output rule, each text of a streamed answer (the reasoning, the answer, each tool call's arguments) is
// held back by a short tail while it streams. When the model moves on to the next one, what the previous one holds
// must go out first: a client that renders blocks in order (Anthropic's stream) would otherwise get a text block
// after the tool call it preceded, and the tool call's held arguments after its block was closed.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    guardrails: {
      rules: [
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' },
        { name: 'deny', kind: 'keyword', keywords: ['project zephyr'], action: 'block', applies_to: 'output' },
      ],
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** An OpenAI stream of these deltas (one chunk each), then a finish reason, a usage chunk and [DONE]. */
function sse(deltas: ReadonlyArray<Record<string, unknown>>, finish: string): string {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
  const frames = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
    ...deltas.map((delta) => ({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })),
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] },
    { ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 } },
  ];
  return `${frames.map((frame) => `data: ${JSON.stringify(frame)}\n\n`).join('')}data: [DONE]\n\n`;
}

function script(deltas: ReadonlyArray<Record<string, unknown>>, finish: string): void {
  upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(deltas, finish) });
}

const anthropic = () => new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
const tools: Anthropic.Tool[] = [{ name: 'send_mail', description: 'Sends a mail.', input_schema: { type: 'object' } }];

describe('a guarded stream moving from one text to the next', () => {
  it('sends the text before the tool call that follows it, and the whole tool input, to an Anthropic client', async () => {
    script(
      [
        { content: 'I will mail jane@example.com now.' },
        { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send_mail', arguments: '{"to": "jane@' } }] },
        { tool_calls: [{ index: 0, function: { arguments: 'example.com", "body": "hi"}' } }] },
      ],
      'tool_calls',
    );
    const message = await anthropic()
      .messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 200, tools, messages: [{ role: 'user', content: 'mail Jane' }] })
      .finalMessage();
    expect(message.content).toEqual([
      { type: 'text', text: 'I will mail [REDACTED:email] now.' },
      { type: 'tool_use', id: 'call_1', name: 'send_mail', input: { to: '[REDACTED:email]', body: 'hi' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
  });

  it('sends each of two parallel tool calls whole to an Anthropic client', async () => {
    script(
      [
        { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'send_mail', arguments: '{"to": "a@example.com"}' } }] },
        { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'send_mail', arguments: '{"to": ' } }] },
        { tool_calls: [{ index: 1, function: { arguments: '"b"}' } }] },
      ],
      'tool_calls',
    );
    const message = await anthropic()
      .messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 200, tools, messages: [{ role: 'user', content: 'mail both' }] })
      .finalMessage();
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'call_a', name: 'send_mail', input: { to: '[REDACTED:email]' } },
      { type: 'tool_use', id: 'call_b', name: 'send_mail', input: { to: 'b' } },
    ]);
  });

  it('sends the reasoning before the answer that follows it', async () => {
    // An answer longer than what the guard holds back, so some of it goes out before the stream finishes.
    const pieces = Array.from({ length: 4 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(4)}\n`);
    script([{ reasoning_content: 'The user is jane@example.com.' }, ...pieces.map((content) => ({ content }))], 'stop');
    const message = await anthropic()
      .messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 200, messages: [{ role: 'user', content: 'greet' }] })
      .finalMessage();
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'The user is [REDACTED:email].', signature: '' },
      { type: 'text', text: pieces.join('') },
    ]);
  });

  it('ends the answer at a block in the text before a tool call, without the tool call', async () => {
    script(
      [
        { content: 'About Project Zephyr: ' },
        { tool_calls: [{ index: 0, id: 'call_3', type: 'function', function: { name: 'send_mail', arguments: '{"to": "x"}' } }] },
      ],
      'tool_calls',
    );
    const message = await anthropic()
      .messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 200, tools, messages: [{ role: 'user', content: 'mail' }] })
      .finalMessage();
    expect(message.stop_reason).toBe('refusal');
    expect(message.content).toEqual([{ type: 'text', text: 'About ' }]);
  });

  it('keeps the order on /v1 too: every delta of one text before the next text begins', async () => {
    script(
      [{ reasoning_content: 'Think about jane@example.com.' }, { content: 'Done: ' }, { content: 'mailed.' }, { tool_calls: [{ index: 0, id: 'call_2', type: 'function', function: { name: 'send_mail', arguments: '{}' } }] }],
      'tool_calls',
    );
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'go' }] });
    const order: string[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as Record<string, unknown> | undefined;
      if (!delta) continue;
      if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') order.push('reasoning');
      if (typeof delta.content === 'string' && delta.content !== '') order.push('content');
      if (Array.isArray(delta.tool_calls)) order.push('tool');
    }
    expect(order.filter((kind, i) => kind !== order[i - 1])).toEqual(['reasoning', 'content', 'tool']);
  });
});
