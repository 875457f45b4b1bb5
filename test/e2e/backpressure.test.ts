import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequestContext } from '../../src/core/context.js';
import type { ResponseEvent } from '../../src/core/canonical.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  // Chunks 10 ms apart arrive in separate reads, so a paused read is visible as a gap.
  upstream = await startOpenAIUpstream({ apiKey: null, chunkDelayMs: 10 });
  tg = await startGateway({ providers: { lab: { type: 'openai', base_url: `${upstream.url}/v1` } } });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

describe('backpressure', () => {
  it('stops reading the upstream while the client cannot take more, and resumes without losing a chunk', async () => {
    const config = tg.gateway.configService.current();
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    const ctx = createRequestContext({
      dialect: 'openai',
      config,
      request: { model: 'lab/m', messages: [{ role: 'user', content: words }], stream: true },
    });
    const arrivals: number[] = [];
    let release: () => void = () => undefined;
    let blocked = true;
    const gate = new Promise<void>((resolve) => {
      release = () => {
        blocked = false;
        resolve();
      };
    });
    // The client is "full" from the first chunk it got on, until released. (The stream's role-only opening chunk is held
    // until the first words come, so it is the first read with words that the client gets, and then the upstream waits.)
    ctx.clientReady = () => (blocked && arrivals.length > 0 ? gate : null);

    let text = '';
    const done = new Promise<void>((resolve, reject) => {
      tg.gateway.pipelineFor(config).execute(ctx).subscribe({
        next(event: ResponseEvent) {
          if (event.kind !== 'chunk') return;
          arrivals.push(Date.now());
          const delta = (event.chunk.choices[0] as { delta?: { content?: string } } | undefined)?.delta;
          text += delta?.content ?? '';
        },
        error: reject,
        complete: resolve,
      });
    });

    await new Promise((resolve) => setTimeout(resolve, 400));
    const whileBlocked = arrivals.length;
    // Without backpressure all ~33 chunks (10 ms apart) would be here by now.
    expect(whileBlocked).toBeGreaterThan(0);
    expect(whileBlocked).toBeLessThan(5);
    release();
    await done;
    expect(text).toBe(`echo: ${words}`);
    expect(arrivals.length).toBeGreaterThan(whileBlocked + 25);
  });
});
