import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// A chunked body past `max_body_bytes` on a request whose body fastify never reads (a GET, or a content type it
// refuses with 415): the limit's counter fails with nobody reading it. That failure must stay with its request
// (answered, connection closed), not escape as an unhandled stream error that ends the process.

const LIMIT = 1000;

let tg: RunningGateway;
let port: number;

beforeAll(async () => {
  tg = await startGateway({ settings: { max_body_bytes: LIMIT } });
  port = Number(new URL(tg.url).port);
});
afterAll(async () => {
  await tg.stop();
});

/**
 * Sends `head` and a chunked body of `size` bytes, in one write or (`bodyAfterAnswer`) the body once the answer has
 * begun; resolves with all the gateway wrote before closing.
 */
function sendChunked(head: string, size: number, bodyAfterAnswer = false): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, 3_000);
    const body = `${size.toString(16)}\r\n${'x'.repeat(size)}\r\n0\r\n\r\n`;
    socket.on('data', (chunk: Buffer) => {
      if (bodyAfterAnswer && text === '') socket.write(body);
      text += chunk.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.write(`${head}Host: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n${bodyAfterAnswer ? '' : body}`);
  });
}

async function stillServes(): Promise<void> {
  const response = await fetch(`${tg.url}/health`);
  expect(response.status).toBe(200);
  expect(((await response.json()) as { status: string }).status).toBe('ok');
}

describe('a chunked body over the limit that no route reads', () => {
  it('on GET /health: the request is answered, its connection closed, and the gateway serves on', async () => {
    const { text, closed } = await sendChunked('GET /health HTTP/1.1\r\n', LIMIT * 5);
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(closed).toBe(true);
    await stillServes();
  });

  it('with a content type refused (415) on /anthropic: answered in its shape, and the gateway serves on', async () => {
    // The 415 goes out on the headers alone; the body comes after it, with nothing left to read it.
    const { text, closed } = await sendChunked('POST /anthropic/v1/messages HTTP/1.1\r\nContent-Type: text/plain\r\n', LIMIT * 5, true);
    expect(text).toMatch(/^HTTP\/1\.1 415 /);
    expect(text).toContain('"type":"error"');
    expect(closed).toBe(true);
    await stillServes();
  });
});
