import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// "A streaming request moves on only until its first byte reached the client, never after." A /genai client of an
// OpenAI-format or Anthropic upstream gets nothing for the stream's opening event (OpenAI's role-only chunk,
// Anthropic's message_start): Gemini's format has no such event. An upstream that sent only that and then stalled or
// broke off (Anthropic's documented overloaded_error right after message_start) ended the request with an error
// status though the client had received nothing and the route had a healthy fallback.
let primary: ScriptedUpstream;
let claude: AnthropicUpstream;
let fallback: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  [primary, fallback, claude] = await Promise.all([startOpenAIUpstream(), startOpenAIUpstream(), startAnthropicUpstream()]);
  tg = await startGateway({
    // No keep-alives: the client receives nothing at all before the first Gemini event.
    settings: { stream_keepalive_ms: 0 },
    providers: {
      primary: { type: 'openai', base_url: `${primary.url}/v1`, api_key: 'sk-primary', timeouts: { idle_ms: 300 } },
      claude: { type: 'anthropic', base_url: claude.url, api_key: 'sk-claude' },
      spare: { type: 'openai', base_url: `${fallback.url}/v1`, api_key: 'sk-spare' },
    },
    routes: {
      chat: { targets: [{ model: 'primary/gpt-x', weight: 1 }], fallbacks: ['spare/gpt-y'], breaker: { enabled: false } },
      claude: { targets: [{ model: 'claude/claude-x', weight: 1 }], fallbacks: ['spare/gpt-y'], breaker: { enabled: false } },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([primary?.close(), fallback?.close(), claude?.close()]);
});
beforeEach(() => {
  primary.reset();
  fallback.reset();
  claude.reset();
});

async function streamedText(model: string): Promise<string> {
  let text = '';
  for await (const event of await ai.models.generateContentStream({ model, contents: 'hi' })) text += event.text ?? '';
  return text;
}

describe('a /genai stream whose upstream fails after an opening event the client never saw', () => {
  it('moves on to the fallback when the OpenAI-format upstream stalls after its role-only chunk', async () => {
    primary.setMode({ kind: 'stall-after', chunks: 1 });
    expect(await streamedText('chat')).toBe('echo: hi');
    expect(primary.calls).toHaveLength(1);
    expect(fallback.calls).toHaveLength(1);
  });

  it('moves on to the fallback when the OpenAI-format upstream breaks off after its role-only chunk', async () => {
    primary.setMode({ kind: 'break-after', chunks: 1 });
    expect(await streamedText('chat')).toBe('echo: hi');
    expect(fallback.calls).toHaveLength(1);
  });

  it("moves on to the fallback on Anthropic's overloaded_error right after message_start", async () => {
    claude.setMode({ kind: 'stream-error', after: 1, type: 'overloaded_error', message: 'Overloaded' });
    expect(await streamedText('claude')).toBe('echo: hi');
    expect(claude.calls).toHaveLength(1);
    expect(fallback.calls).toHaveLength(1);
  });

  it('still never moves on once the client got a byte of the answer', async () => {
    primary.setMode({ kind: 'stall-after', chunks: 2 });
    const stream = await ai.models.generateContentStream({ model: 'chat', contents: 'hi' });
    let text = '';
    const failure = await (async () => {
      for await (const event of stream) text += event.text ?? '';
    })().catch((err: unknown) => err);
    expect(text).toBe('echo:');
    expect(String(failure)).toMatch(/stalled/);
    expect(fallback.calls).toHaveLength(0);
  });
});
