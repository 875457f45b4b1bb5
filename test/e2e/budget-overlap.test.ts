import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Budgets under requests that overlap: the budget check reads the spend as committed when the request reaches it
 * (not as the auth stage read it), and the alert lines a charge crosses are judged on the committed spend.
 * `priced-model` costs $1 a token, so dollars are tokens.
 */

const PRICES = { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 }, 'mod-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };
let upstream: ScriptedUpstream;
let tg: RunningGateway;

async function start(extra: Partial<ConfigInput> = {}, chunkDelayMs = 0): Promise<void> {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs });
  upstream.setMode({ kind: 'reply', pieces: Array.from({ length: 40 }, (_, i) => ` w${i}`) });
  tg = await startGateway({
    ...extra,
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
  });
}

afterEach(async () => {
  await tg.stop();
  await upstream.close();
});

async function call(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${tg.url}${path}`, { method: path.startsWith('/api') && body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json', ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text; // a stream
  }
  return { status: response.status, body: parsed as any };
}

async function newKey(fields: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const created = await call('/api/keys', fields);
  expect(created.status).toBe(201);
  return created.body as { id: string; key: string };
}

describe('a budget and requests that overlap', () => {
  it('a request that waited on a guardrail after auth sees the spend committed meanwhile: the budget is not overspent', async () => {
    // The input guardrail's classifier answers after 400 ms: the second request passes auth while the first is
    // being classified, and reaches the budget check after the first was charged.
    await start({ guardrails: { rules: [{ name: 'mod', kind: 'moderation', model: 'openai/slow-headers-400', action: 'block', on_error: 'allow', applies_to: 'input' }] } });
    const key = await newKey({ name: 'overlap', budget: 60 });
    const send = () => call('/v1/chat/completions', { model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 40 }, { authorization: `Bearer ${key.key}` });
    const first = send();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const second = send();
    const statuses = [(await first).status, (await second).status];
    expect(statuses).toEqual([200, 429]);
    const view = await call(`/api/keys/${key.id}`, undefined);
    expect(view.body.spend).toBeGreaterThan(0);
    expect(view.body.spend).toBeLessThanOrEqual(60);
  });

  it('two streams charged together each cross their own budget lines (50% and 80% of 100 at 45 + 45)', async () => {
    await start({}, 20);
    const crossed: Array<{ threshold: number; spend: number }> = [];
    tg.gateway.bus.on('budget.threshold', (event) => crossed.push({ threshold: event.threshold, spend: event.spend }));
    const key = await newKey({ name: 'lines', budget: 100 });
    const send = () =>
      call('/v1/chat/completions', { model: 'openai/priced-model', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi there' }], max_tokens: 40 }, { authorization: `Bearer ${key.key}` });
    const answers = await Promise.all([send(), send()]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const view = await call(`/api/keys/${key.id}`, undefined);
    expect(view.body.spend).toBeGreaterThanOrEqual(80);
    expect(crossed.map((event) => event.threshold).sort()).toEqual([50, 80]);
  });

  it('a file part is reserved by its size: concurrent requests with a PDF cannot overspend the budget', async () => {
    await start();
    const pdf = `data:application/pdf;base64,${'JVBERi0xLjQK'.repeat(2_000)}`;
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'summarise' }, { type: 'file', file: { filename: 'report.pdf', file_data: pdf } }] }];
    for (const budget of [1_000, 7_000]) {
      const key = await newKey({ name: `file-${budget}`, budget });
      // The provider bills the file: 300 prompt tokens a request ($300).
      for (let i = 0; i < 10; i++) upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 300, completion_tokens: 5, total_tokens: 305 } });
      const answers = await Promise.all(Array.from({ length: 10 }, () => call('/v1/chat/completions', { model: 'openai/priced-model', messages, max_tokens: 5 }, { authorization: `Bearer ${key.key}` })));
      const admitted = answers.filter((answer) => answer.status === 200).length;
      expect(admitted).toBe(budget === 1_000 ? 0 : 1);
      expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
      const view = await call(`/api/keys/${key.id}`, undefined);
      expect(view.body.spend).toBeLessThanOrEqual(budget);
      upstream.reset();
      upstream.setMode({ kind: 'reply', pieces: Array.from({ length: 40 }, (_, i) => ` w${i}`) });
    }
  });

  it("charges a guardrail's classifier calls to the request's key, and makes none once its budget cannot cover them", async () => {
    await start({ guardrails: { rules: [{ name: 'mod', kind: 'moderation', model: 'openai/mod-model', action: 'block', on_error: 'allow', applies_to: 'input' }] } });
    const send = (key: string) => call('/v1/chat/completions', { model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 400 }, { authorization: `Bearer ${key}` });
    // A budget that covers neither the classifier's call nor the request: nothing reaches the upstream.
    const poor = await newKey({ name: 'poor', budget: 10 });
    for (let i = 0; i < 3; i++) expect((await send(poor.key)).status).toBe(429);
    expect(upstream.calls).toHaveLength(0);
    // A budget that covers both: the key pays for the classifier's call too, counted as one request.
    const rich = await newKey({ name: 'rich', budget: 100_000 });
    expect((await send(rich.key)).status).toBe(200);
    const models = upstream.calls.map((entry) => (entry.body as { model: string }).model).sort();
    expect(models).toEqual(['mod-model', 'priced-model']);
    const view = await call(`/api/keys/${rich.id}`, undefined);
    expect(view.body.requests).toBe(1);
    // The log entries (written just after the answers) say what each call cost.
    let charged: Array<{ model: string; cost_usd: number; status: number }> = [];
    for (let i = 0; i < 80 && charged.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      const logs = (await call('/api/logs?limit=20', undefined)).body.data as Array<{ model: string; cost_usd: number; status: number }>;
      charged = logs.filter((entry) => entry.status === 200 && (entry.model === 'openai/mod-model' || entry.model === 'openai/priced-model'));
    }
    expect(charged).toHaveLength(2);
    const total = charged.reduce((sum, entry) => sum + entry.cost_usd, 0);
    expect(view.body.spend).toBeCloseTo(total, 6);
  });
});
