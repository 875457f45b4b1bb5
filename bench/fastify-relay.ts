import Fastify from 'fastify';
import { Agent, request } from 'undici';

export interface FastifyRelay {
  url: string;
  close(): Promise<void>;
}

/**
 * The framework's floor: what any gateway built on the design card's stack (fastify in front, undici behind) pays
 * before it does anything of its own. It is the bare proxy plus only what a gateway that counts tokens cannot skip:
 * fastify routing the request, the request's JSON parsed (the model decides where it goes), the upstream's JSON
 * answer parsed (its usage is what gets counted) and written back. A stream is piped through as it arrives, without
 * reading its events (less than a gateway must do: the usage is in the last event). No keys, no logs, no metrics.
 * Measured beside the bare proxy and tollgate in the suite (`--targets proxy,fastify,tollgate`), it shows how much
 * of tollgate's cost over the proxy is the stack's rather than tollgate's.
 */
export async function startFastifyRelay(options: { upstream: string; port?: number; host?: string }): Promise<FastifyRelay> {
  // Same pool settings as the bare proxy and the gateway's upstream transport.
  const agent = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000, connect: { timeout: 10_000 } });
  const app = Fastify({ logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  app.post('/v1/chat/completions', async (req, reply) => {
    const body = req.body as { model?: unknown; stream?: unknown };
    const upstream = await request(`${options.upstream}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' },
      body: JSON.stringify(body),
      dispatcher: agent,
    });
    if (body.stream === true) {
      reply.code(upstream.statusCode).header('content-type', String(upstream.headers['content-type'] ?? 'text/event-stream'));
      return reply.send(upstream.body);
    }
    const answer = (await upstream.body.json()) as { model?: unknown };
    answer.model = body.model;
    return reply.code(upstream.statusCode).header('content-type', 'application/json').send(JSON.stringify(answer));
  });
  const url = await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  return {
    url,
    async close() {
      await app.close();
      await agent.close();
    },
  };
}
