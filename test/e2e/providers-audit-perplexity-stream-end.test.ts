import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Perplexity's chat completions stream does not end with OpenAI's `data: [DONE]` (perplexityai/api-discussion#209,
 * "No done SSE event sent for streamed API response", reproduced with every Sonar model; Portkey's Perplexity
 * transform met a literal [DONE] only from sonar-deep-research, gateway PR #1526). Each event is a whole
 * `chat.completion` carrying `message` and `delta`, the running `usage` and the `citations`; the last has
 * `finish_reason: "stop"` (the shape issue #209 quotes, with its CRLF framing). Such a stream is whole once every
 * choice has finished: tollgate took its end for a stream cut before its end marker, so every streamed Perplexity
 * answer ended with an error event for the client (the OpenAI SDK throws it after the text) and was logged as a 502.
 */

let perplexity: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  perplexity = await startOpenAIUpstream({ apiKey: 'pplx-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { perplexity: { base_url: `${perplexity.url}/v1`, api_key: 'pplx-upstream' } },
  });
  client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
});

afterAll(async () => {
  await tg?.stop();
  await perplexity?.close();
});

beforeEach(() => perplexity.reset());

const CITATIONS = ['https://en.wikipedia.org/wiki/Milky_Way', 'https://science.nasa.gov/milky-way'];

/** Perplexity's stream of `pieces`: no [DONE] after the last event (unless `done`), which finishes with `stop` or not at all. */
function perplexityStream(pieces: string[], options: { finish?: boolean; done?: boolean } = {}): string {
  const head = { id: '21899d42-c7fc-40e3-88a2-1780bf30c357', model: 'sonar', created: 1723902901, object: 'chat.completion' };
  let text = '';
  const events = pieces.map((piece, i) => {
    text += piece;
    const last = i === pieces.length - 1;
    const usage = { prompt_tokens: 14, completion_tokens: i + 1, total_tokens: 15 + i, search_context_size: 'low' };
    const finish = last && options.finish !== false ? 'stop' : null;
    return `data: ${JSON.stringify({ ...head, usage, citations: CITATIONS, choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', content: text }, delta: { role: 'assistant', content: piece } }] })}\r\n\r\n`;
  });
  return events.join('') + (options.done === true ? 'data: [DONE]\r\n\r\n' : '');
}

async function lastLog(): Promise<Record<string, any>> {
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as { data: Array<Record<string, any>> };
    if (body.data[0]) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe('a Perplexity stream without [DONE]', () => {
  it('ends cleanly for the OpenAI client once its choice finished: text, citations and usage as sent, logged as answered', async () => {
    perplexity.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: perplexityStream(['Our galaxy', ' holds', ' 100 billion stars.']) });
    const stream = await client.chat.completions.create({ model: 'perplexity/sonar', stream: true, messages: [{ role: 'user', content: 'How many stars are in our galaxy?' }] });
    let text = '';
    let finish: string | null = null;
    const extras: unknown[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      extras.push((chunk as unknown as { citations?: unknown }).citations);
    }
    expect(text).toBe('Our galaxy holds 100 billion stars.');
    expect(finish).toBe('stop');
    expect(extras.every((citations) => JSON.stringify(citations) === JSON.stringify(CITATIONS))).toBe(true);
    const log = await lastLog();
    expect(log).toMatchObject({ status: 200, prompt_tokens: 14, completion_tokens: 3 });
    expect(log.error_code ?? null).toBeNull();
  });

  it('is still the same answer with a [DONE] (sonar-deep-research sends one)', async () => {
    perplexity.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: perplexityStream(['Deep', ' research.'], { done: true }) });
    const stream = await client.chat.completions.create({ model: 'perplexity/sonar-deep-research', stream: true, messages: [{ role: 'user', content: 'research' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Deep research.');
  });

  it('is still cut short when it ends before its choice finished', async () => {
    perplexity.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: perplexityStream(['Our galaxy', ' holds'], { finish: false }) });
    const stream = await client.chat.completions.create({ model: 'perplexity/sonar', stream: true, messages: [{ role: 'user', content: 'How many stars are in our galaxy?' }] });
    let text = '';
    const failure = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((err: unknown) => err);
    expect(text).toBe('Our galaxy holds');
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).message).toContain('ended before its end marker');
  });
});
