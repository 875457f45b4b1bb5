import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A streamed answer whose upstream is silent (a reasoning model thinking) gets keep-alives every
 * settings.stream_keepalive_ms, so a proxy's idle timeout does not cut it: `event: ping` on /anthropic, an SSE
 * comment on /v1, /litellm and /genai. The official SDKs skip them and parse the answer as ever; request logs and
 * the cache never see them.
 */

const INTERVAL = 100;
const SILENCE = 450;

let openai: ScriptedUpstream;
let stalling: ScriptedUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  [openai, stalling, gemini] = await Promise.all([
    startOpenAIUpstream({ apiKey: 'sk-openai' }),
    startOpenAIUpstream({ apiKey: 'sk-openai' }),
    startGeminiUpstream({ apiKey: 'gemini-key' }),
  ]);
  tg = await startGateway({
    settings: { stream_keepalive_ms: INTERVAL, log_bodies: { enabled: true }, routing: { breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      stalling: { type: 'openai', base_url: `${stalling.url}/v1`, api_key: 'sk-openai', timeouts: { idle_ms: 350 } },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
    },
    routes: { thinker: { targets: [{ model: 'stalling/o3' }], fallbacks: ['openai/o3'] } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), stalling?.close(), gemini?.close()]);
});
beforeEach(() => {
  openai.reset();
  stalling.reset();
  gemini.reset();
});

const silent = { kind: 'silent-start', delayMs: SILENCE } as const;
const hi = [{ role: 'user' as const, content: 'hi' }];

/** A raw streamed POST: its status, its content type and the whole body as sent. */
async function raw(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

function count(text: string, what: string): number {
  return text.split(what).length - 1;
}

describe('keep-alives while the upstream is silent', () => {
  it('/v1: SSE comments before the first event, which the OpenAI SDK skips', async () => {
    openai.enqueue(silent);
    const first = await raw('/v1/chat/completions', { model: 'openai/o3', messages: hi, stream: true });
    expect(first.status).toBe(200);
    expect(first.type).toContain('text/event-stream');
    expect(count(first.text, ': keep-alive\n\n')).toBeGreaterThanOrEqual(2);
    expect(first.text.indexOf(': keep-alive')).toBeLessThan(first.text.indexOf('data: '));
    expect(first.text.endsWith('data: [DONE]\n\n')).toBe(true);

    openai.enqueue(silent);
    const client = new OpenAI({ apiKey: 'none', baseURL: `${tg.url}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'openai/o3', messages: hi, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    const direct = await new OpenAI({ apiKey: 'sk-openai', baseURL: `${openai.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'o3', messages: hi });
    expect(text).toBe(direct.choices[0]?.message.content);
  });

  it('/v1: between events too, after the first byte', async () => {
    openai.enqueue({ kind: 'slow-chunks', delayMs: 250 });
    const { text } = await raw('/v1/chat/completions', { model: 'openai/o3', messages: hi, stream: true });
    // The role-only opening chunk waits for the first words (see stream-opening-failover.test.ts); after them, the
    // 250 ms between events still get keep-alives.
    const firstData = text.indexOf('data: ');
    expect(firstData).toBeGreaterThanOrEqual(0);
    expect(count(text.slice(firstData), ': keep-alive\n\n')).toBeGreaterThanOrEqual(2);
  });

  it('/litellm: SSE comments', async () => {
    openai.enqueue(silent);
    const { status, text } = await raw('/litellm/chat/completions', { model: 'openai/o3', messages: hi, stream: true });
    expect(status).toBe(200);
    expect(count(text, ': keep-alive\n\n')).toBeGreaterThanOrEqual(2);
  });

  it('/anthropic from an OpenAI model: event: ping as Anthropic sends it, which the Anthropic SDK skips', async () => {
    openai.enqueue(silent);
    const body = { model: 'openai/o3', max_tokens: 100, messages: hi, stream: true };
    const { status, text } = await raw('/anthropic/v1/messages', body, { 'anthropic-version': '2023-06-01' });
    expect(status).toBe(200);
    expect(count(text, 'event: ping\ndata: {"type": "ping"}\n\n')).toBeGreaterThanOrEqual(2);
    expect(text).toContain('event: message_stop');

    openai.enqueue(silent);
    const client = new Anthropic({ apiKey: 'none', baseURL: `${tg.url}/anthropic`, maxRetries: 0 });
    const message = await client.messages.stream({ model: 'openai/o3', max_tokens: 100, messages: hi }).finalMessage();
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content[0]?.type).toBe('text');
  });

  it('/genai: SSE comments, which the Google GenAI SDK skips', async () => {
    gemini.enqueue(silent);
    const { status, text } = await raw('/genai/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect(status).toBe(200);
    expect(count(text, ': keep-alive\n\n')).toBeGreaterThanOrEqual(2);

    gemini.enqueue(silent);
    const ai = new GoogleGenAI({ apiKey: 'none', httpOptions: { baseUrl: `${tg.url}/genai` } });
    let streamed = '';
    for await (const event of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' })) streamed += event.text ?? '';
    const whole = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
    expect(streamed).toBe(whole.text);
  });

  it('keeps a stream alive through a fallback: the silent target stalls out, the next one answers in the same response', async () => {
    stalling.enqueue({ kind: 'stall-after', chunks: 0 });
    const seen = await raw('/v1/chat/completions', { model: 'thinker', messages: hi, stream: true });
    expect(seen.status).toBe(200);
    expect(count(seen.text.slice(0, seen.text.indexOf('data: ')), ': keep-alive\n\n')).toBeGreaterThanOrEqual(2);
    expect(seen.text.endsWith('data: [DONE]\n\n')).toBe(true);

    stalling.enqueue({ kind: 'stall-after', chunks: 0 });
    const client = new OpenAI({ apiKey: 'none', baseURL: `${tg.url}/v1`, maxRetries: 0 });
    const response = await client.chat.completions.create({ model: 'thinker', messages: hi, stream: true }).withResponse();
    let text = '';
    for await (const chunk of response.data) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(stalling.calls.length).toBe(2);
    expect(openai.calls.length).toBe(2);
  });

  it('a stream opened by keep-alives whose every target then fails ends with the error event, which the SDKs raise', async () => {
    // Every attempt (the retries too) stalls after the headers.
    stalling.setMode({ kind: 'stall-after', chunks: 0 });
    const seen = await raw('/v1/chat/completions', { model: 'stalling/o3', messages: hi, stream: true });
    expect(seen.status).toBe(200);
    expect(seen.text).toContain(': keep-alive\n\n');
    expect(seen.text).toMatch(/data: \{"error":\{.*"code":"upstream_timeout"/);
    expect(seen.text).not.toContain('[DONE]');

    const client = new Anthropic({ apiKey: 'none', baseURL: `${tg.url}/anthropic`, maxRetries: 0 });
    await expect(client.messages.stream({ model: 'stalling/o3', max_tokens: 100, messages: hi }).finalMessage()).rejects.toThrow(/idle|timed out|timeout/i);
  });

  it('keeps them out of the request log and its time to first token', async () => {
    openai.enqueue(silent);
    const response = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/o3', messages: hi, stream: true }),
    });
    const id = response.headers.get('x-request-id');
    expect(await response.text()).toContain(': keep-alive');
    let entry: { response_body?: string; first_token_ms?: number } | null = null;
    for (let i = 0; i < 100 && !entry; i++) {
      const found = await jsonRequest(tg.url, 'GET', `/api/logs/${id}`);
      if (found.status === 200) entry = found.body as { response_body?: string; first_token_ms?: number };
      else await new Promise((done) => setTimeout(done, 50));
    }
    expect(entry?.response_body).toBeTruthy();
    expect(entry?.response_body).not.toContain('keep-alive');
    // Nor are they the answer's first token.
    expect(entry?.first_token_ms).toBeGreaterThanOrEqual(SILENCE - 50);
  });

  it('sends none when the upstream is quick, nor for a whole answer', async () => {
    const { text } = await raw('/v1/chat/completions', { model: 'openai/o3', messages: hi, stream: true });
    expect(text).not.toContain('keep-alive');
    openai.enqueue({ kind: 'slow-chunks', delayMs: SILENCE });
    const whole = await raw('/v1/chat/completions', { model: 'openai/o3', messages: hi });
    expect(whole.type).toContain('application/json');
    expect(JSON.parse(whole.text).object).toBe('chat.completion');
  });
});

describe('settings.stream_keepalive_ms', () => {
  it('0 turns keep-alives off, applied live', async () => {
    expect((await jsonRequest(tg.url, 'PATCH', '/api/config', { settings: { stream_keepalive_ms: 0 } })).status).toBe(200);
    try {
      openai.enqueue(silent);
      const { text } = await raw('/v1/chat/completions', { model: 'openai/o3', messages: hi, stream: true });
      expect(text).not.toContain('keep-alive');
      expect(text).toContain('data: [DONE]');
    } finally {
      await jsonRequest(tg.url, 'PATCH', '/api/config', { settings: { stream_keepalive_ms: INTERVAL } });
    }
  });
});
