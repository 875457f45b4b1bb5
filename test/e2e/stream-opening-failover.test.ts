import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Anthropic documents that a stream may fail after its 200 (an `error` event; overloaded_error when it is busy), and
// it often comes right after message_start, before a word of the answer. A stream's opening events (message_start,
// OpenAI's role-only chunk) are held back until the first event that says something: an error right after them moves
// the request on to its retry or fallback, whatever the client's format, where writing them at once held the request
// to the failing target (the client got the error inside its stream, and SDKs do not retry that).
let claude: AnthropicUpstream;
let spareClaude: AnthropicUpstream;
let gpt: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  [claude, spareClaude, gpt] = await Promise.all([startAnthropicUpstream(), startAnthropicUpstream(), startOpenAIUpstream()]);
  tg = await startGateway({
    settings: { stream_keepalive_ms: 0 },
    providers: {
      claude: { type: 'anthropic', base_url: claude.url, api_key: 'sk-claude' },
      'claude-spare': { type: 'anthropic', base_url: spareClaude.url, api_key: 'sk-claude-spare' },
      gpt: { type: 'openai', base_url: `${gpt.url}/v1`, api_key: 'sk-gpt' },
    },
    routes: {
      claude: { targets: [{ model: 'claude/claude-sonnet-4-5', weight: 1 }], fallbacks: ['claude-spare/claude-sonnet-4-5'], breaker: { enabled: false } },
      'claude-then-gpt': { targets: [{ model: 'claude/claude-sonnet-4-5', weight: 1 }], fallbacks: ['gpt/gpt-4o'], breaker: { enabled: false } },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([claude?.close(), spareClaude?.close(), gpt?.close()]);
});
beforeEach(() => {
  claude.reset();
  spareClaude.reset();
  gpt.reset();
});

const overloadedAfterStart = { kind: 'stream-error', after: 1, type: 'overloaded_error', message: 'Overloaded' } as const;

describe("an upstream's overloaded_error right after message_start", () => {
  it('an Anthropic client (native pass-through) gets the fallback’s whole stream, no error', async () => {
    claude.setMode(overloadedAfterStart);
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const events: string[] = [];
    const stream = client.messages.stream({ model: 'claude', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    stream.on('streamEvent', (event) => events.push(event.type));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'echo: hi' })]);
    // One message_start: the failed target's was never written.
    expect(events.filter((type) => type === 'message_start')).toHaveLength(1);
    expect(events).not.toContain('error');
    expect(claude.calls).toHaveLength(1);
    expect(spareClaude.calls).toHaveLength(1);
  });

  it('an OpenAI client (translated) gets the fallback’s stream, its role chunk once', async () => {
    claude.setMode(overloadedAfterStart);
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'claude-then-gpt', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let roles = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.role) roles++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('echo: hi');
    expect(roles).toBe(1);
    expect(claude.calls).toHaveLength(1);
    expect(gpt.calls).toHaveLength(1);
  });

  it('still never moves on once a word of the answer reached the client', async () => {
    claude.setMode({ kind: 'stream-error', after: 4, type: 'overloaded_error', message: 'Overloaded' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const failure = await client.messages.stream({ model: 'claude', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).finalMessage().catch((err: unknown) => err);
    expect(String(failure)).toMatch(/Overloaded/);
    expect(spareClaude.calls).toHaveLength(0);
  });
});
