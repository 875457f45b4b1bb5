import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI, type GenerateContentResponse } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * An upstream error inside an open stream, as the client sees it: the events the upstream sent before it reach the
 * client first (also when they came in the same network read as the error), the error itself is the upstream's own
 * when client and provider speak the same format, and a Gemini stream of several candidates is whole only when each
 * candidate finished.
 */

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;
let claude: Anthropic;
let ai: GoogleGenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  tg = await startGateway({
    // One attempt: a failure is the client's to see, not retried away.
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
    },
  });
  claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-key', maxRetries: 0, timeout: 10_000 });
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 10_000 } });
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await gemini?.close();
});

beforeEach(() => {
  anthropic.reset();
  gemini.reset();
});

/** The data of an SSE frame as the scripted upstream wrote it. */
function frameData(frame: string): any {
  return JSON.parse(frame.slice(frame.indexOf('data: ') + 'data: '.length));
}

async function logOf(requestId: string): Promise<{ completion_tokens: number }> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const found = await jsonRequest(tg.url, 'GET', `/api/logs/${requestId}`);
    if (found.status === 200) return found.body as { completion_tokens: number };
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`no log entry for ${requestId}`);
}

/** Reads an Anthropic SDK stream to its end or its error: the events seen, and the error. */
async function readClaude(stream: AsyncIterable<Anthropic.RawMessageStreamEvent>): Promise<{ events: Anthropic.RawMessageStreamEvent[]; error: unknown }> {
  const events: Anthropic.RawMessageStreamEvent[] = [];
  try {
    for await (const event of stream) events.push(event);
    return { events, error: null };
  } catch (error) {
    return { events, error };
  }
}

/** Reads a Gen AI SDK stream to its end or its error (the request itself failing included). */
async function readGemini(open: () => Promise<AsyncGenerator<GenerateContentResponse>>): Promise<{ events: GenerateContentResponse[]; error: unknown }> {
  const events: GenerateContentResponse[] = [];
  try {
    for await (const event of await open()) events.push(event);
    return { events, error: null };
  } catch (error) {
    return { events, error };
  }
}

/** The Google error object the Gen AI SDK raised a stream's error event with (its message quotes the event). */
function googleErrorOf(error: unknown): unknown {
  expect(error).toBeInstanceOf(ApiError);
  const message = (error as ApiError).message;
  return (JSON.parse(message.slice(message.indexOf('{'))) as { error: unknown }).error;
}

describe('Anthropic SDK on /anthropic, Anthropic upstream', () => {
  const question = { model: 'anthropic/claude-haiku-4-5', max_tokens: 200, messages: [{ role: 'user' as const, content: 'alpha beta gamma delta epsilon zeta' }] };

  it('relays the text deltas that came in one read with an error event before the error, and counts them', async () => {
    // message_start, content_block_start, ping, then two text deltas written together with the error event.
    anthropic.enqueue({ kind: 'stream-error', after: 5, together: 2 });
    const { data: stream, response } = await claude.messages.create({ ...question, stream: true }).withResponse();
    const { events, error } = await readClaude(stream);

    const deltas = (anthropic.sent.at(-1)?.frames ?? []).slice(3, 5).map((frame) => frameData(frame).delta.text as string);
    expect(deltas).toHaveLength(2);
    expect(events.map((event) => event.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta']);
    expect(events.slice(2).map((event) => (event as Anthropic.RawContentBlockDeltaEvent).delta)).toEqual(deltas.map((text) => ({ type: 'text_delta', text })));
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    // The words the client got are charged as output, more than the one token message_start reported.
    expect((await logOf(response.headers.get('x-request-id') ?? '')).completion_tokens).toBeGreaterThan(1);
  });

  it('passes an error event of a type the gateway does not know with its own type', async () => {
    anthropic.enqueue({ kind: 'stream-error', after: 4, type: 'some_future_error', message: 'Something new went wrong.' });
    const { events, error } = await readClaude(await claude.messages.create({ ...question, stream: true }));
    expect(events.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toEqual({ type: 'error', error: { type: 'some_future_error', message: 'Something new went wrong.' } });
  });
});

describe('Gen AI SDK on /genai, Gemini upstream', () => {
  const question = { model: 'gemini-2.5-flash', contents: 'one two three four five six seven eight nine' };

  it('relays the events that came in one read with an error event before the error', async () => {
    gemini.enqueue({ kind: 'stream-error', chunks: 2, together: 2 });
    const { events, error } = await readGemini(() => ai.models.generateContentStream(question));
    const planned = gemini.streamed.at(-1) ?? [];
    expect(events.map((event) => event.text)).toEqual(planned.slice(0, 2).map((event) => event.candidates[0].content.parts[0].text));
    expect(googleErrorOf(error)).toMatchObject({ code: 500, status: 'INTERNAL' });
  });

  it("passes Gemini's error event through as Gemini wrote it: code, status, message and details", async () => {
    const sent = {
      code: 400,
      message: 'Request contains an invalid argument.',
      status: 'INVALID_ARGUMENT',
      details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'generation_config', description: 'Not supported mid-answer.' }] }],
    };
    gemini.enqueue({ kind: 'stream-error', chunks: 1, error: sent });
    const { events, error } = await readGemini(() => ai.models.generateContentStream(question));
    expect(events.length).toBe(1);
    expect((error as ApiError).status).toBe(400);
    expect(googleErrorOf(error)).toEqual(sent);
  });

  /** An `alt=sse` body of these GenerateContentResponse events, as Gemini frames them. */
  function sse(events: unknown[]): string {
    return events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join('');
  }
  const candidate = (index: number, text: string, finishReason?: string) => ({ content: { role: 'model', parts: [{ text }] }, index, ...(finishReason ? { finishReason } : {}) });
  const answer = (...candidates: unknown[]) => ({ candidates, modelVersion: 'gemini-2.5-flash', responseId: 'resp-multi' });
  const twoCandidates = { ...question, config: { candidateCount: 2 } };

  it('reports a stream of two candidates cut after only the first finished as broken', async () => {
    const body = sse([answer(candidate(0, 'A1'), candidate(1, 'B1')), answer(candidate(0, 'A2', 'STOP'))]);
    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const { events, error } = await readGemini(() => ai.models.generateContentStream(twoCandidates));
    expect(events.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBeGreaterThanOrEqual(500);
  });

  it('ends a stream of two candidates normally once both finished', async () => {
    const body = sse([answer(candidate(0, 'A1'), candidate(1, 'B1')), answer(candidate(0, 'A2', 'STOP')), answer(candidate(1, 'B2', 'STOP'))]);
    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const { events, error } = await readGemini(() => ai.models.generateContentStream(twoCandidates));
    expect(error).toBeNull();
    const finished = events.flatMap((event) => event.candidates ?? []).filter((c) => c.finishReason === 'STOP').map((c) => c.index);
    expect(finished.sort()).toEqual([0, 1]);
  });
});
