// Stored Responses for providers without the Responses API: through the official OpenAI SDK against a running
// gateway, a conversation by previous_response_id to Claude (and on to Gemini) reaches the upstream whole; the stored
// Response can be retrieved, its input items listed, deleted; another key can neither read nor continue it; it
// expires, and it survives a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startAzureUpstream } from '../upstream/azure-upstream.js';
import { startEntraEndpoint } from '../upstream/entra-token-endpoint.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
const GEMINI = 'gemini/gemini-2.5-flash';
const DAY = 24 * 60 * 60_000;

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let dataDir: string;
let now = Date.parse('2030-01-01T00:00:00Z');
let alice: OpenAI;
let bob: OpenAI;

function config() {
  return {
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      deepseek: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  };
}

async function keyClient(name: string): Promise<OpenAI> {
  const created = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
  const { key } = (await created.json()) as { key: string };
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
}

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-respstore-'));
  tg = await startGateway(config(), {}, { dataDir, clock: () => now });
  alice = await keyClient('alice');
  bob = await keyClient('bob');
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await gemini?.close();
  await openai?.close();
  rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(() => {
  anthropic.reset();
  gemini.reset();
  openai.reset();
});

/** The error a call ends in. */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

describe('previous_response_id to a provider without the Responses API', () => {
  it('a three-turn conversation to Claude reaches the upstream whole, and goes on with Gemini', async () => {
    const first = await alice.responses.create({ model: CLAUDE, instructions: 'Be brief.', input: 'my name is Ada' });
    expect(first).toMatchObject({ store: true, previous_response_id: null, status: 'completed' });
    const second = await alice.responses.create({ model: CLAUDE, input: 'what is my name?', previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    const third = await alice.responses.create({ model: CLAUDE, input: [{ role: 'user', content: 'and again?' }], previous_response_id: second.id });
    const sent = anthropic.calls.at(-1)?.body;
    expect(sent.messages).toEqual([
      { role: 'user', content: 'my name is Ada' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'what is my name?' },
      { role: 'assistant', content: second.output_text },
      { role: 'user', content: 'and again?' },
    ]);
    // Instructions are not carried over (as OpenAI does not): the first turn's system prompt was its own.
    expect(anthropic.calls[0]?.body.system).toBe('Be brief.');
    expect(sent.system).toBeUndefined();

    // Another vendor continues the same conversation.
    await alice.responses.create({ model: GEMINI, input: 'last one', previous_response_id: third.id });
    const contents = gemini.calls.at(-1)?.body.contents as Array<{ role: string; parts: Array<{ text: string }> }>;
    expect(contents.map((content) => [content.role, content.parts[0]?.text])).toEqual([
      ['user', 'my name is Ada'],
      ['model', first.output_text],
      ['user', 'what is my name?'],
      ['model', second.output_text],
      ['user', 'and again?'],
      ['model', third.output_text],
      ['user', 'last one'],
    ]);
  });

  it('OpenAI continues a conversation Claude began: the whole history in the input, no previous_response_id', async () => {
    const first = await alice.responses.create({ model: CLAUDE, input: 'begin with claude' });
    const next = await alice.responses.create({ model: 'openai/gpt-5', input: 'go on', previous_response_id: first.id });
    expect(next.status).toBe('completed');
    const sent = openai.calls.at(-1)?.body;
    expect(sent.previous_response_id).toBeUndefined();
    expect(sent.input.map((item: any) => [item.role, typeof item.content === 'string' ? item.content : item.content[0].text])).toEqual([
      ['user', 'begin with claude'],
      ['assistant', first.output_text],
      ['user', 'go on'],
    ]);
    expect(sent.input.some((item: any) => item.id !== undefined)).toBe(false);
  });

  it('a streamed turn is kept and continued like a whole one', async () => {
    const stream = alice.responses.stream({ model: CLAUDE, input: 'stream me' });
    for await (const _event of stream) void _event;
    const first = await stream.finalResponse();
    expect((first as any).store).toBe(true);
    await alice.responses.create({ model: CLAUDE, input: 'next', previous_response_id: first.id });
    expect(anthropic.calls.at(-1)?.body.messages).toEqual([
      { role: 'user', content: 'stream me' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'next' },
    ]);
  });

  it('the Vercel AI SDK with its default store: true names earlier answers by item_reference, resolved for its own key only', async () => {
    const provider = createOpenAI({ baseURL: `${tg.url}/v1`, apiKey: alice.apiKey as string });
    const first = await generateText({ model: provider(CLAUDE), prompt: 'hello', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hello' }, ...first.response.messages, { role: 'user' as const, content: 'again' }];
    const second = await generateText({ model: provider(CLAUDE), messages, maxRetries: 0 });
    expect(second.text).toBe('echo: again');
    // The SDK sent the answer by reference; Claude got it as the text it was.
    expect(JSON.stringify(anthropic.calls.at(-1)?.body)).not.toContain('item_reference');
    const text = (content: any): string => (typeof content === 'string' ? content : content.map((block: any) => block.text).join(''));
    expect(anthropic.calls.at(-1)?.body.messages.map((message: any) => [message.role, text(message.content)])).toEqual([
      ['user', 'hello'],
      ['assistant', first.text],
      ['user', 'again'],
    ]);
    // Another key's reference is not resolved: the translation refuses it before any call.
    const calls = anthropic.calls.length;
    const stranger = createOpenAI({ baseURL: `${tg.url}/v1`, apiKey: bob.apiKey as string });
    const refused = await generateText({ model: stranger(CLAUDE), messages, maxRetries: 0 }).catch((err: unknown) => err);
    expect((refused as Error).message).toContain('item_reference');
    expect(anthropic.calls).toHaveLength(calls);
  });

  it('an unknown id is OpenAI\'s 400 previous_response_not_found, before any upstream call', async () => {
    const error = await failure(alice.responses.create({ model: CLAUDE, input: 'hi', previous_response_id: 'resp_unknown' }));
    expect(error.status).toBe(400);
    expect(error.code).toBe('previous_response_not_found');
    expect(error.param).toBe('previous_response_id');
    expect(error.message).toContain("Previous response with id 'resp_unknown' not found.");
    expect(anthropic.calls).toHaveLength(0);
  });

  it('a previous_response_id that is not a string is a 400 naming it, not a turn without its history', async () => {
    for (const bad of [123, { id: 'resp_1' }, ['resp_1']]) {
      const error = await failure(alice.responses.create({ model: CLAUDE, input: 'hi', previous_response_id: bad as unknown as string }));
      expect([error.status, error.param]).toEqual([400, 'previous_response_id']);
    }
    expect(anthropic.calls).toHaveLength(0);
  });

  it('an id longer than any tollgate makes is not found, on every call, never a 500', async () => {
    const long = `resp_${'x'.repeat(5000)}`;
    expect((await failure(alice.responses.create({ model: CLAUDE, input: 'hi', previous_response_id: long }))).code).toBe('previous_response_not_found');
    // In a URL it is past the router's limit for a path parameter: 414, in OpenAI's shape like every refusal.
    for (const call of [alice.responses.retrieve(long), alice.responses.delete(long), alice.responses.retrieve(`resp_${'x'.repeat(90)}`)]) {
      const error = await failure(call);
      expect([404, 414]).toContain(error.status);
      expect(error.type).toBe('invalid_request_error');
    }
    expect((await failure(alice.responses.create({ model: CLAUDE, input: [{ type: 'item_reference', id: long }] }))).status).toBe(400);
    expect(anthropic.calls).toHaveLength(0);
  });

  it('store: false keeps nothing', async () => {
    const response = await alice.responses.create({ model: CLAUDE, input: 'forget me', store: false });
    expect((response as any).store).toBe(false);
    expect((await failure(alice.responses.retrieve(response.id))).status).toBe(404);
    expect((await failure(alice.responses.create({ model: CLAUDE, input: 'hi', previous_response_id: response.id }))).code).toBe('previous_response_not_found');
  });
});

describe("Claude's signed thinking", () => {
  const weather: OpenAI.Responses.FunctionTool = { type: 'function', name: 'weather', parameters: { type: 'object', properties: { query: { type: 'string' } } }, strict: false };

  it.each([false, true])('goes back to Claude unchanged when a tool-use turn with thinking is continued by previous_response_id (stream: %s)', async (stream) => {
    const ask = { model: CLAUDE, input: 'use the tool for Paris', tools: [weather], reasoning: { effort: 'low' as const }, max_output_tokens: 4000 };
    let first: OpenAI.Responses.Response;
    if (stream) {
      const events = alice.responses.stream(ask);
      for await (const _event of events) void _event;
      first = await events.finalResponse();
    } else first = await alice.responses.create(ask);
    const reasoning = first.output.find((item) => item.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.encrypted_content).toMatch(/^tg_anthropic_thinking\./);
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    const second = await alice.responses.create({ ...ask, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }], previous_response_id: first.id });
    expect(second.status).toBe('completed');
    // The upstream checks the signature (a changed or missing thinking block is its 400), and got the block first.
    const sent = anthropic.calls.at(-1)?.body;
    expect(sent.thinking?.type).toBe('enabled');
    const turn = sent.messages[1];
    expect(turn.role).toBe('assistant');
    expect(turn.content[0]).toEqual(anthropic.sent[0]?.message.content.find((block: any) => block.type === 'thinking'));
    expect(turn.content.at(-1)).toMatchObject({ type: 'tool_use', id: call.call_id });
  });

  it('is never sent to another provider', async () => {
    const first = await alice.responses.create({ model: CLAUDE, input: 'think', reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    expect(first.output.some((item) => item.type === 'reasoning' && item.encrypted_content)).toBe(true);
    await alice.responses.create({ model: 'openai/gpt-5', input: 'next', previous_response_id: first.id });
    const sent = openai.calls.at(-1)?.body;
    expect(sent.input.some((item: any) => item.type === 'reasoning')).toBe(false);
    await alice.responses.create({ model: 'deepseek/deepseek-chat', input: 'next', previous_response_id: first.id });
    const chat = openai.calls.at(-1)?.body;
    expect(chat.messages.some((message: any) => message.thinking_blocks !== undefined)).toBe(false);
  });
});

describe('the stored Response API', () => {
  it('retrieve, input items (paged), cancel refused, delete, then 404', async () => {
    const first = await alice.responses.create({ model: CLAUDE, input: 'one' });
    const second = await alice.responses.create({ model: CLAUDE, input: [{ role: 'user', content: 'two' }, { role: 'user', content: 'three' }], previous_response_id: first.id });

    const retrieved = await alice.responses.retrieve(second.id);
    expect(retrieved).toEqual(JSON.parse(JSON.stringify(second)));

    const all = await alice.responses.inputItems.list(second.id, { order: 'asc' });
    const texts = all.data.map((item: any) => (item.type === 'message' ? item.content[0].text : item.type));
    expect(texts).toEqual(['one', first.output_text, 'two', 'three']);
    expect(all.data.every((item: any) => typeof item.id === 'string')).toBe(true);
    // Newest first by default, in pages the SDK follows by `after`.
    const page = await alice.responses.inputItems.list(second.id, { limit: 3 });
    expect(page.data.map((item: any) => item.content[0].text)).toEqual(['three', 'two', first.output_text]);
    expect(page.hasNextPage()).toBe(true);
    const next = await page.getNextPage();
    expect(next.data.map((item: any) => item.content[0].text)).toEqual(['one']);
    expect(next.hasNextPage()).toBe(false);

    // Bad paging is a 400 naming the parameter, in OpenAI's shape.
    const badLimit = await failure(alice.responses.inputItems.list(second.id, { limit: 500 }));
    expect([badLimit.status, badLimit.param]).toEqual([400, 'limit']);
    const badAfter = await failure(alice.responses.inputItems.list(second.id, { after: 'msg_nope' }));
    expect([badAfter.status, badAfter.param]).toEqual([400, 'after']);
    const badOrder = await fetch(`${tg.url}/v1/responses/${second.id}/input_items?order=sideways`, { headers: { authorization: `Bearer ${alice.apiKey}` } });
    expect(badOrder.status).toBe(400);
    expect(((await badOrder.json()) as any).error).toMatchObject({ param: 'order', type: 'invalid_request_error' });

    const cancel = await failure(alice.responses.cancel(second.id));
    expect(cancel.status).toBe(400);
    expect(cancel.message).toContain('background');

    const deleted = await alice.responses.delete(second.id);
    expect(deleted as unknown).toEqual({ id: second.id, object: 'response', deleted: true });
    const gone = await failure(alice.responses.retrieve(second.id));
    expect(gone.status).toBe(404);
    expect(gone.message).toContain(`Response with id '${second.id}' not found.`);
    expect((await failure(alice.responses.delete(second.id))).status).toBe(404);
    expect((await failure(alice.responses.create({ model: CLAUDE, input: 'hi', previous_response_id: second.id }))).code).toBe('previous_response_not_found');
    // The earlier turn is its own Response and stays.
    expect((await alice.responses.retrieve(first.id)).id).toBe(first.id);
  });

  it('retrieve with stream: true replays the stored Response as its event stream', async () => {
    const mine = await alice.responses.create({ model: CLAUDE, input: 'replay me' });
    const stream = await alice.responses.retrieve(mine.id, { stream: true });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    expect(events[0].type).toBe('response.created');
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { id: mine.id, output: mine.output } });
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')).toBe(mine.output_text);
  });

  it('another key can neither read, list, delete nor continue a key\'s Response', async () => {
    const mine = await alice.responses.create({ model: CLAUDE, input: 'secret plans' });
    expect((await failure(bob.responses.retrieve(mine.id))).status).toBe(404);
    expect((await failure(bob.responses.inputItems.list(mine.id))).status).toBe(404);
    expect((await failure(bob.responses.delete(mine.id))).status).toBe(404);
    expect((await failure(bob.responses.cancel(mine.id))).status).toBe(404);
    const continued = await failure(bob.responses.create({ model: CLAUDE, input: 'tell me', previous_response_id: mine.id }));
    expect(continued.code).toBe('previous_response_not_found');
    expect(anthropic.calls).toHaveLength(1);
    // Nor can a call without a key (anonymous), nor an unknown key.
    expect((await failure(tg.client.responses.retrieve(mine.id))).status).toBe(404);
    const stranger = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'tg-unknown', maxRetries: 0 });
    expect((await failure(stranger.responses.retrieve(mine.id))).status).toBe(401);
    // A new turn from an unknown key is the auth stage's 401 (reported as auth.rejected), never a look at the store.
    const rejected: string[] = [];
    const stop = tg.gateway.bus.on('auth.rejected', (event) => rejected.push(event.reason));
    const refused = await failure(stranger.responses.create({ model: CLAUDE, input: 'x', previous_response_id: mine.id }));
    stop();
    expect(refused.status).toBe(401);
    expect(rejected).toEqual(['unknown_key']);
    expect((await alice.responses.retrieve(mine.id)).id).toBe(mine.id);
  });

  it('the calls are in the request log with their key', async () => {
    const mine = await alice.responses.create({ model: CLAUDE, input: 'log me' });
    await alice.responses.retrieve(mine.id);
    await failure(bob.responses.retrieve(mine.id));
    const deadline = Date.now() + 3000;
    let entries: any[] = [];
    while (Date.now() < deadline) {
      entries = ((await (await fetch(`${tg.url}/api/logs?limit=50`)).json()) as { data: any[] }).data.filter((entry) => entry.operation === 'responses.retrieve' && entry.path.includes(mine.id));
      if (entries.length >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(entries.map((entry) => entry.status).sort()).toEqual([200, 404]);
    const keys = (await (await fetch(`${tg.url}/api/keys`)).json()) as { data?: any[] } | any[];
    const list = Array.isArray(keys) ? keys : (keys.data ?? []);
    const ids = Object.fromEntries(list.map((key: any) => [key.name, key.id]));
    expect(entries.find((entry) => entry.status === 200)?.key_id).toBe(ids.alice);
    expect(entries.find((entry) => entry.status === 404)?.key_id).toBe(ids.bob);
  });

  it('expires after response_retention_days, and is kept across a restart until then', async () => {
    const mine = await alice.responses.create({ model: CLAUDE, input: 'keep me' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await tg.stop();
    tg = await startGateway(config(), {}, { dataDir, clock: () => now });
    alice = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: alice.apiKey, maxRetries: 0 });
    bob = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: bob.apiKey, maxRetries: 0 });
    expect((await alice.responses.retrieve(mine.id)).output_text).toBe(mine.output_text);
    await alice.responses.create({ model: CLAUDE, input: 'again', previous_response_id: mine.id });
    expect(anthropic.calls.at(-1)?.body.messages).toHaveLength(3);

    now += 29 * DAY;
    expect((await alice.responses.retrieve(mine.id)).id).toBe(mine.id);
    now += 2 * DAY;
    expect((await failure(alice.responses.retrieve(mine.id))).status).toBe(404);
    expect((await failure(alice.responses.create({ model: CLAUDE, input: 'hi', previous_response_id: mine.id }))).code).toBe('previous_response_not_found');
    // The sweep deletes what expired.
    const before = tg.gateway.responses.find(mine.id);
    expect(before).toBeNull();
  });
});

describe('a Response OpenAI kept (native pass-through)', () => {
  it('is read and deleted at OpenAI with the provider key, by its own key only', async () => {
    const mine = await alice.responses.create({ model: 'openai/gpt-5', input: 'kept by openai' });
    expect((await alice.responses.retrieve(mine.id)).id).toBe(mine.id);
    const asked = openai.calls.at(-1);
    expect([asked?.method, asked?.path, asked?.headers.authorization]).toEqual(['GET', `/v1/responses/${mine.id}`, 'Bearer sk-openai-upstream']);
    const calls = openai.calls.length;
    expect((await failure(bob.responses.retrieve(mine.id))).status).toBe(404);
    expect((await failure(bob.responses.create({ model: 'openai/gpt-5', input: 'x', previous_response_id: mine.id }))).code).toBe('previous_response_not_found');
    expect(openai.calls).toHaveLength(calls);
    // To another provider, it says where it is kept.
    const elsewhere = await failure(alice.responses.create({ model: CLAUDE, input: 'x', previous_response_id: mine.id }));
    expect([elsewhere.status, elsewhere.param]).toEqual([400, 'previous_response_id']);
    expect(elsewhere.message).toContain("the provider 'openai' keeps itself");
    expect(await alice.responses.delete(mine.id)).toEqual({ id: mine.id, object: 'response', deleted: true });
    expect(openai.calls.at(-1)?.method).toBe('DELETE');
    expect((await failure(alice.responses.retrieve(mine.id))).status).toBe(404);
  });
});

describe("a Response Azure OpenAI's v1 API kept", () => {
  it('is read and deleted on the resource, at its v1 path with its key', async () => {
    const azure = await startAzureUpstream({ apiKey: 'azure-key', deployments: { 'gpt-5-prod': 'gpt-5' } });
    const gateway = await startGateway({ providers: { 'azure-v1': { type: 'azure', base_url: `${azure.url}/openai/v1/`, api_key: 'azure-key' } } });
    try {
      const mine = await gateway.client.responses.create({ model: 'azure-v1/gpt-5-prod', input: 'kept by azure' });
      expect((await gateway.client.responses.retrieve(mine.id)).id).toBe(mine.id);
      expect([azure.calls.at(-1)?.method, azure.calls.at(-1)?.path, azure.calls.at(-1)?.headers['api-key']]).toEqual(['GET', `/openai/v1/responses/${mine.id}`, 'azure-key']);
      expect(await gateway.client.responses.delete(mine.id)).toEqual({ id: mine.id, object: 'response', deleted: true });
      const gone = await gateway.client.responses.retrieve(mine.id).then(() => null, (err: unknown) => err as InstanceType<typeof OpenAI.APIError>);
      expect(gone?.status).toBe(404);
    } finally {
      await gateway.stop();
      await azure.close();
    }
  });

  it('with a Microsoft Entra ID identity, read with its token', async () => {
    const entra = await startEntraEndpoint();
    const azure = await startAzureUpstream({ acceptsBearer: (token) => entra.accepts(token), deployments: { 'gpt-5-prod': 'gpt-5' } });
    const auth = { type: 'entra' as const, credential: 'client_secret' as const, tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'entra-client-secret-value-xyz', authority_host: entra.url };
    const gateway = await startGateway({ providers: { 'azure-v1': { type: 'azure', base_url: `${azure.url}/openai/v1/`, auth } } });
    try {
      const mine = await gateway.client.responses.create({ model: 'azure-v1/gpt-5-prod', input: 'kept by azure' });
      expect((await gateway.client.responses.retrieve(mine.id)).id).toBe(mine.id);
      expect(azure.calls.at(-1)?.headers.authorization).toMatch(/^Bearer /);
    } finally {
      await gateway.stop();
      await azure.close();
      await entra.close();
    }
  });
});
