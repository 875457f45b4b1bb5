import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// What a request that reaches the gateway while it drains (after SIGTERM, `gateway.close()`) is answered: the
// requests in flight finish, a new one on a connection still open gets a 503 in its route family's error shape.

let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
});
afterAll(async () => {
  await upstream.close();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits what a keep-alive connection received into its answers (each with a Content-Length or chunked body). */
function splitAnswers(text: string): Answer[] {
  const answers: Answer[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    const [statusLine = '', ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
    rest = rest.slice(headEnd + 4);
    let body = '';
    if (headers['content-length'] !== undefined) {
      body = rest.slice(0, Number(headers['content-length']));
      rest = rest.slice(body.length);
    } else {
      // Chunked: read chunks up to the zero-length one.
      for (;;) {
        const sizeEnd = rest.indexOf('\r\n');
        const size = parseInt(rest.slice(0, sizeEnd), 16);
        body += rest.slice(sizeEnd + 2, sizeEnd + 2 + size);
        rest = rest.slice(sizeEnd + 2 + size + 2);
        if (size === 0) break;
      }
    }
    answers.push({ status: Number(statusLine.split(' ')[1]), headers, body });
  }
  return answers;
}

function post(path: string, body: object, headers: string[] = []): string {
  const text = JSON.stringify(body);
  return [`POST ${path} HTTP/1.1`, 'host: localhost', 'content-type: application/json', `content-length: ${Buffer.byteLength(text)}`, ...headers, '', text].join('\r\n');
}

/**
 * Starts a slow stream on one connection, begins the drain once its first bytes arrived, then sends `next` on that
 * same connection (the server no longer accepts connections, but this one is busy, so it stays open). Returns both
 * answers, read until the server closes the connection.
 */
async function requestDuringDrain(tg: RunningGateway, next: string): Promise<{ first: Answer; second: Answer; closed: Promise<void> }> {
  upstream.enqueue({ kind: 'slow-chunks', delayMs: 150 });
  const socket = connect(Number(new URL(tg.url).port), '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  const firstBytes = new Promise<void>((resolve) => socket.once('data', () => resolve()));
  socket.on('data', (data: string) => (text += data));
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(post('/v1/chat/completions', { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'one two three four' }] }));
  await firstBytes;
  const closed = tg.gateway.close(10_000);
  socket.write(next);
  await ended;
  const answers = splitAnswers(text);
  expect(answers, text).toHaveLength(2);
  const [first, second] = answers as [Answer, Answer];
  return { first, second, closed };
}

describe('a request that arrives while the gateway drains', () => {
  it('gets a 503 in the OpenAI shape with its x-request-id, after the stream in flight finished whole', async () => {
    const tg = await startGateway(openAIConfig(upstream.url));
    const { first, second, closed } = await requestDuringDrain(tg, post('/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));
    await closed;
    await tg.stop();
    expect(first.status).toBe(200);
    expect(first.body).toContain('data: [DONE]');
    expect(second.status).toBe(503);
    expect(second.headers.connection).toBe('close');
    expect(second.headers['x-request-id']).toMatch(/\S/);
    expect(JSON.parse(second.body)).toEqual({
      error: { message: expect.stringContaining('shutting down'), type: 'service_unavailable', param: null, code: 'shutting_down' },
    });
    // The refused request never reached the upstream.
    expect(upstream.calls.filter((call) => call.body?.stream !== true)).toHaveLength(0);
  });

  it('gets it in Anthropic\'s shape on /anthropic', async () => {
    const tg = await startGateway(openAIConfig(upstream.url));
    const { second, closed } = await requestDuringDrain(
      tg,
      post('/anthropic/v1/messages', { model: 'openai/gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, ['anthropic-version: 2023-06-01']),
    );
    await closed;
    await tg.stop();
    expect(second.status).toBe(503);
    expect(JSON.parse(second.body)).toMatchObject({ type: 'error', error: { type: expect.any(String), message: expect.stringContaining('shutting down') } });
    expect(second.headers['x-request-id']).toMatch(/\S/);
  });
});
