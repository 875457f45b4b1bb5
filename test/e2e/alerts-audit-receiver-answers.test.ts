import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { until } from '../helpers/alert-receiver.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A receiver that refuses a delivery often quotes what it was sent: Fastify's default 404 names the method, the path
// and the query (`Route POST:/hooks?token=... not found`), a proxy's 401 names the token it did not accept. The
// delivery log (GET /api/alerts/deliveries, the answer of a channel test) and the gateway's log keep the first line of
// that refusal, and the channel's credentials (a webhook's query token and header values, a chat service's URL,
// PagerDuty's routing key) must not come with it.

const QUERY_TOKEN = 'qtok-7a1c9e0b44d2f6a8';
const HEADER_TOKEN = 'htok-52e8b1d09c7f3a64';
const SLACK_TOKEN = 'slk0N3vVq8ZxR2mT4pLw7yHd';
const ROUTING_KEY = 'R0ut1ngKey5f0c2a9e7b13d84c6a20e1';
const SECRETS = [QUERY_TOKEN, HEADER_TOKEN, SLACK_TOKEN, ROUTING_KEY];

const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

/** Refuses every delivery, quoting what it was sent as common receivers do. */
async function startEchoingReceiver(): Promise<{ url: string; server: Server; received: number }> {
  const state = { url: '', server: null as unknown as Server, received: 0 };
  state.server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.received++;
      const path = req.url ?? '';
      if (path.startsWith('/auth')) {
        return void res.writeHead(401, { 'content-type': 'text/plain' }).end(`invalid credentials: ${String(req.headers.authorization)}\n`);
      }
      if (path.startsWith('/pagerduty')) {
        // The body carries the routing key; a relay that cannot place it says which it was given.
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'invalid event', message: `unknown routing key ${ROUTING_KEY}` }));
      }
      // Fastify's default answer for a route it does not have.
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `Route POST:${path} not found`, error: 'Not Found', statusCode: 404 }));
    });
  });
  await new Promise<void>((done) => state.server.listen(0, '127.0.0.1', done));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}`;
  return state;
}

describe("a receiver's refusal quoting the channel's credentials", () => {
  let upstream: ScriptedUpstream;
  let receiver: Awaited<ReturnType<typeof startEchoingReceiver>>;
  let tg: RunningGateway;
  const logged: string[] = [];
  const { api, createKey, clientFor } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
    receiver = await startEchoingReceiver();
    const once = { max_attempts: 1 };
    tg = await startGateway(
      {
        providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
        alerts: {
          channels: {
            query: { type: 'webhook', url: `${receiver.url}/hooks/tollgate?token=${QUERY_TOKEN}`, retry: once },
            header: { type: 'webhook', url: `${receiver.url}/auth/tollgate`, headers: { authorization: `Bearer ${HEADER_TOKEN}` }, retry: once },
            chat: { type: 'slack', url: `${receiver.url}/services/T0AB12CD3/B0EF45GH6/${SLACK_TOKEN}`, retry: once },
            pager: { type: 'pagerduty', routing_key: ROUTING_KEY, url: `${receiver.url}/pagerduty/v2/enqueue`, retry: once },
          },
          rules: [{ name: 'budget-half', kind: 'budget', thresholds: [50] }],
        },
      },
      {},
      { log: pino({ level: 'info' }, { write: (line: string) => void logged.push(line) }) },
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await new Promise<void>((done) => {
      receiver?.server.closeAllConnections();
      receiver?.server.close(() => done());
    });
    await upstream?.close();
  });

  it('a channel test answers why it failed without the credentials', async () => {
    for (const name of ['query', 'header', 'chat', 'pager']) {
      const test = await api('POST', `/api/alerts/channels/${name}/test`);
      expect(test.status).toBe(200);
      expect(test.body).toMatchObject({ channel: name, outcome: 'failed', httpStatus: expect.any(Number) });
      // Still readable: what the receiver said, with the credential masked.
      expect(test.body.error).toEqual(expect.stringMatching(/not found|invalid credentials|unknown routing key/));
      for (const secret of SECRETS) expect(JSON.stringify(test.body), `${name} test answer`).not.toContain(secret);
    }
  });

  it("a queued notification's failed attempts are logged without them, in the delivery log and the gateway's log", async () => {
    const { key } = await createKey({ name: 'alerted', budget: 4, rate_limit: null, models: [] });
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const deliveries = await (async () => {
      const end = Date.now() + 8_000;
      for (;;) {
        const answer = await api('GET', '/api/alerts/deliveries?rule=budget-half');
        if (answer.body.data.length >= 4) return answer.body.data as Array<Record<string, unknown>>;
        if (Date.now() > end) throw new Error('timed out waiting for four failed deliveries');
        await new Promise((done) => setTimeout(done, 50));
      }
    })();
    expect(deliveries.map((line) => [line.channel, line.outcome]).sort()).toEqual([
      ['chat', 'failed'],
      ['header', 'failed'],
      ['pager', 'failed'],
      ['query', 'failed'],
    ]);
    expect(deliveries.find((line) => line.channel === 'query')?.error).toContain('Route POST:/hooks/tollgate?token=**** not found');
    for (const secret of SECRETS) expect(JSON.stringify(deliveries)).not.toContain(secret);
    await until('the log lines of the failed deliveries', () => logged.filter((line) => line.includes('could not be delivered')).length >= 4);
    for (const secret of SECRETS) expect(logged.filter((line) => line.includes(secret))).toEqual([]);
  });
});
