import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAIConfig, startGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A rolling restart ends as soon as the requests the gateway accepted are done: a connection whose client is still
// sending its request (a head or a body that trickles or stalled) when the drain starts (SIGTERM, gateway.close())
// is closed, not waited on for the whole grace period.

let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test', chunkDelayMs: 0 });
});
afterAll(async () => {
  await upstream.close();
});

/** A raw connection that has sent `text` (a request cut short); `closed` settles when the server closes it. */
async function halfSent(port: number, text: string): Promise<{ socket: Socket; closed: Promise<void>; received: () => string }> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (data: string) => (received += data));
  socket.on('error', () => {});
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  await new Promise<void>((done) => socket.once('connect', () => done()));
  socket.write(text);
  return { socket, closed, received: () => received };
}

it('close() drops connections still sending a request, lets the accepted stream finish, and ends without waiting out the grace', async () => {
  const tg = await startGateway(openAIConfig(upstream.url));
  const port = Number(new URL(tg.url).port);
  const head = await halfSent(port, 'GET /health HTTP/1.1\r\nhost: localhost\r\n');
  const body = await halfSent(port, 'POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{"model":');
  try {
    // An accepted request in flight: a stream of a few chunks 150 ms apart.
    upstream.enqueue({ kind: 'slow-chunks', delayMs: 150 });
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'one two three four' }], stream: true });
    // Both half-sent requests are in the server's hands before the drain starts.
    await new Promise((done) => setTimeout(done, 100));
    const startedAt = Date.now();
    const closed = tg.gateway.close(5_000);
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: one two three four');
    const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((done) => setTimeout(() => done('still draining'), 3_000))]);
    expect(outcome).toBe('closed');
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    // Closed, not answered: neither request reached a handler.
    await Promise.all([head.closed, body.closed]);
    expect(head.received() + body.received()).toBe('');
  } finally {
    head.socket.destroy();
    body.socket.destroy();
    await tg.stop();
  }
}, 15_000);
