import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Some OpenAI-compatible servers send a usage chunk (`choices: []`) before the stream's last content chunks, or one
// after each choice of an `n > 1` answer. Under output rules that chunk is not the end of the answer: the text after
// it is still checked and sent, and the usage chunk still reaches the client.

const usage = (completion: number) => ({ prompt_tokens: 5, completion_tokens: completion, total_tokens: 5 + completion });
const frame = (choices: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ id: 'u1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices, ...extra });
const content = (text: string, index = 0, finish: string | null = null) => frame([{ index, delta: { content: text }, logprobs: null, finish_reason: finish }]);
const usageOnly = (completion: number) => frame([], { usage: usage(completion) });
const sse = (events: readonly string[]) => `${events.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;

describe('output rules and a usage chunk in the middle of a stream', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(
      openAIConfig(upstream.url, {
        guardrails: {
          rules: [
            { name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' },
            { name: 'codename', kind: 'keyword', action: 'block', applies_to: 'output', keywords: ['bluebird'] },
          ],
        },
      }),
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  async function read(n = 1) {
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', n, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    const texts: string[] = [];
    const finishes: Array<string | null> = [];
    const order: string[] = [];
    for await (const part of stream) {
      if (part.usage) {
        order.push(`usage:${part.usage.completion_tokens}`);
      }
      for (const choice of part.choices) {
        texts[choice.index] = (texts[choice.index] ?? '') + (choice.delta.content ?? '');
        if (choice.finish_reason) {
          finishes[choice.index] = choice.finish_reason;
          order.push(`finish:${choice.index}`);
        }
      }
    }
    return { texts, finishes, order };
  }

  it('keeps redacting and sending the text that follows the usage chunk', async () => {
    const events = [frame([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]), content('Write to ja'), content('ne.doe@exa'), usageOnly(4), content('mple.com to'), content('day.'), content('', 0, 'stop')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const { texts, finishes, order } = await read();
    expect(texts[0]).toBe('Write to [REDACTED:email] today.');
    expect(finishes[0]).toBe('stop');
    expect(order).toEqual(['usage:4', 'finish:0']);
  });

  it('still blocks a word that comes after the usage chunk', async () => {
    const events = [content('The codename is '), usageOnly(3), content('blue'), content('bird, as agreed.'), content('', 0, 'stop')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const { texts, finishes } = await read();
    expect(texts[0]).toBe('The codename is ');
    expect(finishes[0]).toBe('content_filter');
  });

  it('keeps guarding the other choices when a usage chunk follows each finished choice', async () => {
    const events = [content('First: a@b.io', 0), content('Second: jane.d', 1), content('', 0, 'stop'), usageOnly(3), content('oe@example.com', 1), content('', 1, 'stop'), usageOnly(8)];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const { texts, finishes, order } = await read(2);
    expect(texts).toEqual(['First: [REDACTED:email]', 'Second: [REDACTED:email]']);
    expect(finishes).toEqual(['stop', 'stop']);
    expect(order).toEqual(['finish:0', 'usage:3', 'finish:1', 'usage:8']);
  });
});
