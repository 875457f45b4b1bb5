import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// OpenRouter sends a reasoning model's thinking twice: as `reasoning`, and as `reasoning_details` entries
// (`reasoning.text` with `text`, `reasoning.summary` with `summary`) that clients keep and send back. Output rules
// read the reasoning: its copy in `reasoning_details` must not carry what they redacted or blocked.

const chunk = (delta: unknown, finish: string | null = null) =>
  JSON.stringify({ id: 'o1', object: 'chat.completion.chunk', created: 1, model: 'deepseek/deepseek-r1', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
const sse = (events: readonly string[]) => `${events.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;
const detail = (text: string) => ({ type: 'reasoning.text', text, format: 'unknown', index: 0 });

describe('output rules and OpenRouter’s reasoning_details', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
    tg = await startGateway({
      providers: { openrouter: { type: 'openrouter', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', models: ['deepseek/deepseek-r1'] } },
      guardrails: {
        rules: [
          { name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' },
          { name: 'codename', kind: 'keyword', action: 'block', applies_to: 'output', keywords: ['bluebird'] },
        ],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  it('redacts the streamed reasoning in both its copies', async () => {
    const thinking = ['The user is ', 'jane.d', 'oe@exam', 'ple.com, so ', 'I will greet her.'];
    const events = [chunk({ role: 'assistant', content: '' }), ...thinking.map((piece) => chunk({ content: '', reasoning: piece, reasoning_details: [detail(piece)] })), chunk({ content: 'Hello!' }), chunk({}, 'stop')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ model: 'openrouter/deepseek/deepseek-r1', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let reasoning = '';
    let details = '';
    let content = '';
    for await (const part of stream) {
      const delta = part.choices[0]?.delta as { reasoning?: string; reasoning_details?: Array<{ text?: string }>; content?: string } | undefined;
      reasoning += delta?.reasoning ?? '';
      for (const entry of delta?.reasoning_details ?? []) details += entry.text ?? '';
      content += delta?.content ?? '';
    }
    expect(reasoning).toBe('The user is [REDACTED:email], so I will greet her.');
    expect(details).toBe(reasoning);
    expect(content).toBe('Hello!');
  });

  async function streamed(thinking: readonly string[], signature: string) {
    const signed = { type: 'reasoning.text', text: '', signature, format: 'anthropic-claude-v1', index: 0 };
    const events = [...thinking.map((piece) => chunk({ reasoning: piece, reasoning_details: [{ ...detail(piece), format: 'anthropic-claude-v1' }] })), chunk({ reasoning: '', reasoning_details: [signed] }), chunk({ content: 'Hello!' }), chunk({}, 'stop')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ model: 'openrouter/deepseek/deepseek-r1', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    const signatures: string[] = [];
    for await (const part of stream) {
      const delta = part.choices[0]?.delta as { reasoning_details?: Array<{ text?: string; signature?: string }> } | undefined;
      for (const entry of delta?.reasoning_details ?? []) {
        text += entry.text ?? '';
        if (entry.signature) signatures.push(entry.signature);
      }
    }
    return { text, signatures };
  }

  it('keeps a signed reasoning’s signature when no rule changed its text, and withholds it when one did', async () => {
    const clean = await streamed(['Greet the ', 'user warmly.'], 'sig-clean');
    expect(clean).toEqual({ text: 'Greet the user warmly.', signatures: ['sig-clean'] });
    const redacted = await streamed(['Mail jane.d', 'oe@example.com back.'], 'sig-redacted');
    expect(redacted).toEqual({ text: 'Mail [REDACTED:email] back.', signatures: [] });
  });

  it('sends neither copy of a streamed reasoning past a block', async () => {
    const events = ['The codename is blue', 'bird, as agreed.'].map((piece) => chunk({ reasoning: piece, reasoning_details: [detail(piece)] }));
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse([...events, chunk({ content: 'Hi' }), chunk({}, 'stop')]) });
    const stream = await tg.client.chat.completions.create({ model: 'openrouter/deepseek/deepseek-r1', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let sent = '';
    let finish: string | null = null;
    for await (const part of stream) {
      sent += JSON.stringify(part.choices[0]?.delta ?? {});
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(sent).not.toContain('bird');
    expect(finish).toBe('content_filter');
  });

  it('redacts a whole answer’s reasoning in both its copies', async () => {
    const thought = 'The user is jane.doe@example.com.';
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'o2', object: 'chat.completion', created: 1, model: 'deepseek/deepseek-r1', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!', reasoning: thought, reasoning_details: [detail(thought)] }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
    });
    const answer = await tg.client.chat.completions.create({ model: 'openrouter/deepseek/deepseek-r1', messages: [{ role: 'user', content: 'hi' }] });
    const message = answer.choices[0]?.message as unknown as { reasoning?: string; reasoning_details?: Array<{ text?: string }> };
    expect(message.reasoning).toBe('The user is [REDACTED:email].');
    expect(JSON.stringify(message)).not.toContain('jane.doe');
  });
});
