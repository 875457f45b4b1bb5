// A Bedrock stream (InvokeModelWithResponseStream for Claude, ConverseStream for the rest) is AWS's binary event
// stream, and one frame may hold a large event (a long text delta, a tool's whole input) that arrives over many
// network reads. Joining the pending bytes to each read copied such a frame hundreds of times: a 27 MB frame took
// 15-40 s to relay and held the event loop meanwhile, every other request on the gateway waiting. Here an upstream
// sends one such frame in 16 KiB writes, and the official SDKs must get the whole text promptly, /health answered
// all the while.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const codec = new EventStreamCodec(toUtf8, fromUtf8);
/** Text in the one frame: Claude's is base64 in its frame (27 MB), Converse's as it is; both under the 32 MiB limit. */
const CLAUDE_CHARS = 20_000_000;
const CONVERSE_CHARS = 28_000_000;
/** Far above what relaying the frame takes in linear time here (about 2 s), far below what the copying took. */
const PROMPT_MS = 8_000;
/** Far above a /health answer's time while the frame is read and relayed in linear time (well under a second). */
const HEALTH_MS = 2_000;

function frame(eventType: string, payload: unknown): Buffer {
  const headers = {
    ':message-type': { type: 'string' as const, value: 'event' },
    ':event-type': { type: 'string' as const, value: eventType },
    ':content-type': { type: 'string' as const, value: 'application/json' },
  };
  return Buffer.from(codec.encode({ headers, body: fromUtf8(JSON.stringify(payload)) }));
}

/** Claude's stream on InvokeModel: each Anthropic event base64 in a chunk frame. */
const claude = (event: unknown): Buffer => frame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') });

function claudeFrames(text: string): Buffer[] {
  return [
    claude({ type: 'message_start', message: { id: 'msg_big', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 0 } } }),
    claude({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    claude({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    claude({ type: 'content_block_stop', index: 0 }),
    claude({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }),
    claude({ type: 'message_stop' }),
  ];
}

function converseFrames(text: string): Buffer[] {
  return [
    frame('messageStart', { role: 'assistant' }),
    frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } }),
    frame('contentBlockStop', { contentBlockIndex: 0 }),
    frame('messageStop', { stopReason: 'end_turn' }),
    frame('metadata', { usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 }, metrics: { latencyMs: 1 } }),
  ];
}

let upstream: Server;
let tg: RunningGateway;

beforeAll(async () => {
  const streams = { claude: Buffer.concat(claudeFrames('x'.repeat(CLAUDE_CHARS))), converse: Buffer.concat(converseFrames('x'.repeat(CONVERSE_CHARS))) };
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      const bytes = req.url?.includes('anthropic.claude') ? streams.claude : streams.converse;
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      for (let at = 0; at < bytes.length && !res.destroyed; at += 16_384) {
        if (!res.write(bytes.subarray(at, at + 16_384))) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { bedrock: { base_url: url, api_key: 'AKIDTESTBEDROCK:secret', region: 'eu-west-1' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

/** Runs `work` while polling /health back to back; the work's result, its time and the slowest poll. */
async function whilePolling<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; slowestHealth: number }> {
  let done = false;
  let slowest = 0;
  const poll = (async () => {
    while (!done) {
      const started = performance.now();
      await fetch(`${tg.url}/health`);
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const started = performance.now();
  try {
    const value = await work();
    return { value, ms: performance.now() - started, slowestHealth: slowest };
  } finally {
    done = true;
    await poll;
  }
}

describe('a Bedrock stream event of 20-30 MB in one frame', () => {
  it('reaches an Anthropic client of Claude whole and promptly (InvokeModelWithResponseStream, passed through)', async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 60_000 });
    const { value, ms, slowestHealth } = await whilePolling(async () => {
      const stream = client.messages.stream({ model: 'bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
      return stream.finalMessage();
    });
    const block = value.content[0];
    expect(block?.type === 'text' ? block.text.length : 0).toBe(CLAUDE_CHARS);
    expect(value.stop_reason).toBe('end_turn');
    expect(ms).toBeLessThan(PROMPT_MS);
    expect(slowestHealth).toBeLessThan(HEALTH_MS);
  }, 120_000);

  it('reaches an OpenAI-format client of another model whole and promptly (ConverseStream)', async () => {
    // Read raw: the OpenAI SDK's own line decoder takes seconds over a 20 MB line, which is the client's time, not ours.
    const { value, ms, slowestHealth } = await whilePolling(async () => {
      const response = await fetch(`${tg.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bedrock/amazon.nova-pro-v1:0', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const events = (await response.text()).split('\n\n').filter((event) => event.startsWith('data: {'));
      return events.map((event) => (JSON.parse(event.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
    });
    expect(value.length).toBe(CONVERSE_CHARS);
    expect(ms).toBeLessThan(PROMPT_MS);
    expect(slowestHealth).toBeLessThan(HEALTH_MS);
  }, 120_000);
});
