// item_reference items name output items of a Response tollgate kept; each is replaced by the item before the request
// goes on. Finding an item reads the whole stored record it is in (its input items too), so an input naming the same
// item over and over (a few hundred KB of request) once held the event loop for as many record reads: seconds to
// minutes of a stalled gateway for every other client, when that Response's input was a few MB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { maxLoopHold } from '../helpers/own-time.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A chat-completions vendor: the Responses request is translated, and the upstream's last call shows what went.
const MODEL = 'deepseek/deepseek-chat';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({ providers: { deepseek: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

describe('item_reference items', () => {
  it('naming one kept item many times are resolved without holding the event loop for each', async () => {
    // A kept Response whose turn had a large input (a pasted document), as tollgate keeps it: input and output.
    const first = await tg.client.responses.create({ model: MODEL, input: 'word '.repeat(1_000_000), max_output_tokens: 16 });
    const item = first.output[0];
    if (item?.type !== 'message') throw new Error('expected a message item');
    // Let the record commit, so it is read back from the store rather than from what is pending.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const references = Array.from({ length: 500 }, (): OpenAI.Responses.ResponseInputItem => ({ type: 'item_reference', id: item.id }));
    const { value, holdMs } = await maxLoopHold(() => tg.client.responses.create({ model: MODEL, store: false, max_output_tokens: 16, input: [{ role: 'user', content: 'what did you say?' }, ...references] }));
    expect(value.status).toBe('completed');
    // Every reference reached the upstream as the item it names.
    const messages = upstream.calls.at(-1)?.body.messages as Array<{ role: string }>;
    expect(messages.filter((message) => message.role === 'assistant')).toHaveLength(500);
    // Read once, the record takes tens of ms; read for each reference it held the loop for over ten seconds.
    expect(holdMs).toBeLessThan(1_500);
  }, 120_000);

  it('naming many items of one kept Response (its parallel tool calls) read its record once', async () => {
    // A turn with a large input whose answer called 80 tools at once, as an agent's turn does; the next turn names each
    // call by item_reference (the Vercel AI SDK with store on) and answers it.
    const calls = Array.from({ length: 80 }, (_, i) => ({ id: `call_${i}`, type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ page: i }) } }));
    const completion = {
      id: 'chatcmpl-tools',
      object: 'chat.completion',
      created: 1_764_000_000,
      model: 'deepseek-chat',
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: calls }, finish_reason: 'tool_calls' }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    };
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) });
    const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { page: { type: 'number' } } }, strict: false }];
    // Its input a long conversation (many items, each decoded when the record is read).
    const history = Array.from({ length: 30_000 }, (_, i): OpenAI.Responses.ResponseInputItem => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}` }));
    const first = await tg.client.responses.create({ model: MODEL, tools, input: [...history, { role: 'user', content: 'look them up' }], max_output_tokens: 16 });
    const called = first.output.filter((item) => item.type === 'function_call');
    expect(called).toHaveLength(80);
    await new Promise((resolve) => setTimeout(resolve, 300));

    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'look these up' }];
    for (const call of called) {
      if (call.type !== 'function_call' || call.id === undefined) throw new Error('expected a function call with an id');
      input.push({ type: 'item_reference', id: call.id }, { type: 'function_call_output', call_id: call.call_id, output: 'found' });
    }
    const { value, holdMs } = await maxLoopHold(() => tg.client.responses.create({ model: MODEL, store: false, tools, max_output_tokens: 16, input }));
    expect(value.status).toBe('completed');
    const messages = upstream.calls.at(-1)?.body.messages as Array<{ role: string; tool_calls?: unknown[] }>;
    expect(messages.filter((message) => message.role === 'tool')).toHaveLength(80);
    expect(messages.flatMap((message) => message.tool_calls ?? [])).toHaveLength(80);
    // Read once, the record took about 10 ms here; read for each call, about 0.9 s.
    expect(holdMs).toBeLessThan(300);
  }, 120_000);
});
