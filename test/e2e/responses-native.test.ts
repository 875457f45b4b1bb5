// The official OpenAI SDK's Responses API (client.responses.create / .stream) -> tollgate /v1/responses -> OpenAI's
// own Responses API: a faithful pass-through. What the client sends reaches the upstream unchanged but for the
// model, and the upstream's answer and every event of its stream reach the client unchanged but for the model name
// they show; usage (cached and reasoning tokens included) is charged, logged and counted against budgets, and a
// route's fallback applies as on chat.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { encryptedReasoning } from '../upstream/openai-responses-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const MODEL = 'openai/gpt-5';
const UPSTREAM_MODEL = 'gpt-5';
/** Prices per million tokens: cache reads at a tenth, so the charge shows the cached tokens were read. */
const PRICES = { 'gpt-5': { input_per_mtok: 1_000_000, cached_input_per_mtok: 100_000, output_per_mtok: 1_000_000 } };

let upstream: ScriptedUpstream;
let azure: AzureUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  azure = await startAzureUpstream({ apiKey: 'azure-key', deployments: { 'gpt-5-prod': 'gpt-5' } });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES },
      // Azure OpenAI's v1 API serves the Responses API as OpenAI does; its dated API is translated to chat completions.
      'azure-v1': { type: 'azure', base_url: `${azure.url}/openai/v1/`, api_key: 'azure-key' },
      'azure-dated': { type: 'azure', base_url: azure.url, api_key: 'azure-key', api_version: '2024-10-21' },
      // No api_version: Azure's v1 API, which serves the Responses API too.
      'azure-default': { type: 'azure', base_url: azure.url, api_key: 'azure-key' },
    },
    routes: { 'broken-then-gpt': { targets: [{ model: 'openai/error-503' }], fallbacks: [MODEL] } },
    guardrails: {
      rules: [
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'input' },
        { name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'input' },
      ],
    },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
  await azure?.close();
});
beforeEach(() => {
  upstream.reset();
  azure.reset();
});

function lastCall(): (typeof upstream.calls)[number] {
  const call = upstream.calls.at(-1);
  if (!call) throw new Error('the upstream saw no call');
  return call;
}

function lastSent(): (typeof upstream.responses)[number] {
  const sent = upstream.responses.at(-1);
  if (!sent) throw new Error('the upstream sent no response');
  return sent;
}

function post(body: Record<string, unknown>, key = 'client-side-key'): Promise<Response> {
  return fetch(`${tg.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
}

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

/** The frames the upstream wrote, as the client is to get them: each event's Response showing the client's model. */
function shownFrames(frames: string[]): string[] {
  return frames.map((frame) => frame.replace(`"model":"${UPSTREAM_MODEL}-2025-08-07"`, `"model":"${MODEL}"`));
}

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { query: { type: 'string' }, units: { type: 'string' } }, required: ['query', 'units'], additionalProperties: false },
  strict: true,
};

describe('a whole answer', () => {
  it('is the upstream’s Response exactly, reasoning and usage details included, but for the model name', async () => {
    const body = {
      model: MODEL,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'ponder this' }] }],
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
      metadata: { ticket: 'T-1' },
      prompt_cache_key: 'pc-1',
      safety_identifier: 'user-hash',
      text: { verbosity: 'low' },
    };
    const response = await post(body);
    expect(response.status).toBe(200);
    const text = await response.text();
    const sent = lastSent().response;
    // The client's body went as it was written, but for the model; the answer came back byte for byte, but for it.
    expect(lastCall().path).toBe('/v1/responses');
    expect(lastCall().body).toEqual({ ...body, model: UPSTREAM_MODEL });
    expect(text).toBe(JSON.stringify({ ...sent, model: MODEL }));
    expect(sent.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA/) });
    // Cost and the log read the usage: the prompt with its cached part, the output with its reasoning part.
    const log = await logOf(response.headers.get('x-request-id') ?? '');
    expect(log).toMatchObject({
      prompt_tokens: sent.usage.input_tokens,
      completion_tokens: sent.usage.output_tokens,
      cached_tokens: sent.usage.input_tokens_details.cached_tokens,
      reasoning_tokens: 64,
    });
    const cached = sent.usage.input_tokens_details.cached_tokens;
    expect(log.cost_usd).toBeCloseTo(sent.usage.input_tokens - cached + cached * 0.1 + sent.usage.output_tokens, 6);
  });

  it('through client.responses.create: a function-calling turn and the next one, reasoning sent back encrypted', async () => {
    const first = await client.responses.create({
      model: MODEL,
      input: 'use the tool for Paris',
      tools: [weather],
      reasoning: { effort: 'medium' },
      include: ['reasoning.encrypted_content'],
      store: false,
    });
    expect(first.model).toBe(MODEL);
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'weather', arguments: '{"query":"use the tool for Paris","units":"metric"}' });
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    expect(reasoning?.encrypted_content).toBe(encryptedReasoning(String(reasoning?.id)));
    // The next turn sends back every output item (the reasoning with its encrypted content, which the upstream
    // checks) and the tool's result; previous_response_id and the rest pass through as well.
    const second = await client.responses.create({
      model: MODEL,
      input: ['use the tool for Paris', ...first.output, { type: 'function_call_output', call_id: (call as OpenAI.Responses.ResponseFunctionToolCall).call_id, output: '21C and sunny' }].map((item) =>
        typeof item === 'string' ? { role: 'user' as const, content: item } : item,
      ) as OpenAI.Responses.ResponseInput,
      tools: [weather],
      reasoning: { effort: 'medium' },
      include: ['reasoning.encrypted_content'],
      previous_response_id: 'resp_abc',
      store: false,
    });
    expect(second.output_text).toBe('tool said 21C and sunny');
    expect(lastCall().body.input[1]).toEqual({ ...reasoning });
    expect(lastCall().body.previous_response_id).toBe('resp_abc');
    expect(second.usage?.output_tokens_details.reasoning_tokens).toBe(64);
  });

  it('is served at /responses too, for a base URL without /v1', async () => {
    const bare = new OpenAI({ baseURL: tg.url, apiKey: 'client-side-key', maxRetries: 0 });
    const response = await bare.responses.create({ model: MODEL, input: 'no v1 here' });
    expect(response.output_text).toBe('echo: no v1 here');
    expect(lastCall().path).toBe('/v1/responses');
  });

  it('a length stop comes back as the upstream’s incomplete Response', async () => {
    const response = await client.responses.create({ model: MODEL, input: 'one two three four five', max_output_tokens: 2 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.output_text).toBe('echo: one');
  });

  it('an upstream refusal comes back in OpenAI’s shape, its message kept', async () => {
    const error = await client.responses.create({ model: MODEL, input: 'hi', bogus_field: 1 } as any).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("Unknown parameter: 'bogus_field'.");
  });

  it('tollgate’s own fallbacks field is taken off, and a route’s fallback answers when its target fails', async () => {
    const response = await post({ model: 'broken-then-gpt', input: 'hello there', fallbacks: [] });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-tollgate-fallback')).toBe('true');
    const body = (await response.json()) as Record<string, any>;
    expect(body.model).toBe('broken-then-gpt');
    expect(body.output[0].content[0].text).toBe('echo: hello there');
    expect(upstream.calls.every((call) => call.path === '/v1/responses')).toBe(true);
    expect(upstream.calls[0]?.body.model).toBe('error-503');
    expect(lastCall().body.model).toBe(UPSTREAM_MODEL);
    expect(lastCall().body).not.toHaveProperty('fallbacks');
  });

  it('an absurd max_output_tokens is a 400 naming max_output_tokens, and a body that is not JSON is logged as a Responses call', async () => {
    const error = await client.responses.create({ model: MODEL, input: 'hi', max_output_tokens: 1e12 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('max_output_tokens');
    const refused = await fetch(`${tg.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    expect(refused.status).toBe(400);
    const log = await logOf(refused.headers.get('x-request-id') ?? '');
    expect(log.dialect).toBe('openai-responses');
    expect(upstream.calls).toHaveLength(0);
  });

  it('`background: true` is refused with a 400 before any upstream call', async () => {
    const error = await client.responses.create({ model: MODEL, input: 'hi', background: true }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("'background'");
    expect(upstream.calls).toHaveLength(0);
  });
});

describe('a streamed answer', () => {
  it('is every event of the upstream’s stream, byte for byte, but for the model name', async () => {
    const response = await post({ model: MODEL, input: 'stream this please', reasoning: { effort: 'low' }, include: ['reasoning.encrypted_content'], stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const text = await response.text();
    const frames = lastSent().frames ?? [];
    expect(frames.length).toBeGreaterThan(8);
    expect(text).toBe(shownFrames(frames).join(''));
    const log = await logOf(response.headers.get('x-request-id') ?? '');
    expect(log).toMatchObject({ prompt_tokens: lastSent().response.usage.input_tokens, completion_tokens: lastSent().response.usage.output_tokens, reasoning_tokens: 64 });
  });

  it('cut off by the upstream after it began, it ends with error and response.failed in the upstream’s own numbering', async () => {
    upstream.enqueue({ kind: 'break-after', chunks: 4 });
    const response = await post({ model: MODEL, input: 'one two three four five six seven', stream: true });
    expect(response.status).toBe(200);
    const events = (await response.text()).split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)));
    const sent = lastSent().response;
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.slice(0, 4)).toEqual((lastSent().frames ?? []).slice(0, 4).map((frame) => JSON.parse(shownFrames([frame])[0]?.slice(frame.indexOf('data: ') + 6) ?? '')));
    expect(events.slice(4).map((event) => event.type)).toEqual(['error', 'response.failed']);
    expect(events[5]).toMatchObject({ response: { id: sent.id, model: MODEL, status: 'failed', error: { code: 'upstream_connection_error' } } });
    expect(upstream.calls).toHaveLength(1);
  });

  it('through client.responses.stream: the SDK’s own parser takes it, a function call included', async () => {
    const stream = client.responses.stream({ model: MODEL, input: 'use the tool for Oslo', tools: [weather] });
    const types: string[] = [];
    let args = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
    }
    const final = await stream.finalResponse();
    expect(final.model).toBe(MODEL);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(args).toBe('{"query":"use the tool for Oslo","units":"metric"}');
    // The SDK adds its parse of a strict tool's arguments; the rest is the upstream's output as it was sent.
    expect(final.output.map(({ parsed_arguments: _parsed, ...item }: any) => item)).toEqual(lastSent().response.output);
    expect(final.usage).toEqual(lastSent().response.usage);
  });
});

describe('Azure OpenAI', () => {
  it('its v1 API gets the client’s body at /openai/v1/responses, the deployment as the model, whole and streamed', async () => {
    const body = { model: 'azure-v1/gpt-5-prod', input: 'hello azure', reasoning: { effort: 'low' }, include: ['reasoning.encrypted_content'], store: false };
    const response = await client.responses.create(body as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(response.model).toBe('azure-v1/gpt-5-prod');
    expect(response.output_text).toBe('echo: hello azure');
    expect(response.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA/) });
    const call = azure.calls.at(-1);
    expect(call).toMatchObject({ path: '/openai/v1/responses', apiVersion: null, body: { ...body, model: 'gpt-5-prod' } });
    const stream = client.responses.stream({ model: 'azure-v1/gpt-5-prod', input: 'stream azure' });
    for await (const _event of stream) void _event;
    expect((await stream.finalResponse()).output_text).toBe('echo: stream azure');
    expect(azure.calls.at(-1)?.path).toBe('/openai/v1/responses');
  });

  it('a resource without a dated api_version is called at its v1 API, Responses passed through', async () => {
    const response = await client.responses.create({ model: 'azure-default/gpt-5-prod', input: 'hello default' });
    expect(response.output_text).toBe('echo: hello default');
    expect(azure.calls.at(-1)?.path).toBe('/openai/v1/responses');
  });

  it('its dated API gets chat completions on the deployment', async () => {
    const response = await client.responses.create({ model: 'azure-dated/gpt-5-prod', input: 'hello dated' });
    expect(response.output_text).toBe('echo: hello dated');
    expect(azure.calls.at(-1)?.path).toBe('/openai/deployments/gpt-5-prod/chat/completions');
  });
});

describe('guardrails', () => {
  it('an input redaction reaches the upstream in the client’s own body too', async () => {
    const response = await post({
      model: MODEL,
      instructions: 'the operator is ops@example.com',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'write to jane.doe@example.com' }] },
        { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"who":"bob@example.com"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'found bob@example.com' },
      ],
    });
    expect(response.status).toBe(200);
    const sent = lastCall().raw ?? '';
    expect(sent).not.toMatch(/example\.com/);
    expect(lastCall().body.input[1]).toMatchObject({ type: 'function_call', call_id: 'call_1', name: 'lookup' });
  });

  it('an input block is a 400 naming `input`, the client’s own field, before any upstream call', async () => {
    const error = await client.responses.create({ model: MODEL, instructions: 'be brief', input: [{ role: 'user', content: 'my card is 4111 1111 1111 1111' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: 'guardrail_blocked', param: 'input' });
    expect(upstream.calls).toHaveLength(0);
  });
});

describe('governance', () => {
  it('a virtual key’s budget is charged the Responses usage and then refuses, before any upstream call', async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'responses-budget', budget: 100, rate_limit: null, models: [] });
    expect(created.status).toBe(201);
    const keyed = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0, timeout: 15_000 });
    await keyed.responses.create({ model: MODEL, input: 'spend some of it', max_output_tokens: 50 });
    const spend = (await jsonRequest(tg.url, 'GET', `/api/keys/${created.body.id}`)).body.spend;
    const usage = lastSent().response.usage;
    const cached = usage.input_tokens_details.cached_tokens;
    expect(spend).toBeCloseTo(usage.input_tokens - cached + cached * 0.1 + usage.output_tokens, 6);
    const calls = upstream.calls.length;
    const error = await keyed.responses.create({ model: MODEL, input: 'and then more of it please', max_output_tokens: 500 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('budget_exceeded');
    expect(upstream.calls).toHaveLength(calls);
  });
});
