// GET /v1/responses/{id}?stream=true replays a stored Response as its event stream. OpenAI's reference documents
// `starting_after` on that call ("The sequence number of the event after which to start streaming"), which a client
// resuming a stream that broke off sends with the last sequence_number it saw: it must get only the events after it,
// numbered as before, never the whole stream again (its text would be shown twice).
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';

let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({ providers: { anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' } } });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
});

async function replay(id: string, query: Record<string, unknown>): Promise<any[]> {
  const stream = await client.responses.retrieve(id, { stream: true, ...query } as { stream: true });
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('retrieving a stored Response as a stream', () => {
  it('with starting_after gives only the events after that sequence number', async () => {
    const kept = await client.responses.create({ model: CLAUDE, input: 'tell me about the weather in Paris today' });
    const all = await replay(kept.id, {});
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, i) => i));
    const after = 4;
    const rest = await replay(kept.id, { starting_after: after });
    expect(rest.map((event) => event.sequence_number)).toEqual(all.slice(after + 1).map((event) => event.sequence_number));
    expect(rest).toEqual(all.slice(after + 1));
    expect(rest.at(-1)).toMatchObject({ type: 'response.completed', response: { id: kept.id } });
    // After the last event there is nothing more to send; 0 skips only response.created.
    expect(await replay(kept.id, { starting_after: all.length - 1 })).toEqual([]);
    expect((await replay(kept.id, { starting_after: 0 }))[0]).toMatchObject({ type: 'response.in_progress', sequence_number: 1 });
  });

  it('with a starting_after that is not a sequence number is a 400 naming it', async () => {
    const kept = await client.responses.create({ model: CLAUDE, input: 'hello' });
    const response = await fetch(`${tg.url}/v1/responses/${kept.id}?stream=true&starting_after=later`);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'starting_after' } });
  });
});
