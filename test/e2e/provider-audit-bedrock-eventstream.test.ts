// A Bedrock stream frame whose prelude is garbled (its total length changed, so the prelude CRC no longer matches)
// must fail the stream at once. Believing the length, the reader waited for a frame that never completes, swallowing
// every later frame of the answer: the client got no more output until the upstream ended the body, then an error
// that blamed an early end rather than the corrupt frame.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
/** How long the upstream keeps the body open after the garbled frame (a model still generating). */
const HOLD_MS = 4_000;

let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { bedrock: { base_url: upstream.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

async function lastLog(): Promise<unknown> {
  // Without a gateway key the log entry is written after the answer; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as { data?: unknown[] };
    if (body.data?.[0]) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe('a Bedrock event-stream frame with a garbled prelude', () => {
  it('fails the stream at once with a 502 naming the corrupt frame, the text before it kept', async () => {
    upstream.enqueue({ kind: 'garbled-prelude', afterEvents: 2, holdMs: HOLD_MS });
    const started = performance.now();
    const stream = await tg.client.chat.completions.create({ model: 'bedrock/amazon.nova-pro-v1:0', messages: [{ role: 'user', content: 'a garbled answer' }], stream: true });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().then(() => null, (err: unknown) => err);
    const ms = performance.now() - started;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/prelude fails its CRC/);
    expect(text.length).toBeGreaterThan(0);
    // Well before the upstream ends its body.
    expect(ms).toBeLessThan(HOLD_MS / 2);
    expect(await lastLog()).toMatchObject({ status: 502, error_code: 'invalid_upstream_response' });
  });
});
