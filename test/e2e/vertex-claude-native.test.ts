// Anthropic SDK -> tollgate /anthropic -> Claude on Vertex AI (rawPredict / streamRawPredict): the client's own
// Messages body goes through (minus `model`, plus Vertex's `anthropic_version`), and Claude's answer comes back as it
// came but for the model name, so extended thinking with tools keeps its signatures across turns.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { thinkingSignature } from '../upstream/anthropic-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const MODEL = 'vertex/claude-sonnet-4-5';
let vertex: VertexUpstream;
let tg: RunningGateway;
let client: Anthropic;

beforeAll(async () => {
  vertex = await startVertexUpstream();
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { vertex: { base_url: vertex.url, api_key: vertex.serviceAccount, region: 'europe-west4' } },
    cache: { mode: 'on', semantic: { enabled: false } },
  });
  client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});
afterAll(async () => {
  await tg?.stop();
  await vertex?.close();
});

const weather: Anthropic.Tool = {
  name: 'weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { query: { type: 'string' } } },
};
const thinking = { type: 'enabled', budget_tokens: 1024 } as const;
const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'please use the tool for Paris' }];

/** The request log entry of one request, once written. */
async function logOf(id: string): Promise<{ prompt_tokens: number; completion_tokens: number; cost_usd: number }> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as { prompt_tokens: number; completion_tokens: number; cost_usd: number };
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function cacheEntries(): Promise<number> {
  return ((await (await fetch(`${tg.url}/api/cache`)).json()) as { entries: number }).entries;
}

/** The cache's entries once the earlier tests' answers were stored (each is stored after it went out). */
async function settledEntries(): Promise<number> {
  let last = await cacheEntries();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = await cacheEntries();
    if (now === last) return now;
    last = now;
  }
}

/** Waits until the cache holds more than `before` entries (an answer is stored after it went out). */
async function stored(before: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await cacheEntries()) > before) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the answer was not cached');
}

/** The next turn of a tool loop: the assistant's answer as it came, then the tool's result. */
function nextTurn(ask: Anthropic.MessageParam[], first: Anthropic.Message): Anthropic.MessageParam[] {
  const use = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
  if (!use) throw new Error('expected a tool call');
  return [...ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }];
}

describe('Claude on Vertex AI for an Anthropic client: native pass-through', () => {
  it('a whole tool loop with extended thinking: the signature reaches Vertex whole on the next turn', async () => {
    const first = await client.messages.create({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages: ask, metadata: { user_id: 'u-1' } });
    expect(first.model).toBe(MODEL);
    // Claude's own message, exactly as the upstream wrote it but for the model.
    expect(first).toEqual({ ...vertex.anthropic.sent.at(-1)?.message, model: MODEL });
    expect(first.content[0]).toEqual({ type: 'thinking', thinking: 'thinking about: please use the tool for Paris', signature: thinkingSignature('thinking about: please use the tool for Paris') });
    const call = vertex.calls.at(-1);
    expect(call?.path).toBe('/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4-5:rawPredict');
    // The client's body as it wrote it, without `model`, with Vertex's version.
    expect(call?.body).toEqual({ anthropic_version: 'vertex-2023-10-16', max_tokens: 2000, thinking, tools: [weather], messages: ask, metadata: { user_id: 'u-1' } });

    const messages = nextTurn(ask, first);
    const second = await client.messages.create({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages });
    expect(second.stop_reason).toBe('end_turn');
    expect(vertex.calls.at(-1)?.body.messages).toEqual(messages);
  });

  it('a streamed tool loop with extended thinking: events come as Claude sent them, and the next turn is accepted', async () => {
    // Another city than the whole loop's, so the answer is not the cached one.
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'please use the tool for Rome' }];
    const stream = client.messages.stream({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages: ask });
    const first = await stream.finalMessage();
    expect(vertex.calls.at(-1)?.path).toMatch(/claude-sonnet-4-5:streamRawPredict$/);
    expect(first.model).toBe(MODEL);
    const sent = vertex.anthropic.sent.at(-1)?.message as Record<string, any>;
    expect(first.content).toEqual(sent.content);
    expect(first.usage).toEqual(sent.usage);

    const messages = nextTurn(ask, first);
    const raw = await fetch(`${tg.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'client-side-key', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages, stream: true }),
    });
    expect(raw.status).toBe(200);
    const text = await raw.text();
    const frames = vertex.anthropic.sent.at(-1)?.frames ?? [];
    // Byte for byte but for message_start's model (ping, content_block_stop and signature_delta included).
    expect(frames.length).toBeGreaterThan(0);
    const mine = text.split('\n\n').filter((frame) => frame.startsWith('event:') && !frame.startsWith('event: message_start'));
    const theirs = frames.join('').split('\n\n').filter((frame) => frame.startsWith('event:') && !frame.startsWith('event: message_start'));
    expect(mine).toEqual(theirs);
    expect(text).toContain(`"model":"${MODEL}"`);
    expect(vertex.calls.at(-1)?.body.messages).toEqual(messages);

    const log = await logOf(raw.headers.get('x-request-id') ?? '');
    expect(log.prompt_tokens).toBeGreaterThan(0);
    expect(log.completion_tokens).toBeGreaterThan(0);
  });

  it('a server tool only Claude can run goes to Vertex as written, its blocks come back as they came', async () => {
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 500,
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      messages: [{ role: 'user', content: 'search the web for tollgate' }],
    });
    expect(message.content.map((block) => block.type)).toContain('web_search_tool_result');
    expect(vertex.calls.at(-1)?.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
  });

  it('count_tokens estimates a body with a server tool rather than refusing it, as its message goes through', async () => {
    const counted = await client.messages.countTokens({ model: MODEL, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'search the web for tollgate' }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it("Claude Code's scoped cache breakpoints reach Claude without their scope, as Vertex does not serve the beta that allows it", async () => {
    // Claude Code marks its system prompt cacheable across sessions (cache_control.scope, with the prompt-caching-scope
    // beta). Vertex refuses the beta, and Claude refuses the scope without it: every turn failed.
    const scoped = { type: 'ephemeral', scope: 'global' } as unknown as Anthropic.CacheControlEphemeral;
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a coding agent.', cache_control: scoped }];
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'please use the tool for Oslo' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'weather', input: { query: 'Oslo' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: 'snow', cache_control: scoped }] }] },
    ];
    const message = await client.messages.create(
      { model: MODEL, max_tokens: 100, system, tools: [weather], messages },
      { headers: { 'anthropic-beta': 'claude-code-20250219,prompt-caching-scope-2026-01-05' } },
    );
    expect(message.stop_reason).toBe('end_turn');
    const sent = vertex.anthropic.calls.at(-1)?.body as { system: unknown; messages: Anthropic.MessageParam[] };
    expect(sent.system).toEqual([{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }]);
    expect(sent.messages[2]?.content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: 'snow', cache_control: { type: 'ephemeral' } }] }]);
  });

  it('a cached answer replays the signatures, streamed after a whole one', async () => {
    const body = { model: MODEL, max_tokens: 2000, thinking, messages: [{ role: 'user' as const, content: 'ponder the cache' }] };
    const before = await settledEntries();
    const first = await client.messages.create(body);
    await stored(before);
    const calls = vertex.calls.length;
    const streamed = client.messages.stream(body);
    const replay = await streamed.finalMessage();
    expect(vertex.calls.length).toBe(calls);
    expect(replay.content).toEqual(first.content);
    expect(replay.content[0]).toMatchObject({ type: 'thinking', signature: thinkingSignature('thinking about: ponder the cache') });
  });

  it('an OpenAI client of the same model is still translated', async () => {
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(vertex.calls.at(-1)?.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', max_tokens: 50 });
  });
});
