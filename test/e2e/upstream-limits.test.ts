// An upstream cannot make tollgate hold more than `max_response_bytes` of its answer: a body (or a stream
// event) past the limit ends the request with a clean 502 naming the setting, and the upstream connection
// is closed so the upstream stops sending.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';

const MiB = 1024 * 1024;

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  tg = await startGateway(
    openAIConfig(upstream.url, {
      // One attempt and no breaker: each test sees exactly one upstream call.
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: {
        openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' },
        // The same upstream with its own, small limit.
        tight: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test', max_response_bytes: MiB },
      },
    }),
  );
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi there' }];

/** Samples this process's RSS every few milliseconds while `work` runs; returns the peak growth in bytes. */
async function peakRssGrowth(work: () => Promise<unknown>): Promise<{ growth: number; result: unknown }> {
  global.gc?.();
  const before = process.memoryUsage.rss();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    const result = await work().catch((err: unknown) => err);
    peak = Math.max(peak, process.memoryUsage.rss());
    return { growth: peak - before, result };
  } finally {
    clearInterval(timer);
  }
}

describe('upstream answer size cap', () => {
  it('refuses a 200 MB non-streamed body at the default 32 MiB with a 502 naming the setting, without holding it', async () => {
    upstream.enqueue({ kind: 'huge-body', bytes: 200 * MiB });
    const { growth, result } = await peakRssGrowth(() => tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }));
    console.log(`huge non-streamed body: peak RSS growth ${(growth / MiB).toFixed(1)} MiB`);
    expect(result).toBeInstanceOf(OpenAI.InternalServerError);
    const error = result as InstanceType<typeof OpenAI.InternalServerError>;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_response_too_large');
    expect(error.type).toBe('upstream_error');
    expect(error.message).toContain('32 MiB (33554432 bytes)');
    expect(error.message).toContain('providers.openai.max_response_bytes');
    expect(error.message).toContain('settings.max_response_bytes');
    // The gateway closed the upstream connection: the upstream did not get to write its 200 MB.
    expect(await upstream.waitForClose(0, 2_000)).toBe(true);
    // Without the cap this took well over 200 MB (chunks, their concatenation, the string); with it, the
    // gateway holds at most the 32 MiB it read.
    expect(growth).toBeLessThan(120 * MiB);
  });

  it('refuses a stream that sends 200 MB without a newline (one endless event) at the limit', async () => {
    upstream.enqueue({ kind: 'huge-body', bytes: 200 * MiB });
    const { growth, result } = await peakRssGrowth(async () => {
      const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true });
      for await (const _chunk of stream) {
        // nothing arrives: the one event never ends
      }
    });
    console.log(`endless stream event: peak RSS growth ${(growth / MiB).toFixed(1)} MiB`);
    expect(result).toBeInstanceOf(OpenAI.APIError);
    const error = result as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_response_too_large');
    expect(error.message).toContain('one event of the upstream stream');
    expect(error.message).toContain('settings.max_response_bytes');
    expect(await upstream.waitForClose(0, 2_000)).toBe(true);
    expect(growth).toBeLessThan(120 * MiB);
  });

  it('applies a provider\'s own max_response_bytes, and answers within it are served', async () => {
    const ok = await tg.client.chat.completions.create({ model: 'tight/gpt-4o-mini', messages });
    expect(ok.choices[0]?.message.content).toBeTruthy();

    upstream.enqueue({ kind: 'huge-body', bytes: 8 * MiB });
    const request = tg.client.chat.completions.create({ model: 'tight/gpt-4o-mini', messages });
    await expect(request).rejects.toMatchObject({ status: 502, code: 'upstream_response_too_large' });
    await expect(request).rejects.toThrow(/limit of 1 MiB \(1048576 bytes\).*providers\.tight\.max_response_bytes/);
    expect(await upstream.waitForClose(1, 2_000)).toBe(true);
  });

  it('refuses a body whose content-length is over the limit before reading it', async () => {
    upstream.enqueue({ kind: 'huge-body', bytes: 64 * MiB, declare: true });
    const started = Date.now();
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await expect(request).rejects.toMatchObject({ status: 502, code: 'upstream_response_too_large' });
    await expect(request).rejects.toThrow(/content-length 67108\d+/);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await upstream.waitForClose(0, 2_000)).toBe(true);
  });

  it('serves normal answers, streamed and not, under the default limit', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(completion.choices[0]?.message.content).toBeTruthy();
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).not.toBe('');
  });

  it('reads a huge upstream error body only up to 64 KiB and keeps the upstream status', async () => {
    const body = `<html><head><title>503 Service Temporarily Unavailable</title></head><body>${'x'.repeat(4 * MiB)}</body></html>`;
    upstream.enqueue({ kind: 'raw', status: 503, headers: { 'content-type': 'text/html' }, body });
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await expect(request).rejects.toMatchObject({ status: 503 });
    const error = (await request.catch((err: unknown) => err)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.message).toContain('503 Service Temporarily Unavailable');
    expect(error.message.length).toBeLessThan(400);
  });
});
