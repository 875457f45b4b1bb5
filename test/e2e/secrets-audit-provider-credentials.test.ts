import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

// A provider's credentials are not only its key: a gateway in front of the vendor takes its own credential header
// (Cloudflare AI Gateway's `cf-aig-authorization`, Azure API Management's `Ocp-Apim-Subscription-Key`), and a base
// URL may carry one (`?api_key=`, `user:password@`). The README counts them as secrets (masked, sealed, shown as
// their reference). An upstream that refuses an attempt may quote what it was sent, as it may quote the key: a 401
// naming the credential it did not accept, a 404 naming the URL with its query. The key is taken out of
// such an error; the other credentials reached the client, the request log and its export, and the gateway's log.

const KEY = 'sk-provider-key-3f9a1c7e2b8d4f60';
const GATEWAY_TOKEN = 'cfaig-token-8e2d4b6a1c9f3e70';
const APIM_KEY = 'apim0c4e8a2f6b1d9e3a7c5f0b2d';
const QUERY_KEY = 'qkey-5b7d9f1a3c8e0b2d4f6a';
const SECRETS = [GATEWAY_TOKEN, APIM_KEY, QUERY_KEY];

/**
 * An OpenAI-compatible gateway in front of the vendor: it wants `cf-aig-authorization: Bearer <token>` and
 * `ocp-apim-subscription-key`, and refuses with a 401 naming what it was given; any path but `/v1/chat/completions`
 * gets OpenAI's 404 for a URL it does not serve (`Invalid URL (POST /path)`), quoting the path with its query.
 */
async function startRefusingGateway(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '';
      if (!path.startsWith('/v1/chat/completions')) {
        return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `Invalid URL (${req.method} ${path})`, type: 'invalid_request_error', param: null, code: null } }));
      }
      const given = `${String(req.headers['cf-aig-authorization'])}, subscription ${String(req.headers['ocp-apim-subscription-key'])}`;
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `Unauthorized: gateway credentials not accepted (${given})`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("an upstream error quoting the provider's credential headers or its base URL's credentials", () => {
  let upstream: Awaited<ReturnType<typeof startRefusingGateway>>;
  let tg: RunningGateway;
  const logged: string[] = [];
  const { api } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    upstream = await startRefusingGateway();
    tg = await startGateway(
      {
        providers: {
          // Through the credential headers, whose values come from the environment as the README shows.
          edge: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: KEY, headers: { 'cf-aig-authorization': 'env:CF_AIG_TOKEN', 'Ocp-Apim-Subscription-Key': 'env:APIM_KEY' } },
          // A base URL with its key in the query, at a path the upstream does not serve.
          lab: { type: 'openai', base_url: `${upstream.url}/openai/v1?api_key=${QUERY_KEY}`, api_key: KEY },
        },
      },
      { CF_AIG_TOKEN: `Bearer ${GATEWAY_TOKEN}`, APIM_KEY },
      { log: pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) }) },
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await new Promise<void>((done) => {
      upstream?.server.closeAllConnections();
      upstream?.server.close(() => done());
    });
  });

  it('the client, the request log, its export and the gateway log read the error without them', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];

    const refused = await client.chat.completions.create({ model: 'edge/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    const refusedError = refused as InstanceType<typeof OpenAI.AuthenticationError>;
    // Still the upstream's own words, with the credentials taken out.
    expect(refusedError.message).toContain('gateway credentials not accepted');
    expect(refusedError.message).toContain('[REDACTED]');
    for (const secret of SECRETS) expect(JSON.stringify(refusedError.error)).not.toContain(secret);

    const streamed = await client.chat.completions.create({ model: 'edge/gpt-4o-mini', messages, stream: true }).catch((err: unknown) => err);
    expect(streamed).toBeInstanceOf(OpenAI.AuthenticationError);
    for (const secret of SECRETS) expect(JSON.stringify((streamed as InstanceType<typeof OpenAI.APIError>).error)).not.toContain(secret);

    const notFound = await client.chat.completions.create({ model: 'lab/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    expect((notFound as InstanceType<typeof OpenAI.APIError>).message).toMatch(/^404 Invalid URL \(POST \/openai\/v1.*api_key=\[REDACTED\]/);
    for (const secret of SECRETS) expect(JSON.stringify((notFound as InstanceType<typeof OpenAI.APIError>).error)).not.toContain(secret);

    const logs = await api('GET', '/api/logs?limit=10');
    expect(logs.body.data).toHaveLength(3);
    expect(logs.body.data.map((entry: { status: number }) => entry.status).sort()).toEqual([401, 401, 404]);
    const exported = await (await fetch(`${tg.url}/api/logs/export`)).text();
    const csv = await (await fetch(`${tg.url}/api/logs/export?format=csv`)).text();
    for (const secret of SECRETS) {
      expect(JSON.stringify(logs.body), 'GET /api/logs').not.toContain(secret);
      expect(exported, 'GET /api/logs/export').not.toContain(secret);
      expect(csv, 'GET /api/logs/export?format=csv').not.toContain(secret);
      expect(logged.filter((line) => line.includes(secret)), "the gateway's log").toEqual([]);
    }
  });
});
