import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * A stream its client leaves before the end is charged what its upstream had already reported: Anthropic's
 * message_start counts the prompt with its cache reads and writes, Gemini's events carry the prompt and its cached
 * part from the first one on. The prompt is charged as reported, at the cache prices, not re-counted at the input
 * price; the gateway counts only the output the upstream had not. The client's stream is what it would be
 * anyway: no early usage chunk on /v1, the upstream's own bytes on /anthropic.
 */

const PRICE = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 };
const CACHE_READ = 100_000;
const CACHE_WRITE = 2_000;
const GEMINI_CACHED = 80_000;

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  tg = await startGateway({
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream', prices: { 'claude-priced': PRICE } },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key', prices: { 'gemini-priced': PRICE } },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await anthropic.close();
  await gemini.close();
});
beforeEach(() => {
  anthropic.reset();
  gemini.reset();
});

interface LogEntry {
  status: number;
  cancelled: boolean;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
  estimated: boolean;
}

async function newKey(name: string): Promise<{ id: string; key: string }> {
  return (await jsonRequest(tg.url, 'POST', '/api/keys', { name, budget: 100 })).body as { id: string; key: string };
}

async function logOf(requestId: string): Promise<LogEntry> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const found = await jsonRequest(tg.url, 'GET', `/api/logs/${requestId}`);
    if (found.status === 200) return found.body as LogEntry;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`no log entry for ${requestId}`);
}

async function spendOf(keyId: string): Promise<number> {
  return ((await jsonRequest(tg.url, 'GET', `/api/keys/${keyId}`)).body as { spend: number }).spend;
}

/** The cost at PRICE of a prompt with its cached parts, and an output. */
function priced(prompt: number, read: number, write: number, output: number): number {
  return ((prompt - read - write) * PRICE.input_per_mtok + read * PRICE.cached_input_per_mtok + write * PRICE.cache_write_per_mtok + output * PRICE.output_per_mtok) / 1e6;
}

/** Checks the log and the key's spend against the upstream's reported prompt figures, priced with the cache prices. */
async function expectCharged(requestId: string, keyId: string, reported: { prompt: number; read: number; write: number }): Promise<void> {
  const entry = await logOf(requestId);
  expect(entry).toMatchObject({ status: 499, cancelled: true, prompt_tokens: reported.prompt, cached_tokens: reported.read, cache_write_tokens: reported.write });
  // The answer's first words, counted by the gateway (the upstream had not counted them yet).
  expect(entry.completion_tokens).toBeGreaterThan(0);
  expect(entry.completion_tokens).toBeLessThan(10);
  const cost = priced(reported.prompt, reported.read, reported.write, entry.completion_tokens);
  expect(entry.cost_usd).toBeCloseTo(cost, 9);
  expect(await spendOf(keyId)).toBeCloseTo(cost, 9);
}

describe('a stream the client leaves after the first words', () => {
  it('Anthropic SDK on /anthropic: charged the prompt and cache message_start reported, the stream passed through as it came', async () => {
    const { id, key } = await newKey('anthropic-native');
    anthropic.setCacheTokens(CACHE_READ, CACHE_WRITE);
    anthropic.enqueue({ kind: 'slow-chunks', delayMs: 300 });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key, maxRetries: 0 });
    const controller = new AbortController();
    const { data: stream, response } = await client.messages
      .create({ model: 'anthropic/claude-priced', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'tell me a long story please' }] }, { signal: controller.signal })
      .withResponse();
    const seen: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      if (event.type === 'content_block_delta') {
        controller.abort();
        break;
      }
    }
    const sent = anthropic.sent.at(-1)?.frames ?? [];
    const start = JSON.parse((sent[0] ?? '').split('\ndata: ')[1] ?? '{}') as { message: { usage: Record<string, number> } };
    // The client's message_start is the upstream's, usage and all; nothing came before the text.
    expect(seen[0]).toMatchObject({ type: 'message_start', message: { usage: start.message.usage } });
    expect(seen.map((event) => event.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    const usage = start.message.usage;
    expect(usage).toMatchObject({ cache_read_input_tokens: CACHE_READ, cache_creation_input_tokens: CACHE_WRITE });
    await expectCharged(response.headers.get('x-request-id') ?? '', id, {
      prompt: (usage.input_tokens ?? NaN) + CACHE_READ + CACHE_WRITE,
      read: CACHE_READ,
      write: CACHE_WRITE,
    });
  });

  it('Anthropic SDK on /anthropic with thinking: the thinking streamed before the cut is charged as output', async () => {
    const { id, key } = await newKey('anthropic-thinking');
    anthropic.setCacheTokens(0, 0);
    anthropic.enqueue({ kind: 'slow-chunks', delayMs: 300 });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key, maxRetries: 0 });
    const controller = new AbortController();
    // The scripted model thinks about the whole prompt: about 400 tokens of thinking before the answer's first word.
    const prompt = `please consider ${Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ')}`;
    const { data: stream, response } = await client.messages
      .create({ model: 'anthropic/claude-priced', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, stream: true, messages: [{ role: 'user', content: prompt }] }, { signal: controller.signal })
      .withResponse();
    let thinking = '';
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'thinking_delta') thinking += event.delta.thinking;
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        controller.abort();
        break;
      }
    }
    expect(thinking.length).toBeGreaterThan(2_000);
    const entry = await logOf(response.headers.get('x-request-id') ?? '');
    expect(entry).toMatchObject({ status: 499, cancelled: true, estimated: true });
    // message_start said 1 output token; the thinking the model had generated (and the client received) is counted.
    expect(entry.completion_tokens).toBeGreaterThan(400);
    expect(await spendOf(id)).toBeCloseTo(entry.cost_usd, 9);
    expect(entry.cost_usd).toBeGreaterThan((entry.completion_tokens * PRICE.output_per_mtok) / 1e6);
  });

  it('OpenAI SDK on /v1, Anthropic upstream: charged what message_start reported, and no usage reached the client', async () => {
    const { id, key } = await newKey('anthropic-translated');
    anthropic.setCacheTokens(CACHE_READ, CACHE_WRITE);
    anthropic.enqueue({ kind: 'slow-chunks', delayMs: 300 });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
    const controller = new AbortController();
    const { data: stream, request_id: requestId } = await client.chat.completions
      .create({ model: 'anthropic/claude-priced', stream: true, stream_options: { include_usage: true }, max_tokens: 100, messages: [{ role: 'user', content: 'tell me a long story please' }] }, { signal: controller.signal })
      .withResponse();
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.choices[0]?.delta.content) {
        controller.abort();
        break;
      }
    }
    // Usage comes last, when the stream ends; one cut short has none.
    expect(chunks.every((chunk) => chunk.usage === null || chunk.usage === undefined)).toBe(true);
    const usage = anthropic.sent.at(-1)?.message.usage as Record<string, number>;
    await expectCharged(requestId ?? '', id, { prompt: (usage.input_tokens ?? NaN) + CACHE_READ + CACHE_WRITE, read: CACHE_READ, write: CACHE_WRITE });
  });

  it("OpenAI SDK on /v1, Gemini upstream: charged the prompt and cached tokens of Gemini's first event, and no usage reached the client", async () => {
    const { id, key } = await newKey('gemini-translated');
    gemini.setUsage({ cachedContentTokenCount: GEMINI_CACHED });
    gemini.enqueue({ kind: 'slow-chunks', delayMs: 300 });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
    const controller = new AbortController();
    const { data: stream, request_id: requestId } = await client.chat.completions
      .create({ model: 'gemini/gemini-priced', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'tell me a long story please' }] }, { signal: controller.signal })
      .withResponse();
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.choices[0]?.delta.content) {
        controller.abort();
        break;
      }
    }
    expect(chunks.every((chunk) => chunk.usage === null || chunk.usage === undefined)).toBe(true);
    const first = gemini.streamed.at(-1)?.[0]?.usageMetadata as Record<string, number>;
    expect(first).toMatchObject({ cachedContentTokenCount: GEMINI_CACHED });
    expect(first.candidatesTokenCount).toBeUndefined();
    await expectCharged(requestId ?? '', id, { prompt: first.promptTokenCount ?? NaN, read: GEMINI_CACHED, write: 0 });
  });
});
