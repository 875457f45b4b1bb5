import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import type OpenAI from 'openai';
import { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A company proxy that is down (or a proxy setting with the wrong port) fails every outbound call. The upstream is
// fine and was never asked: the 502 must say the proxy could not be reached and point at settings.network.proxy,
// not say that nothing listens at the provider and send the operator to providers.<name>.base_url. Likewise an
// https:// proxy whose certificate is not trusted: TLS failed with the proxy, not with the upstream.

let upstream: ScriptedUpstream;
let deadProxy: string;
let tg: RunningGateway;

/** A port on 127.0.0.1 that nothing listens on (a server was bound there and closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  deadProxy = `http://ops:s3cret@127.0.0.1:${await closedPort()}`;
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
    settings: { network: { proxy: deadProxy } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

async function failure(client: OpenAI, stream: boolean): Promise<APIError> {
  const error = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

async function loggedMessage(error: APIError): Promise<string> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const found = await gatewayApi(() => tg.url).api('GET', `/api/logs/${error.requestID}`);
    if (found.status === 200) return found.body.error_message as string;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`no log entry for ${error.requestID}`);
}

describe('a proxy that cannot be reached', () => {
  it('gives a 502 that names the proxy and settings.network.proxy, not the provider base_url', async () => {
    const before = upstream.calls.length;
    for (const stream of [false, true]) {
      const error = await failure(tg.client, stream);
      expect(error.status).toBe(502);
      expect(error.message).toContain('Could not reach the proxy');
      expect(error.message).toContain('ECONNREFUSED');
      expect(error.message).toContain('settings.network.proxy');
      expect(error.message).not.toContain('base_url');
      // Neither the client nor the operator's request log sees the proxy's password.
      expect(error.message).not.toContain('s3cret');
      const logged = await loggedMessage(error);
      expect(logged).toContain(`Could not reach the proxy for the upstream at ${upstream.url}/v1/chat/completions`);
      expect(logged).not.toContain('s3cret');
    }
    expect(upstream.calls.length).toBe(before);
  });
});

/** An https:// CONNECT proxy whose certificate `ca` signed; records each tunnel. */
async function startHttpsProxy(ca: TestCa): Promise<{ url: string; tunnels: string[]; close(): Promise<void> }> {
  const tunnels: string[] = [];
  const sockets = new Set<Socket>();
  const server: HttpsServer = createHttpsServer({ key: ca.key, cert: ca.cert });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    tunnels.push(target);
    const at = target.lastIndexOf(':');
    const to = connect(Number(target.slice(at + 1)), target.slice(0, at), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) to.write(head);
      to.pipe(client);
      client.pipe(to);
    });
    sockets.add(client).add(to);
    to.on('error', () => client.destroy());
    client.on('error', () => to.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('an https:// proxy whose certificate is not trusted', () => {
  it('gives a 502 that says TLS failed with the proxy, and works once settings.network.ca_file trusts its CA', async () => {
    const ca = makeTestCa('tollgate proxy test CA');
    const secureProxy = await startHttpsProxy(ca);
    try {
      const untrusted = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } }, settings: { network: { proxy: secureProxy.url } } });
      try {
        const error = await failure(untrusted.client, false);
        expect(error.status).toBe(502);
        expect(error.message).toContain('TLS failed with the proxy');
        expect(error.message).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
        expect(error.message).toContain('settings.network.ca_file or NODE_EXTRA_CA_CERTS');
      } finally {
        await untrusted.stop();
      }
      const trusted = await startGateway({
        providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
        settings: { network: { proxy: secureProxy.url, ca_file: ca.caFile } },
      });
      try {
        const answer = await trusted.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
        expect(answer.choices[0]?.message.content).toBe('echo: hi');
        expect(secureProxy.tunnels).toEqual([`127.0.0.1:${new URL(upstream.url).port}`]);
      } finally {
        await trusted.stop();
      }
    } finally {
      await secureProxy.close();
      ca.remove();
    }
  });
});
