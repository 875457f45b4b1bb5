// OpenAI's legacy Completions API (`POST /v1/completions`, the SDK's `client.completions.create`, which FIM
// autocomplete tools and lm-eval-harness call) through the gateway: the client's body reaches the provider unchanged
// but for the model, the provider's `text_completion` answer (or stream events) reaches the client exactly but for the
// model name, and the call is a model call like any other: logged with usage and cost, charged to a key's budget,
// routed with fallbacks, checked by guardrails. Only providers that serve the API take it: another provider's model is
// a 400 in OpenAI's shape, and a route's other targets are left out. DeepSeek serves it under /beta.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { sentCompletions } from '../upstream/openai-completions-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const GPT = 'openai/gpt-3.5-turbo-instruct';
const CLAUDE = 'anthropic/claude-sonnet-4-5';
/** Prices per million tokens: a token costs a dollar, so the charge is the tokens. */
const PRICES = { 'gpt-3.5-turbo-instruct': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let guarded: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream', prices: PRICES },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      // DeepSeek's own base URL is its root: its completions (FIM) are at /beta/completions.
      deepseek: { base_url: openai.url, api_key: 'sk-openai-upstream' },
    },
    routes: {
      'claude-first': { targets: [{ model: CLAUDE }, { model: GPT }] },
    },
    cache: { mode: 'on' },
    guardrails: {
      rules: [
        { name: 'emails-in', kind: 'email', action: 'redact', applies_to: 'input' },
        { name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'input' },
      ],
    },
  });
  client = tg.client;
  // A gateway whose output rule holds and rewrites every answer (so none is the upstream's own text).
  guarded = await startGateway({
    providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream', prices: PRICES } },
    guardrails: { rules: [{ name: 'emails-out', kind: 'email', action: 'redact', applies_to: 'output' }] },
  });
});
afterAll(async () => {
  await tg?.stop();
  await guarded?.stop();
  await openai?.close();
  await anthropic?.close();
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

/** The request log entry of one request, once written. */
async function logOf(id: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as Record<string, any>;
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function completionCalls(): ScriptedUpstream['calls'] {
  return openai.calls.filter((call) => call.path === '/v1/completions' || call.path === '/beta/completions');
}

/** The last answer the upstream sent on this path. */
function lastSent() {
  const sent = sentCompletions(openai).at(-1);
  if (!sent) throw new Error('the upstream answered no completion');
  return sent;
}

/** Reads an SSE body into its `data:` payloads, as written. */
async function sseData(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => frame.slice('data: '.length));
}

/** The upstream's frames as the client is to get them: the model shown as the client's name. */
function asClientGets(frames: readonly string[], model: string): string[] {
  return frames.map((frame) => frame.slice('data: '.length, -2).replace(/"model":"[^"]*"/, `"model":${JSON.stringify(model)}`));
}

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client-side-key' }, body: JSON.stringify(body) });
}

describe('an OpenAI model', () => {
  it('gets the client’s body but for the model, and the client gets the upstream’s answer exactly but for the model name', async () => {
    const params = { model: GPT, prompt: 'def fib(n):', suffix: '\n    return a', echo: true, logprobs: 2, stop: ['\n\n'], max_tokens: 20, temperature: 0, seed: 7, user: 'u-1' };
    const { data, response } = await client.completions.create(params).withResponse();
    expect(response.status).toBe(200);
    const calls = completionCalls();
    expect(calls).toHaveLength(1);
    expect(calls[0]?.path).toBe('/v1/completions');
    expect(calls[0]?.body).toEqual({ ...params, model: 'gpt-3.5-turbo-instruct' });
    expect(calls[0]?.headers.authorization).toBe('Bearer sk-openai-upstream');
    const sent = lastSent().body as Record<string, any>;
    expect(data).toEqual({ ...sent, model: GPT });
    expect(data.object).toBe('text_completion');
    expect(data.id).toMatch(/^cmpl-/);
    expect(data.choices[0]?.text.startsWith('def fib(n):')).toBe(true);
    expect(data.choices[0]?.logprobs?.tokens?.length).toBeGreaterThan(0);
    // Byte for byte: the upstream's text with only the model changed.
    const raw = await (await post('/v1/completions', { model: GPT, prompt: 'Hello' })).text();
    expect(raw).toBe(JSON.stringify({ ...lastSent().body, model: GPT }));
  });

  it('serves the bare path /completions and token prompts', async () => {
    const response = await post('/completions', { model: GPT, prompt: [[1, 2, 3], [4, 5]], n: 2 });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, any>;
    expect(body.choices).toHaveLength(4);
    expect(completionCalls()[0]?.body.prompt).toEqual([[1, 2, 3], [4, 5]]);
  });

  it('streams the upstream’s own events verbatim, without the usage chunk the client did not ask for', async () => {
    const stream = await client.completions.create({ model: GPT, prompt: 'Once upon a time', stream: true });
    const texts: string[] = [];
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      expect(chunk.model).toBe(GPT);
      texts.push(chunk.choices.map((choice) => choice.text).join(''));
    }
    // The gateway asked for usage (to charge it); the client did not, and gets no usage chunk.
    expect(completionCalls()[0]?.body.stream_options).toEqual({ include_usage: true });
    const frames = lastSent().frames as string[];
    const withoutUsage = frames.filter((frame) => !frame.includes('"choices":[]') && frame !== 'data: [DONE]\n\n');
    expect(texts.join('')).toBe(withoutUsage.map((frame) => JSON.parse(frame.slice(6)).choices[0].text).join(''));

    const response = await post('/v1/completions', { model: GPT, prompt: 'Once upon a time', stream: true, echo: true });
    const data = await sseData(response);
    const upstream = lastSent().frames as string[];
    expect(data.at(-1)).toBe('[DONE]');
    expect(data.slice(0, -1)).toEqual(asClientGets(upstream.filter((frame) => !frame.includes('"choices":[]') && frame !== 'data: [DONE]\n\n'), GPT));
  });

  it('streams the usage chunk when the client asked for it', async () => {
    const response = await post('/v1/completions', { model: GPT, prompt: 'Once upon a time', stream: true, stream_options: { include_usage: true }, logprobs: 1 });
    expect(completionCalls()[0]?.body.stream_options).toEqual({ include_usage: true });
    const data = await sseData(response);
    const upstream = lastSent().frames as string[];
    expect(data.slice(0, -1)).toEqual(asClientGets(upstream.slice(0, -1), GPT));
    expect(data.at(-1)).toBe('[DONE]');
    const usage = JSON.parse(data.at(-2) as string);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.total_tokens).toBeGreaterThan(0);
  });

  it('is logged with the usage and cost the upstream reported, whole and streamed', async () => {
    const { response } = await client.completions.create({ model: GPT, prompt: 'Count the words here' }).withResponse();
    const usage = (lastSent().body as Record<string, any>).usage;
    const entry = await logOf(response.headers.get('x-request-id') as string);
    expect(entry.status).toBe(200);
    expect(entry.path).toBe('/v1/completions');
    expect(entry.provider).toBe('openai');
    expect(entry.dialect).toBe('openai');
    expect(entry.prompt_tokens).toBe(usage.prompt_tokens);
    expect(entry.completion_tokens).toBe(usage.completion_tokens);
    expect(entry.cost_usd).toBeCloseTo(usage.prompt_tokens + usage.completion_tokens, 6);

    const streamed = await post('/v1/completions', { model: GPT, prompt: 'Count these words too', stream: true });
    await streamed.text();
    const frames = lastSent().frames as string[];
    const streamedUsage = JSON.parse((frames.find((frame) => frame.includes('"choices":[]')) as string).slice(6)).usage;
    const streamedEntry = await logOf(streamed.headers.get('x-request-id') as string);
    expect(streamedEntry.prompt_tokens).toBe(streamedUsage.prompt_tokens);
    expect(streamedEntry.completion_tokens).toBe(streamedUsage.completion_tokens);
    expect(streamedEntry.cost_usd).toBeCloseTo(streamedUsage.total_tokens, 6);
  });

  it('is never answered from the response cache', async () => {
    await client.completions.create({ model: GPT, prompt: 'Same prompt', temperature: 0 });
    const again = await client.completions.create({ model: GPT, prompt: 'Same prompt', temperature: 0 }).withResponse();
    expect(completionCalls()).toHaveLength(2);
    expect(again.response.headers.get('x-tollgate-cache')).toBeNull();
  });

  it('takes a route’s OpenAI target, leaving out the targets of providers without the API', async () => {
    const answer = await client.completions.create({ model: 'claude-first', prompt: 'Hi' });
    expect(answer.model).toBe('claude-first');
    expect(anthropic.calls).toHaveLength(0);
    expect(completionCalls()).toHaveLength(1);
    expect(completionCalls()[0]?.body.model).toBe('gpt-3.5-turbo-instruct');
  });

  it('falls back on an upstream 503 to the model `fallbacks` names', async () => {
    const { data, response } = await client.completions
      .create({ model: 'openai/error-503', prompt: 'Hi', fallbacks: [GPT] } as never)
      .withResponse();
    expect(response.status).toBe(200);
    expect((data as unknown as OpenAI.Completion).model).toBe('openai/error-503');
    // The field is tollgate's: no upstream gets it.
    expect(completionCalls().map((call) => call.body.model)).toEqual(['error-503', 'gpt-3.5-turbo-instruct']);
    expect(completionCalls().every((call) => !('fallbacks' in call.body))).toBe(true);
  });

  it('a stream the upstream breaks after it began ends with an error event, never a [DONE]', async () => {
    openai.enqueue({ kind: 'break-after', chunks: 3 });
    const data = await sseData(await post('/v1/completions', { model: GPT, prompt: 'Once', stream: true }));
    expect(data).toHaveLength(4);
    expect(data.slice(0, 3).map((event) => JSON.parse(event).object)).toEqual(['text_completion', 'text_completion', 'text_completion']);
    expect(JSON.parse(data[3] as string).error.message).toBeTruthy();
    expect(data).not.toContain('[DONE]');
  });

  it('a refused body is logged as an OpenAI call', async () => {
    const response = await fetch(`${tg.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    expect(response.status).toBe(400);
    const entry = await logOf(response.headers.get('x-request-id') as string);
    expect(entry.dialect).toBe('openai');
    expect(entry.path).toBe('/v1/completions');
  });

  it('passes the upstream’s own refusal through in OpenAI’s shape', async () => {
    const error = await client.completions.create({ model: GPT, prompt: 'Hi', frequency: 1 } as never).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('Unrecognized request argument supplied: frequency');
  });
});

describe('other providers', () => {
  it('an Anthropic model is a 400 in OpenAI’s shape, and no upstream is called', async () => {
    const error = await client.completions.create({ model: CLAUDE, prompt: 'Hi' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const bad = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(bad.param).toBe('model');
    expect(bad.code).toBe('unsupported_for_provider');
    expect(bad.message).toContain(CLAUDE);
    expect(bad.message).toContain('legacy Completions API');
    expect(anthropic.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(0);
  });

  it('a DeepSeek model is called at /beta/completions (its FIM)', async () => {
    const answer = await client.completions.create({ model: 'deepseek/deepseek-chat', prompt: 'def add(a, b):', suffix: '    return c', max_tokens: 8 });
    expect(answer.model).toBe('deepseek/deepseek-chat');
    expect(completionCalls()).toHaveLength(1);
    expect(completionCalls()[0]?.path).toBe('/beta/completions');
    expect(completionCalls()[0]?.body).toEqual({ model: 'deepseek-chat', prompt: 'def add(a, b):', suffix: '    return c', max_tokens: 8 });
  });

  it('a body without a valid prompt or model is a 400 before any upstream call', async () => {
    const noPrompt = await post('/v1/completions', { model: GPT });
    expect(noPrompt.status).toBe(400);
    expect(((await noPrompt.json()) as any).error).toMatchObject({ param: 'prompt', code: 'missing_required_parameter' });
    const badPrompt = await post('/v1/completions', { model: GPT, prompt: [{ text: 'x' }] });
    expect(badPrompt.status).toBe(400);
    expect(((await badPrompt.json()) as any).error).toMatchObject({ param: 'prompt', code: 'invalid_type' });
    const noModel = await post('/v1/completions', { prompt: 'x' });
    expect(noModel.status).toBe(400);
    expect(((await noModel.json()) as any).error).toMatchObject({ param: 'model', code: 'missing_required_parameter' });
    expect(openai.calls).toHaveLength(0);
  });
});

describe('governance', () => {
  it('a virtual key’s budget is charged the completion’s usage', async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'completions-budget', budget: 500_000, rate_limit: null, models: [] });
    expect(created.status).toBe(201);
    const keyed = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    await keyed.completions.create({ model: GPT, prompt: 'Spend a little' });
    const usage = (lastSent().body as Record<string, any>).usage;
    const spend = (await jsonRequest(tg.url, 'GET', `/api/keys/${created.body.id}`)).body.spend;
    expect(spend).toBeCloseTo(usage.prompt_tokens + usage.completion_tokens, 6);
  });

  it('an input guardrail redacts the prompt and the suffix the upstream gets', async () => {
    await client.completions.create({ model: GPT, prompt: 'Write to ada@example.com about', suffix: ' cc bob@example.org' });
    const sent = completionCalls()[0]?.body;
    expect(sent.prompt).not.toContain('ada@example.com');
    expect(sent.suffix).not.toContain('bob@example.org');
    expect(sent.prompt.startsWith('Write to ')).toBe(true);
  });

  it('an input guardrail that blocks refuses the prompt in OpenAI’s shape, naming it, before any upstream call', async () => {
    const error = await client.completions.create({ model: GPT, prompt: 'Charge 4111 1111 1111 1111 now' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const bad = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(bad.code).toBe('guardrail_blocked');
    expect(bad.param).toBe('prompt');
    expect(openai.calls).toHaveLength(0);
  });

  it('an output guardrail redacts the answer text, and the client still gets a text_completion (whole and streamed)', async () => {
    openai.enqueue({ kind: 'reply', pieces: [' Mail', ' carol', '@example', '.com', ' today'] });
    const whole = await guarded.client.completions.create({ model: GPT, prompt: 'Who?' });
    expect(whole.object).toBe('text_completion');
    expect(whole.model).toBe(GPT);
    expect(whole.choices).toHaveLength(1);
    expect(whole.choices[0]?.text).not.toContain('carol@example.com');
    expect(whole.choices[0]?.text).toContain('Mail');
    expect(whole.choices[0]?.finish_reason).toBe('stop');
    expect(whole.usage?.total_tokens).toBeGreaterThan(0);

    openai.enqueue({ kind: 'reply', pieces: [' Mail', ' carol', '@example', '.com', ' today'] });
    const stream = await guarded.client.completions.create({ model: GPT, prompt: 'Who?', stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      expect(chunk.model).toBe(GPT);
      for (const choice of chunk.choices) {
        text += choice.text;
        finish = choice.finish_reason ?? finish;
      }
    }
    expect(text).not.toContain('carol@example.com');
    expect(text).toContain('Mail');
    expect(finish).toBe('stop');
  });
});
