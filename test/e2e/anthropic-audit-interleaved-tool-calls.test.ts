// An Anthropic client of an OpenAI-format provider gets each parallel tool call as a tool_use block, one block after
// another. OpenAI's chunks key a call's argument fragments by index, so a provider may announce two calls together and
// send their arguments taking turns: the first call's block was closed when the second opened, and its later
// fragments were dropped (finalMessage() gave it the input {}).
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { ownNow } from '../helpers/own-time.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-up' });
  tg = await startGateway({ providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-up' } } });
});
afterAll(async () => {
  await tg.stop();
  await openai.close();
});
beforeEach(() => openai.reset());

const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', system_fingerprint: null };
const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
  `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
const opening = chunk({ role: 'assistant', content: null, tool_calls: [0, 1].map((index) => ({ index, id: `call_${index + 1}`, type: 'function', function: { name: 'lookup', arguments: '' } })) });
const fragment = (index: number, text: string): string => chunk({ tool_calls: [{ index, function: { arguments: text } }] });
const tools = [{ name: 'lookup', description: 'Looks something up.', input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } } }];

function client(): Anthropic {
  return new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'anonymous', maxRetries: 0 });
}

describe('parallel tool calls whose arguments take turns, streamed to an Anthropic client', () => {
  it('keeps every call its own arguments', async () => {
    const frames = [opening, fragment(0, '{"q":'), fragment(1, '{"q":'), fragment(0, '"a"}'), fragment(1, '"b"}'), chunk({}, 'tool_calls'), 'data: [DONE]\n\n'];
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: frames.join('') });
    const message = await client().messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 256, tools, messages: [{ role: 'user', content: 'two lookups' }] }).finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((block) => (block.type === 'tool_use' ? [block.id, block.input] : block.type))).toEqual([
      ['call_1', { q: 'a' }],
      ['call_2', { q: 'b' }],
    ]);
  });

  it('still streams calls sent one after another as they come, and long interleaved arguments in time', async () => {
    const sequential = [opening, fragment(0, '{"q":"x"}'), fragment(1, '{"q":"y"}'), chunk({}, 'tool_calls'), 'data: [DONE]\n\n'];
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sequential.join('') });
    const events: string[] = [];
    const stream = client().messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 256, tools, messages: [{ role: 'user', content: 'two lookups' }] });
    stream.on('streamEvent', (event) => {
      if (event.type === 'content_block_start' || event.type === 'content_block_stop') events.push(`${event.type} ${event.index}`);
      if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') events.push(`delta ${event.index} ${event.delta.partial_json}`);
    });
    const message = await stream.finalMessage();
    expect(events).toEqual(['content_block_start 0', 'delta 0 {"q":"x"}', 'content_block_stop 0', 'content_block_start 1', 'delta 1 {"q":"y"}', 'content_block_stop 1']);
    expect(message.content.map((block) => (block.type === 'tool_use' ? block.input : null))).toEqual([{ q: 'x' }, { q: 'y' }]);

    // 300 KB each in 20-character turns: the held call's arguments are read once each, not parsed whole at every turn.
    const args = [JSON.stringify({ q: 'a'.repeat(300_000) }), JSON.stringify({ q: 'b'.repeat(300_000) })];
    const long = [opening];
    for (let at = 0; at < (args[0] as string).length; at += 20) for (const index of [0, 1]) long.push(fragment(index, (args[index] as string).slice(at, at + 20)));
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: long.join('') + chunk({}, 'tool_calls') + 'data: [DONE]\n\n' });
    const started = ownNow();
    const answer = await client().messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 256, tools, messages: [{ role: 'user', content: 'two long lookups' }] }).finalMessage();
    const ms = ownNow() - started;
    expect(answer.content.map((block) => (block.type === 'tool_use' ? JSON.stringify(block.input) : null))).toEqual(args);
    expect(ms).toBeLessThan(8_000);
  }, 60_000);
});
