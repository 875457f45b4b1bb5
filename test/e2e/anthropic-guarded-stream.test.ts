import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

/**
 * An output guardrail on a streamed /anthropic answer from an Anthropic provider (native pass-through). The guard
 * rebuilds every chunk, so the answer is written from tollgate's chunks; a read that made no chunk (a content block's
 * start) used to be taken for the end of the text, and every text after it was lost: a 200 with no content.
 */
let rig: AnthropicRig;

beforeAll(async () => {
  rig = await startAnthropicRig({ guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact' }] } });
});
afterAll(async () => rig.stop());

const model = 'anthropic/claude-sonnet-4-5';

describe('a guarded /anthropic stream', () => {
  it('streams the whole text, with the redaction made', async () => {
    const stream = rig.client.messages.stream({ model, max_tokens: 200, messages: [{ role: 'user', content: 'mail jane@example.com please' }] });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: expect.stringMatching(/^echo: mail \[REDACTED:email\] please$/) }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(JSON.stringify(message)).not.toContain('jane@example.com');
  });

  it('streams a text with nothing to redact whole, thinking included', async () => {
    const stream = rig.client.messages.stream({ model, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'nothing personal here' }] });
    const message = await stream.finalMessage();
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content.at(-1)).toMatchObject({ type: 'text', text: 'echo: nothing personal here' });
  });
});

describe('output rules on /anthropic answers with thinking', () => {
  let out: AnthropicRig;
  beforeAll(async () => {
    // Output only: the prompt reaches the model whole, so its thinking and answer repeat the address.
    out = await startAnthropicRig({ guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] } });
  });
  afterAll(async () => out.stop());
  const thinking = { type: 'enabled' as const, budget_tokens: 1024 };

  it('redacts the thinking too, whole and streamed', async () => {
    const params = { model, max_tokens: 2000, thinking, messages: [{ role: 'user' as const, content: 'mail jane@example.com please' }] };
    const whole = await out.client.messages.create(params);
    expect(JSON.stringify(out.lastSent().message)).toContain('jane@example.com');
    expect(whole.content).toEqual([
      { type: 'thinking', thinking: 'thinking about: mail [REDACTED:email] please', signature: '' },
      { type: 'text', text: 'echo: mail [REDACTED:email] please' },
    ]);
    const streamed = await out.client.messages.stream(params).finalMessage();
    expect(streamed.content.map((block) => (block.type === 'thinking' ? block.thinking : block.type === 'text' ? block.text : ''))).toEqual([
      'thinking about: mail [REDACTED:email] please',
      'echo: mail [REDACTED:email] please',
    ]);
    expect(JSON.stringify(streamed)).not.toContain('jane@example.com');
  });

  /** A stream's frames: each event's name and data, and each block's text joined (its deltas may be regrouped). */
  const read = (text: string) => {
    const frames = text.split('\n\n').filter((frame) => frame.trim() !== '').map((frame) => {
      const [name, data] = frame.split('\ndata: ');
      return { event: (name ?? '').replace(/^event: /, ''), data: JSON.parse(data ?? '{}') };
    });
    const texts: string[] = [];
    const others: unknown[] = [];
    for (const frame of frames) {
      const delta = frame.data.delta;
      if (frame.event === 'content_block_delta' && (delta.type === 'text_delta' || delta.type === 'thinking_delta')) {
        texts[frame.data.index] = `${texts[frame.data.index] ?? ''}${delta.text ?? delta.thinking}`;
      } else others.push(frame.data);
    }
    return { texts, others };
  };

  it('streams an answer nothing was found in with every event the upstream sent: the thinking keeps its signature', async () => {
    const response = await out.post({ model, max_tokens: 2000, stream: true, thinking, messages: [{ role: 'user', content: 'nothing personal here either' }] });
    const got = read(await response.text());
    const sent = read((out.lastSent().frames as string[]).join('').replace(/"model":"[^"]*"/, `"model":"${model}"`));
    // The same events in the same order (the text deltas may be grouped differently: the guard holds a short tail).
    expect(got.others).toEqual(sent.others);
    expect(got.texts).toEqual(sent.texts);
    expect(got.others).toContainEqual({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: expect.stringMatching(/^sig_/) } });
  });

  it('redacts a streamed answer in its own events: a match split across deltas too, the signature after its thinking', async () => {
    const frame = (data: Record<string, unknown>): string => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;
    const delta = (index: number, value: Record<string, unknown>) => frame({ type: 'content_block_delta', index, delta: value });
    const body = [
      frame({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } }),
      frame({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
      delta(0, { type: 'thinking_delta', thinking: 'The address is jo' }),
      delta(0, { type: 'thinking_delta', thinking: 'e@example.org.' }),
      delta(0, { type: 'signature_delta', signature: 'sig_upstream' }),
      frame({ type: 'content_block_stop', index: 0 }),
      frame({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
      ...['Write to ja', 'ne@exam', 'ple.com or ', 'call.'].map((text) => delta(1, { type: 'text_delta', text })),
      frame({ type: 'content_block_stop', index: 1 }),
      frame({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
      frame({ type: 'message_stop' }),
    ].join('');
    out.upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const response = await out.post({ model, max_tokens: 2000, stream: true, thinking, messages: [{ role: 'user', content: 'where do I write?' }] });
    const text = await response.text();
    expect(text).not.toMatch(/example\.(org|com)/);
    const got = read(text);
    expect(got.texts).toEqual(['The address is [REDACTED:email].', 'Write to [REDACTED:email] or call.']);
    const order = text.split('\n\n').filter((f) => f.includes('"index":0')).map((f) => JSON.parse(f.split('\ndata: ')[1] as string)).map((d) => d.delta?.type ?? d.type);
    expect(order.at(-2)).toBe('signature_delta');
    expect(order.at(-1)).toBe('content_block_stop');
    expect(got.others.at(-2)).toEqual({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } });
  });

  it('leaves a whole answer nothing was found in as the upstream sent it: the thinking keeps its signature', async () => {
    const whole = await out.client.messages.create({ model, max_tokens: 2000, thinking, messages: [{ role: 'user', content: 'nothing personal here' }] });
    const sent = out.lastSent().message as { content: unknown[]; usage: unknown };
    expect(whole.content).toEqual(sent.content);
    expect(whole.content[0]).toMatchObject({ type: 'thinking', signature: expect.stringMatching(/^sig_/) });
    expect(whole.usage).toEqual(sent.usage);
  });
});

describe('a blocking output rule on a streamed /anthropic answer', () => {
  let blocking: AnthropicRig;
  beforeAll(async () => {
    blocking = await startAnthropicRig({ guardrails: { rules: [{ name: 'no-codename', kind: 'keyword', keywords: ['bluebird'], action: 'block', applies_to: 'output' }] } });
  });
  afterAll(async () => blocking.stop());

  it('ends the message at the match with a refusal, in Anthropic\'s own events, and the SDK finishes', async () => {
    const message = await blocking.client.messages.stream({ model, max_tokens: 200, messages: [{ role: 'user', content: 'say the word bluebird twice' }] }).finalMessage();
    expect(message.stop_reason).toBe('refusal');
    expect(JSON.stringify(message.content)).not.toContain('bluebird');
    expect(message.content).toEqual([{ type: 'text', text: 'echo: say the word ' }]);
  });
});

