import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// An upstream error answer with `x-should-retry: false` (OpenAI's word, which its SDKs obey over the status) must not
// be retried on that target, by the gateway nor by the client's SDK; the route's other targets still get their turn.
let refusing: ScriptedUpstream;
let healthy: ScriptedUpstream;
let tg: RunningGateway | null = null;

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [refusing, healthy] = await Promise.all([startOpenAIUpstream(), startOpenAIUpstream()]);
});
afterAll(async () => {
  await Promise.all([refusing.close(), healthy.close()]);
});
afterEach(async () => {
  await tg?.stop();
  tg = null;
  refusing.reset();
  healthy.reset();
});

async function start(): Promise<RunningGateway> {
  tg = await startGateway({
    providers: {
      refusing: { type: 'openai', base_url: `${refusing.url}/v1`, api_key: 'sk-a' },
      healthy: { type: 'openai', base_url: `${healthy.url}/v1`, api_key: 'sk-b' },
    },
    settings: { routing: { retry: { max_attempts: 4, initial_delay_ms: 5, max_delay_ms: 10 } } },
    routes: { pair: { targets: [{ model: 'refusing/m' }], fallbacks: ['healthy/m'] } },
  });
  return tg;
}

describe('x-should-retry: false from the upstream', () => {
  it('calls that target once, and tells the client SDK not to retry either', async () => {
    const gateway = await start();
    refusing.setMode({ kind: 'error', status: 500, headers: { 'x-should-retry': 'false' } });
    // The official client with its default retries, which obey x-should-retry over the 500.
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'client-side-key', maxRetries: 2, timeout: 10_000 });
    const failure = await client.chat.completions.create({ model: 'refusing/m', messages }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    expect((failure as InstanceType<typeof OpenAI.APIError>).headers?.get('x-tollgate-attempts')).toBe('1');
    expect(refusing.calls).toHaveLength(1);
  });

  it('still moves on to the other targets, without calling the refusing one again', async () => {
    const gateway = await start();
    refusing.setMode({ kind: 'error', status: 503, headers: { 'x-should-retry': 'false' } });
    healthy.enqueue({ kind: 'error', status: 500 });
    const { data, response } = await gateway.client.chat.completions.create({ model: 'pair', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-provider')).toBe('healthy');
    // healthy's 500 sent the request into a retry pass: only healthy is retried there.
    expect(refusing.calls).toHaveLength(1);
    expect(healthy.calls).toHaveLength(2);
  });
});
