import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIError } from 'openai';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream } from '../upstream/azure-upstream.js';
import { startEntraEndpoint } from '../upstream/entra-token-endpoint.js';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';

// README, "Private networks": Vertex AI's and Entra ID's token endpoints are called through the proxy like every provider call. When
// the proxy is the reason no token came (it refuses the tunnel, or it cannot be reached), the error says so and points
// at settings.network, as a provider call's does, rather than "the token endpoint could not be reached
// (UND_ERR_ABORTED)" or "(ECONNREFUSED)", which send the operator looking at Google.

let vertex: VertexUpstream;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  vertex = await startVertexUpstream();
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await vertex?.close();
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function gatewayBehind(proxyUrl: string): Promise<RunningGateway> {
  const tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, network: { proxy: proxyUrl } },
    providers: { vertex: { base_url: vertex.url, api_key: vertex.serviceAccount } },
  });
  cleanups.push(() => tg.stop());
  return tg;
}

async function failure(tg: RunningGateway): Promise<APIError> {
  const error = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

describe("Vertex AI's token endpoint behind a proxy", () => {
  it('a proxy that refuses the tunnel (407): the error names the proxy and its answer', async () => {
    const refusing: ConnectProxy = await startConnectProxy({ refuse: 407 });
    cleanups.push(() => refusing.close());
    const tg = await gatewayBehind(refusing.url);
    const before = vertex.tokenRequests;
    const error = await failure(tg);
    expect(error.status).toBe(502);
    expect(error.message).toContain('token endpoint');
    expect(error.message).toContain('proxy refused the tunnel');
    expect(error.message).toContain('407');
    expect(error.message).toContain('settings.network');
    expect(refusing.tunnels).toEqual([`127.0.0.1:${new URL(vertex.tokenUrl).port}`]);
    expect(vertex.tokenRequests).toBe(before);
  });

  it('a proxy that cannot be reached: the error says the proxy could not be reached', async () => {
    const tg = await gatewayBehind(`http://127.0.0.1:${await closedPort()}`);
    const error = await failure(tg);
    expect(error.status).toBe(502);
    expect(error.message).toContain('token endpoint');
    expect(error.message).toContain('proxy could not be reached');
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).toContain('settings.network');
  });
});

describe("Microsoft Entra ID's token endpoint behind a proxy that cannot be reached", () => {
  it('the error says the proxy could not be reached for the token endpoint', async () => {
    const entra = await startEntraEndpoint();
    const azure = await startAzureUpstream({ acceptsBearer: (token) => entra.accepts(token) });
    cleanups.push(() => entra.close(), () => azure.close());
    const tg = await startGateway({
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, network: { proxy: `http://127.0.0.1:${await closedPort()}` } },
      providers: {
        azure: {
          type: 'azure',
          base_url: azure.url,
          api_version: '2024-10-21',
          auth: { type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'entra-secret-value', authority_host: entra.url },
        },
      },
    });
    cleanups.push(() => tg.stop());
    const error = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(APIError);
    const message = (error as APIError).message;
    expect(message).toContain('proxy could not be reached for the token endpoint');
    expect(message).toContain('ECONNREFUSED');
    expect(message).toContain('settings.network');
    expect(message).not.toContain('entra-secret-value');
    expect(entra.calls).toEqual([]);
  });
});
