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
 * The project of a `vertex` provider whose config names none, found as google-auth-library's getProjectId finds it:
 * GOOGLE_CLOUD_PROJECT (then GCLOUD_PROJECT), else the credential's own (a service account's project_id), else the
 * metadata server's project-id; a configured `project` always wins. With none anywhere, each route answers a 400 in
 * its own shape naming what to set. The metadata server is a scripted one (GCE_METADATA_HOST), gcloud's ADC file is
 * absent (CLOUDSDK_CONFIG is an empty directory): both are read from the process environment, as adc.ts reads them.
 */

let vertex: VertexUpstream;
let metadata: MetadataServer;
let dir: string;
let closedPort: number;
/** The scripted service account with its project_id left out (what a hand-made or trimmed key file may lack). */
let keyWithoutProject: string;
/** The scripted service account as Google writes it (project_id `demo-project`). */
let keyWithProject: string;
const gateways: RunningGateway[] = [];
const saved = { GCE_METADATA_HOST: process.env.GCE_METADATA_HOST, CLOUDSDK_CONFIG: process.env.CLOUDSDK_CONFIG };

function setEnv(name: keyof typeof saved, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

beforeAll(async () => {
  vertex = await startVertexUpstream();
  metadata = await startMetadataServer(() => vertex.issueToken());
  dir = mkdtempSync(join(tmpdir(), 'tollgate-vertex-project-'));
  mkdirSync(join(dir, 'no-gcloud'));
  keyWithProject = join(dir, 'sa.json');
  writeFileSync(keyWithProject, vertex.serviceAccount, { mode: 0o600 });
  const { project_id: _project, ...trimmed } = JSON.parse(vertex.serviceAccount) as Record<string, unknown>;
  keyWithoutProject = join(dir, 'sa-no-project.json');
  writeFileSync(keyWithoutProject, JSON.stringify(trimmed), { mode: 0o600 });
  setEnv('GCE_METADATA_HOST', metadata.host);
  setEnv('CLOUDSDK_CONFIG', join(dir, 'no-gcloud'));
  // A port nothing listens on: a host off Google Cloud, where no metadata server answers.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
});
afterAll(async () => {
  setEnv('GCE_METADATA_HOST', saved.GCE_METADATA_HOST);
  setEnv('CLOUDSDK_CONFIG', saved.CLOUDSDK_CONFIG);
  for (const gateway of gateways) await gateway.stop();
  await metadata?.close();
  await vertex?.close();
  rmSync(dir, { recursive: true, force: true });
});

const SETTINGS = { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } };

/** A gateway whose `vertex` provider (and any others) points at the scripted Vertex AI, with `env` as its environment. */
async function gatewayWith(env: Record<string, string>, vertexConfig: Record<string, unknown> = {}, others: Record<string, Record<string, unknown>> = {}): Promise<RunningGateway> {
  const providers = { vertex: { base_url: vertex.url, region: 'us-east5', ...vertexConfig }, ...Object.fromEntries(Object.entries(others).map(([name, cfg]) => [name, { type: 'vertex', base_url: vertex.url, region: 'us-east5', ...cfg }])) };
  const tg = await startGateway({ settings: SETTINGS, providers }, env);
  gateways.push(tg);
  return tg;
}

/** The project of the URL the last call reached Vertex AI on. */
async function projectOfCall(tg: RunningGateway, model: string): Promise<string | undefined> {
  const completion = await tg.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'which project' }] });
  expect(completion.choices[0]?.message.content).toBe('echo: which project');
  return /^\/v1\/projects\/([^/]+)\//.exec(vertex.calls.at(-1)?.path ?? '')?.[1];
}

const projectRequests = (): number => metadata.received.filter((r) => r.url === 'GET /computeMetadata/v1/project/project-id').length;

describe('Vertex AI: the project when the config names none', () => {
  it('takes GOOGLE_CLOUD_PROJECT, then GCLOUD_PROJECT, before the key\'s own; a configured project wins over both', async () => {
    const fromEnv = await gatewayWith({ VERTEX_CREDENTIALS: keyWithProject, GOOGLE_CLOUD_PROJECT: 'env-project', GCLOUD_PROJECT: 'legacy-project' });
    expect(await projectOfCall(fromEnv, 'vertex/gemini-2.5-flash')).toBe('env-project');
    // Claude (rawPredict) is under the same project.
    await fromEnv.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'claude' }], max_tokens: 20 });
    expect(vertex.calls.at(-1)?.path).toBe('/v1/projects/env-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');

    const legacy = await gatewayWith({ VERTEX_CREDENTIALS: keyWithProject, GCLOUD_PROJECT: 'legacy-project' });
    expect(await projectOfCall(legacy, 'vertex/gemini-2.5-flash')).toBe('legacy-project');

    // The provider's own `project` wins over the environment, the key and the metadata server.
    const configured = await gatewayWith({ VERTEX_CREDENTIALS: keyWithProject, GOOGLE_CLOUD_PROJECT: 'env-project' }, { project: 'configured-project' });
    expect(await projectOfCall(configured, 'vertex/gemini-2.5-flash')).toBe('configured-project');
  });

  it("takes the metadata server's project for a key that names none, and GOOGLE_CLOUD_PROJECT before it without a key", async () => {
    const keyed = await gatewayWith({ VERTEX_CREDENTIALS: keyWithoutProject }, {}, { eu: { api_key: `file:${keyWithoutProject}` } });
    expect(await projectOfCall(keyed, 'vertex/gemini-2.5-flash')).toBe('metadata-project');
    // The key's token (signed with it), not the metadata server's.
    const bearer = vertex.calls.at(-1)?.headers.authorization;
    expect(bearer).toMatch(/^Bearer /);
    expect(metadata.tokens.map((token) => `Bearer ${token}`)).not.toContain(bearer);
    // Another vertex provider takes it too (the environment's project is the provider named `vertex`'s only).
    expect(await projectOfCall(keyed, 'eu/gemini-2.5-flash')).toBe('metadata-project');

    const before = projectRequests();
    const keyless = await gatewayWith({ GOOGLE_CLOUD_PROJECT: 'env-project' });
    expect(await projectOfCall(keyless, 'vertex/gemini-2.5-flash')).toBe('env-project');
    // The metadata server's token, but not its project: the environment named one.
    expect(vertex.calls.at(-1)?.headers.authorization).toBe(`Bearer ${metadata.tokens.at(-1)}`);
    expect(projectRequests()).toBe(before);
  });

  it('answers a 400 in each route\'s shape naming what to set when no project is found anywhere', async () => {
    setEnv('GCE_METADATA_HOST', `127.0.0.1:${closedPort}`);
    try {
      const tg = await gatewayWith({ VERTEX_CREDENTIALS: keyWithoutProject }, {}, { eu: { api_key: `file:${keyWithoutProject}` } });
      const calls = vertex.calls.length;
      const started = Date.now();
      const error = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      const message = (error as InstanceType<typeof OpenAI.BadRequestError>).message;
      expect(message).toContain('no Google Cloud project');
      expect(message).toContain('Set providers.vertex.project or GOOGLE_CLOUD_PROJECT');
      expect(message).toContain('project_id');
      expect(message).toContain(`http://127.0.0.1:${closedPort}/computeMetadata/v1`);
      // Not the 401 for missing credentials: the key is there.
      expect(message).not.toContain('no Google Cloud credentials');

      // A provider of another name is told of its own setting only (the environment's project is not its).
      const eu = await tg.client.chat.completions.create({ model: 'eu/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
      expect(eu).toBeInstanceOf(OpenAI.BadRequestError);
      expect((eu as Error).message).toContain('Set providers.eu.project.');
      expect((eu as Error).message).not.toContain('GOOGLE_CLOUD_PROJECT');

      const anthropic = await fetch(`${tg.url}/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'vertex/claude-sonnet-4-5@20250929', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
        signal: AbortSignal.timeout(3_000),
      });
      expect(anthropic.status).toBe(400);
      const anthropicBody = (await anthropic.json()) as { type: string; error: { type: string; message: string } };
      expect(anthropicBody.type).toBe('error');
      expect(anthropicBody.error.type).toBe('invalid_request_error');
      expect(anthropicBody.error.message).toContain('GOOGLE_CLOUD_PROJECT');

      const genai = await fetch(`${tg.url}/genai/v1beta/models/vertex%2Fgemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
        signal: AbortSignal.timeout(3_000),
      });
      expect(genai.status).toBe(400);
      const genaiBody = (await genai.json()) as { error: { code: number; status: string; message: string } };
      expect(genaiBody.error.code).toBe(400);
      expect(genaiBody.error.status).toBe('INVALID_ARGUMENT');
      expect(genaiBody.error.message).toContain('GOOGLE_CLOUD_PROJECT');
      expect(vertex.calls.length).toBe(calls);
    } finally {
      setEnv('GCE_METADATA_HOST', metadata.host);
    }
  });
});
