import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Mistral takes tool call ids only as nine letters and digits, and answers any other in the history with 400 "Tool
 * call id was X but must be a-z, A-Z, 0-9, with a length of 9." A conversation that began elsewhere (OpenAI's
 * `call_...`, Claude Code's `toolu_...` on /anthropic, a fallback's earlier turn) must still reach Mistral.
 */

let mistral: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;
const NINE = /^[a-zA-Z0-9]{9}$/;

beforeAll(async () => {
  mistral = await startOpenAIUpstream({ apiKey: 'mistral-upstream', vendor: 'mistral' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { mistral: { base_url: `${mistral.url}/v1`, api_key: 'mistral-upstream' } },
  });
  client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
});
afterAll(async () => {
  await tg?.stop();
  await mistral?.close();
});
beforeEach(() => mistral.reset());

const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }];

function history(first: string, second: string): OpenAI.ChatCompletionMessageParam[] {
  return [
    { role: 'user', content: 'look two things up' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: first, type: 'function', function: { name: 'lookup', arguments: '{"query":"a"}' } },
        { id: second, type: 'function', function: { name: 'lookup', arguments: '{"query":"b"}' } },
      ],
    },
    { role: 'tool', tool_call_id: first, content: 'result a' },
    { role: 'tool', tool_call_id: second, content: 'result b' },
    { role: 'user', content: 'thanks, sum up' },
  ];
}

/** The ids Mistral got: each assistant call's, then each tool message's. */
function sentIds(body: any): { calls: string[]; answers: string[] } {
  const messages = body.messages as any[];
  return {
    calls: messages.flatMap((m) => (Array.isArray(m.tool_calls) ? m.tool_calls.map((c: any) => c.id) : [])),
    answers: messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id),
  };
}

describe('tool call ids to Mistral', () => {
  it("reach Mistral as nine letters and digits, each call still matched by its answer, for an OpenAI client's history", async () => {
    const completion = await client.chat.completions.create({ model: 'mistral/mistral-small-latest', tools, tool_choice: 'none', messages: history('call_Jx2kq8ZP0aLt7wYbNf3cR1sD', 'call_9mVbQe4TzL1oPa6sWn2uYk8H') });
    expect(completion.choices[0]?.message.content).toBeTruthy();
    const { calls, answers } = sentIds(mistral.calls[0]?.body);
    expect(calls).toHaveLength(2);
    for (const id of calls) expect(id).toMatch(NINE);
    expect(new Set(calls).size).toBe(2);
    expect(answers).toEqual(calls);

    // The same history again (the next turn resends it): the same ids, so Mistral's cache and the pairing hold.
    await client.chat.completions.create({ model: 'mistral/mistral-small-latest', tools, tool_choice: 'none', messages: history('call_Jx2kq8ZP0aLt7wYbNf3cR1sD', 'call_9mVbQe4TzL1oPa6sWn2uYk8H') });
    expect(sentIds(mistral.calls[1]?.body).calls).toEqual(calls);
  });

  it("keeps Mistral's own ids as they are, streamed too", async () => {
    const first = await client.chat.completions.create({ model: 'mistral/mistral-small-latest', tools, tool_choice: 'required', messages: [{ role: 'user', content: 'look it up' }] });
    const own = first.choices[0]?.message.tool_calls?.[0]?.id as string;
    expect(own).toMatch(NINE);
    const stream = await client.chat.completions.create({ model: 'mistral/mistral-small-latest', tools, tool_choice: 'none', stream: true, messages: history(own, 'toolu_01A09q90qw90lq917835lq9') });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    const { calls, answers } = sentIds(mistral.calls[1]?.body);
    expect(calls[0]).toBe(own);
    expect(calls[1]).toMatch(NINE);
    expect(answers).toEqual(calls);
  });

  it("reach Mistral from Claude Code's history on /anthropic (toolu_ ids)", async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: 'mistral/mistral-small-latest',
      max_tokens: 200,
      tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { query: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'look it up' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'lookup', input: { query: 'a' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: 'result a' }, { type: 'text', text: 'sum up' }] },
      ],
    });
    expect(message.content.length).toBeGreaterThan(0);
    const { calls, answers } = sentIds(mistral.calls[0]?.body);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatch(NINE);
    expect(answers).toEqual(calls);
  });
});
