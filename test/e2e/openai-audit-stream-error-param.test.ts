import { APIError } from 'openai';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// OpenAI reports a failure inside a stream it already opened as an event carrying `error` ({message, type, param,
// code}). The gateway kept its message, type and code but dropped `param`, the field the provider names as the
// cause: the client's error said `param: null` where OpenAI's said `messages`.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 } } },
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
afterEach(() => upstream.reset());

const FAILURE = { message: "This model's maximum context length is 128000 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' };

const CHUNK = {
  id: 'chatcmpl-err1',
  object: 'chat.completion.chunk',
  created: 1732700000,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, logprobs: null, finish_reason: null }],
};

/** An OpenAI stream that fails after `chunks` events with FAILURE as its error event. */
function failingStream(chunks: number): string {
  const events = [...Array<unknown>(chunks).fill(CHUNK), { error: FAILURE }];
  return events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('');
}

async function streamError(): Promise<{ error: APIError; received: number }> {
  let received = 0;
  try {
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    for await (const _chunk of stream) received++;
  } catch (caught) {
    expect(caught).toBeInstanceOf(APIError);
    return { error: caught as APIError, received };
  }
  throw new Error('the stream ended without an error');
}

it('keeps the param of an error event that comes after the stream started', async () => {
  upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: failingStream(1) });
  const { error, received } = await streamError();
  expect(received).toBe(1);
  expect(error.error).toMatchObject(FAILURE);
  expect(error.param).toBe('messages');
});

it('keeps it when the error event is the first the upstream sends (an error status then)', async () => {
  upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: failingStream(0) });
  const { error, received } = await streamError();
  expect(received).toBe(0);
  expect(error.error).toMatchObject(FAILURE);
  expect(error.param).toBe('messages');
});
