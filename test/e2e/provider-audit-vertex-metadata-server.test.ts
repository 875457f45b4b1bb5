import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMetadataServer, type MetadataServer } from '../upstream/gce-metadata-upstream.js';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * Vertex AI on Google Cloud without a key file (GKE, Cloud Run, GCE): Application Default Credentials come from the
 * metadata server. The provider has no key and the environment names none (no VERTEX_CREDENTIALS nor
 * GOOGLE_APPLICATION_CREDENTIALS), gcloud's ADC file is absent (CLOUDSDK_CONFIG is an empty directory), and
 * GCE_METADATA_HOST points at a scripted metadata server whose tokens the scripted Vertex AI takes.
 */

let vertex: VertexUpstream;
let metadata: MetadataServer;
let tg: RunningGateway;
let dir: string;
let closedPort: number;
const saved = { GCE_METADATA_HOST: process.env.GCE_METADATA_HOST, CLOUDSDK_CONFIG: process.env.CLOUDSDK_CONFIG };

function setEnv(name: keyof typeof saved, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

beforeAll(async () => {
  vertex = await startVertexUpstream();
  metadata = await startMetadataServer(() => vertex.issueToken());
  dir = mkdtempSync(join(tmpdir(), 'tollgate-vertex-mds-'));
  mkdirSync(join(dir, 'no-gcloud'));
  setEnv('GCE_METADATA_HOST', metadata.host);
  setEnv('CLOUDSDK_CONFIG', join(dir, 'no-gcloud'));
  // A port nothing listens on: a host off Google Cloud, where no metadata server answers.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  tg = await startGateway(
    {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      // No key, no project: both come from the metadata server. token_url only serves the gcloud-file case below.
      providers: { vertex: { base_url: vertex.url, region: 'us-east5', token_url: vertex.tokenUrl } },
    },
    {},
  );
});
afterAll(async () => {
  setEnv('GCE_METADATA_HOST', saved.GCE_METADATA_HOST);
  setEnv('CLOUDSDK_CONFIG', saved.CLOUDSDK_CONFIG);
  await tg?.stop();
  await metadata?.close();
  await vertex?.close();
  rmSync(dir, { recursive: true, force: true });
});

const tokenRequests = (): number => metadata.received.filter((r) => r.url.startsWith('GET /computeMetadata/v1/instance/service-accounts/default/token')).length;

describe('Vertex AI with no key, on Google Cloud (the metadata server)', () => {
  it("calls with the metadata server's token and project, fetched once for Gemini and Claude, streamed or not", async () => {
    const gemini = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi from gke' }] });
    expect(gemini.choices[0]?.message.content).toBe('echo: hi from gke');
    const call = vertex.calls.at(-1);
    expect(call?.path).toBe('/v1/projects/metadata-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent');
    expect(metadata.tokens).toHaveLength(1);
    expect(call?.headers.authorization).toBe(`Bearer ${metadata.tokens[0]}`);
    // A service account's token bills its own project: no quota project is named.
    expect(call?.headers['x-goog-user-project']).toBeUndefined();
    // Asked as Google's libraries ask: with Metadata-Flavor, for the cloud-platform scope.
    expect(metadata.received.every((r) => r.flavor === 'Google')).toBe(true);
    expect(metadata.received.find((r) => r.url.includes('/token'))?.url).toContain('scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform');

    const stream = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'stream from gke' }], max_tokens: 50, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toContain('stream from gke');
    expect(vertex.calls.at(-1)?.path).toBe('/v1/projects/metadata-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    expect(vertex.calls.at(-1)?.headers.authorization).toBe(`Bearer ${metadata.tokens[0]}`);
    // The token is cached until near its expiry, the project for good.
    expect(tokenRequests()).toBe(1);
    expect(vertex.tokenRequests).toBe(0);
  });

  it('asks the metadata server anew, once, when Vertex stops taking the cached token', async () => {
    await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'warm' }] });
    const before = tokenRequests();
    vertex.revokeTokens();
    const completion = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'after revoke' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: after revoke');
    expect(tokenRequests() - before).toBe(1);
    expect(vertex.calls.at(-1)?.headers.authorization).toBe(`Bearer ${metadata.tokens.at(-1)}`);
  });

  it("takes gcloud's Application Default Credentials file before the metadata server", async () => {
    const gcloud = join(dir, 'gcloud');
    mkdirSync(gcloud);
    writeFileSync(join(gcloud, 'application_default_credentials.json'), vertex.authorizedUser, { mode: 0o600 });
    setEnv('CLOUDSDK_CONFIG', gcloud);
    try {
      const before = tokenRequests();
      const userTokens = vertex.tokenRequests;
      const completion = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'from gcloud' }] });
      expect(completion.choices[0]?.message.content).toBe('echo: from gcloud');
      expect(tokenRequests()).toBe(before);
      expect(vertex.tokenRequests - userTokens).toBe(1);
      // The user credential's quota project is the project, and is named for billing.
      expect(vertex.calls.at(-1)?.path).toContain('/projects/demo-project/');
      expect(vertex.calls.at(-1)?.headers['x-goog-user-project']).toBe('demo-project');
    } finally {
      setEnv('CLOUDSDK_CONFIG', join(dir, 'no-gcloud'));
    }
  });

  it('answers a clear 401 at once, in the route\'s own shape, when no metadata server answers', async () => {
    setEnv('GCE_METADATA_HOST', `127.0.0.1:${closedPort}`);
    try {
      const calls = vertex.calls.length;
      const started = Date.now();
      const error = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      const message = (error as InstanceType<typeof OpenAI.AuthenticationError>).message;
      expect(message).toContain(`no metadata server answered at http://127.0.0.1:${closedPort}/computeMetadata/v1`);
      expect(message).toContain('GOOGLE_APPLICATION_CREDENTIALS');
      expect(message).toContain(join(dir, 'no-gcloud', 'application_default_credentials.json'));
      expect(vertex.calls.length).toBe(calls);

      const anthropic = await fetch(`${tg.url}/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'vertex/claude-sonnet-4-5@20250929', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
        signal: AbortSignal.timeout(3_000),
      });
      expect(anthropic.status).toBe(401);
      const body = (await anthropic.json()) as { type: string; error: { type: string; message: string } };
      expect(body.type).toBe('error');
      expect(body.error.type).toBe('authentication_error');
      expect(body.error.message).toContain('no metadata server answered');
    } finally {
      setEnv('GCE_METADATA_HOST', metadata.host);
    }
  });
});
