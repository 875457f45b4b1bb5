import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/**
 * Sends `{"object":"list","data":[...]}` (the text a list answer always had) as its chunks are read, so a long list
 * (every key of a large gateway: 11 MB for 20,000) is never built or serialized in one go, which held the event loop
 * and every request behind it.
 */
export function sendJsonList(reply: FastifyReply, chunks: AsyncIterable<readonly unknown[]>): FastifyReply {
  async function* text(): AsyncGenerator<string> {
    yield '{"object":"list","data":[';
    let first = true;
    for await (const chunk of chunks) {
      if (chunk.length === 0) continue;
      const items = chunk.map((item) => JSON.stringify(item)).join(',');
      yield first ? items : `,${items}`;
      first = false;
    }
    yield ']}';
  }
  reply.header('content-type', 'application/json; charset=utf-8');
  // A HEAD (which fastify answers with the GET's handler) wants the headers only: the list is not read for it.
  if (reply.request.method === 'HEAD') return reply.send();
  return reply.send(Readable.from(text()));
}
