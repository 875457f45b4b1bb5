import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A route's own target fails, its fallback fails, and the retry pass's call of the route's own target answers. What
// the request log's `fallback`, the `x-tollgate-fallback` header, the trace's `tollgate.fallback` and
// tollgate_fallbacks_total say of it: the first three whether the answer came from the fallback chain (it did not),
// the counter how many moves to a later target group were made (one), while `attempts` lists the fallback's try.

let primary: ScriptedUpstream;
let backup: ScriptedUpstream;
let otlp: OtlpReceiver;
let tg: RunningGateway;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [primary, backup] = await Promise.all([startOpenAIUpstream(), startOpenAIUpstream()]);
  otlp = new OtlpReceiver();
  await otlp.start();
  tg = await startGateway({
    settings: { tracing: { endpoint: `${otlp.url}/v1/traces` }, routing: { retry: { max_attempts: 3, initial_delay_ms: 5, max_delay_ms: 10 } } },
    providers: {
      primary: { type: 'openai', base_url: `${primary.url}/v1`, api_key: 'sk-primary' },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup' },
    },
    routes: { chain: { targets: [{ model: 'primary/m' }], fallbacks: ['backup/m'] } },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await Promise.all([primary?.close(), backup?.close(), otlp?.close()]);
});

function counter(text: string, name: string): number {
  const line = text.split('\n').find((row) => row.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

describe('a fallback tried and failed, then the route answering on the retry pass', () => {
  it('is logged, traced and answered as not served by a fallback, and counted as one move to the fallback', async () => {
    const before = counter(await (await fetch(`${tg.url}/metrics`)).text(), 'tollgate_fallbacks_total');
    primary.enqueue({ kind: 'error', status: 500 });
    backup.enqueue({ kind: 'error', status: 503 });
    const { data, response } = await tg.client.chat.completions.create({ model: 'chain', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-provider')).toBe('primary');
    expect(response.headers.get('x-tollgate-attempts')).toBe('3');
    expect(response.headers.get('x-tollgate-fallback')).toBe('false');
    const id = response.headers.get('x-request-id') as string;

    let entry: any = null;
    for (let i = 0; i < 50 && entry === null; i++) {
      const res = await fetch(`${tg.url}/api/logs/${id}`);
      if (res.status === 200) entry = await res.json();
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(entry).toMatchObject({ provider: 'primary', fallback: false });
    expect(entry.attempts.map((attempt: any) => [attempt.provider, attempt.status])).toEqual([
      ['primary', 500],
      ['backup', 503],
      ['primary', 200],
    ]);

    const spans = await otlp.waitFor((all) => all.some((span) => span.attributes['tollgate.request_id'] === id && span.attributes['tollgate.fallback'] !== undefined));
    const root = spans.find((span) => span.attributes['tollgate.request_id'] === id && span.attributes['tollgate.fallback'] !== undefined);
    expect(root?.attributes['tollgate.fallback']).toBe(false);

    const after = counter(await (await fetch(`${tg.url}/metrics`)).text(), 'tollgate_fallbacks_total');
    expect(after - before).toBe(1);
  });
});
