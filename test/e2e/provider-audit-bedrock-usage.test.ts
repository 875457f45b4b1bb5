// Converse's usage (TokenUsage: inputTokens, outputTokens, totalTokens, all required integers) read from a hostile or
// broken upstream: counts that are not numbers (strings, as a proxy re-encoding the JSON may write them) or missing.
// Each was read as 0, so the gateway charged $0 for an answer the client got in full: a key's budget never moved.
// Usage that is not Converse's is no usage: the gateway counts the request itself, as for a stream cut before its end.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const MODEL = 'bedrock/amazon.nova-pro-v1:0';

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

async function lastLog(matches: (entry: any) => boolean): Promise<any> {
  // Without a gateway key the log entry is written after the answer; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as any;
    if (body.data?.[0] && matches(body.data[0])) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

const HOSTILE: Array<[string, Record<string, unknown>]> = [
  ['counts as strings', { inputTokens: '1200', outputTokens: '300', totalTokens: '1500' }],
  ['no counts', {}],
  ['no output count', { inputTokens: 1200, totalTokens: 1200 }],
];

describe('a Converse answer whose usage is not Converse\'s', () => {
  for (const stream of [false, true]) {
    it.each(HOSTILE)(`is charged by the gateway's own count, not as free (%s, stream: ${stream})`, async (_, usage) => {
      upstream.enqueue({ kind: 'usage', usage });
      const content = `count me ${stream} ${JSON.stringify(usage)}`;
      let text = '';
      if (stream) {
        const chunks = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], stream: true });
        for await (const chunk of chunks) text += chunk.choices[0]?.delta.content ?? '';
      } else {
        const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }] });
        text = completion.choices[0]?.message.content ?? '';
      }
      expect(text).toBe(`echo: ${content}`);
      const log = await lastLog((entry) => entry.model === MODEL && entry.stream === stream && entry.status === 200);
      expect(log.prompt_tokens).toBeGreaterThan(0);
      expect(log.completion_tokens).toBeGreaterThan(0);
      expect(log.cost_usd).toBeGreaterThan(0);
      expect(log.estimated).toBe(true);
    });
  }
});
