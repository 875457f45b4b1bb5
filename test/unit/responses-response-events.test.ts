// A whole Response as the documented event stream (for a streaming client served an answer stored whole): the
// official SDK's own accumulator, fed the events up to response.completed, builds every item of the Response again.
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import type { Response, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { eventsResponse } from '../../src/wire/openai-responses/events-response.js';
import { responseEvents } from '../../src/wire/openai-responses/response-events.js';

const response = {
  id: 'resp_1',
  object: 'response',
  created_at: 1,
  completed_at: 2,
  status: 'completed',
  model: 'gpt-5-2025-08-07',
  output: [
    { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'thought' }], encrypted_content: 'gAAAAAsecret' },
    { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'tollgate' } },
    {
      id: 'msg_1',
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [
        { type: 'output_text', text: 'See the site \u00e9 \ud83d\ude00', annotations: [{ type: 'url_citation', start_index: 0, end_index: 3, url: 'https://example.com', title: 'Example' }], logprobs: [] },
        { type: 'refusal', refusal: 'not that part' },
      ],
    },
    { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' },
  ],
  usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 3 }, total_tokens: 14 },
};

describe('responseEvents', () => {
  it('streams every item so the SDK accumulates the Response again, numbered from 0, ending with response.completed', () => {
    const events = responseEvents(response).map((item) => JSON.parse(item.data) as ResponseStreamEvent);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((event) => event.type).slice(0, 3)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added']);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response });
    let snapshot: Response | undefined;
    for (const event of events.slice(0, -1)) snapshot = accumulateResponse(event, snapshot);
    expect(snapshot?.output).toEqual(response.output);
    expect(snapshot?.status).toBe('in_progress');
    // The encrypted content comes with the finished reasoning item only, as OpenAI streams it.
    const added = events.find((event) => event.type === 'response.output_item.added');
    expect(added).toMatchObject({ item: { id: 'rs_1', summary: [] } });
    expect(JSON.stringify(added)).not.toContain('encrypted_content');
    expect(eventsResponse(responseEvents(response))).toEqual(response);
  });

  it('ends an incomplete Response with response.incomplete', () => {
    const incomplete = { ...response, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
    expect(responseEvents(incomplete).at(-1)?.event).toBe('response.incomplete');
  });
});
