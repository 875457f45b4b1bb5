import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';

/**
 * A key a client brings for a keyless `vertex` provider (x-tollgate-provider-key) is the client's input: it must not
 * choose where the gateway calls (a service account's `token_uri`) nor make the gateway read its own files.
 */

let vertex: VertexUpstream;
let tg: RunningGateway;
let internal: Server;
let proxy: ConnectProxy;
let internalUrl = '';
let dir: string;
let operatorKeyFile: string;
const internalHits: string[] = [];

beforeAll(async () => {
  vertex = await startVertexUpstream();
  // Stands for an internal service (a cloud metadata endpoint): it answers with something a client must never see.
  internal = createServer((req, res) => {
    internalHits.push(`${req.method} ${req.url}`);
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error_description: 'internal-secret-4711' }));
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'tollgate-vertex-client-'));
  // The operator's service account, on the gateway's disk for another provider.
  operatorKeyFile = join(dir, 'sa.json');
  writeFileSync(operatorKeyFile, vertex.serviceAccount, { mode: 0o600 });
  // Everything but loopback leaves through a proxy that refuses every tunnel and records it: Google's token endpoint
  // is asked for there, and nothing leaves the machine.
  proxy = await startConnectProxy({ refuse: 403 });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, network: { proxy: proxy.url, no_proxy: ['127.0.0.1'] } },
    providers: {
      // No key: clients bring their own.
      vertex: { base_url: vertex.url, project: 'client-project' },
      configured: { type: 'vertex', base_url: vertex.url, project: 'client-project', token_url: vertex.tokenUrl },
      operator: { type: 'vertex', base_url: vertex.url, api_key: `file:${operatorKeyFile}` },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await vertex.close();
  await proxy.close();
  await new Promise<void>((resolve) => internal.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

async function chat(clientKey: string, model = 'vertex/gemini-2.5-flash'): Promise<{ status: number; text: string }> {
  const response = await fetch(`${tg.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tollgate-provider-key': clientKey },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, text: await response.text() };
}

describe("a client's own Vertex key", () => {
  it("is exchanged at Google's token endpoint, never at the token_uri the client's service account names", async () => {
    const account = JSON.parse(vertex.serviceAccount) as Record<string, string>;
    account.token_uri = `${internalUrl}/computeMetadata/v1/instance/service-accounts/default/token`;
    const { text } = await chat(JSON.stringify(account));
    expect(internalHits).toEqual([]);
    expect(text).not.toContain('internal-secret-4711');
    expect(proxy.tunnels).toEqual(['oauth2.googleapis.com:443']);
  });

  it("is exchanged at the provider's configured token_url when it has one, and works", async () => {
    const account = JSON.parse(vertex.serviceAccount) as Record<string, string>;
    account.token_uri = `${internalUrl}/token`;
    const before = vertex.tokenRequests;
    const hits = internalHits.length;
    const { status } = await chat(JSON.stringify(account), 'configured/gemini-2.5-flash');
    expect(internalHits.length).toBe(hits);
    expect(vertex.tokenRequests - before).toBe(1);
    expect(status).toBe(200);
  });

  it('is never read as a path on the gateway: a file name is an access token like any other string', async () => {
    const before = vertex.tokenRequests;
    const calls = vertex.calls.length;
    const { status, text } = await chat(operatorKeyFile);
    // The operator's service account was not used: no token was fetched for it, and the upstream saw the string as sent.
    expect(vertex.tokenRequests - before).toBe(0);
    expect(vertex.calls.length - calls).toBe(1);
    expect(vertex.calls.at(-1)?.headers.authorization).toBe(`Bearer ${operatorKeyFile}`);
    expect(status).toBe(401);
    expect(text).not.toContain('cannot read');
    const missing = await chat(join(dir, 'missing.json'));
    expect(missing.text).not.toContain('cannot read the service-account file');
  });
  it("never gets the token cached for another service account of the same client_email: the key must sign its own", async () => {
    // The operator's provider has a token for its service account (client_email is no secret).
    expect((await chat('ignored', 'operator/gemini-2.5-flash')).status).toBe(200);
    const account = JSON.parse(vertex.serviceAccount) as Record<string, string>;
    const { generateKeyPairSync } = await import('node:crypto');
    account.private_key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const before = vertex.tokenRequests;
    const { status } = await chat(JSON.stringify(account), 'configured/gemini-2.5-flash');
    // The forged key is exchanged (and refused) instead of riding on the operator's cached token.
    expect(vertex.tokenRequests - before).toBe(1);
    expect(status).toBe(401);
  });
});
