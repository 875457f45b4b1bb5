import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * Application Default Credentials that impersonate a service account, as `gcloud auth application-default login
 * --impersonate-service-account=...` writes them (`"type": "impersonated_service_account"`): the user credential's
 * token is exchanged at IAM Credentials' generateAccessToken (the file's service_account_impersonation_url) for the
 * target account's, which is what Vertex gets.
 */

const TARGET = 'vertex-caller@demo-project.iam.gserviceaccount.com';

let vertex: VertexUpstream;
let tg: RunningGateway;
let dir: string;

beforeAll(async () => {
  vertex = await startVertexUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-vertex-impersonated-'));
  const { quota_project_id: _quota, ...source } = JSON.parse(vertex.authorizedUser) as Record<string, unknown>;
  const adcFile = join(dir, 'application_default_credentials.json');
  writeFileSync(
    adcFile,
    JSON.stringify({ delegates: [], service_account_impersonation_url: vertex.impersonationUrl(TARGET), source_credentials: source, type: 'impersonated_service_account' }),
    { mode: 0o600 },
  );
  const wif = join(dir, 'wif.json');
  writeFileSync(wif, JSON.stringify({ type: 'external_account', audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q', subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', token_url: 'https://sts.googleapis.com/v1/token', credential_source: { file: '/var/run/token' } }));
  tg = await startGateway(
    {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: {
        vertex: { base_url: vertex.url, token_url: vertex.tokenUrl, region: 'us-east5', project: 'demo-project' },
        federated: { type: 'vertex', base_url: vertex.url, project: 'demo-project', api_key: `file:${wif}` },
      },
    },
    { GOOGLE_APPLICATION_CREDENTIALS: adcFile },
  );
});
afterAll(async () => {
  await tg?.stop();
  await vertex?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Vertex AI with an impersonated service account (gcloud --impersonate-service-account)', () => {
  it("calls with the target account's token, got with the user credential's at generateAccessToken, once", async () => {
    const gemini = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi as sa' }] });
    expect(gemini.choices[0]?.message.content).toBe('echo: hi as sa');
    expect(vertex.impersonations).toHaveLength(1);
    const [asked] = vertex.impersonations;
    expect(asked?.email).toBe(TARGET);
    expect(asked?.body).toEqual({ delegates: [], scope: ['https://www.googleapis.com/auth/cloud-platform'], lifetime: '3600s' });
    // The source token is the user credential's refresh (the scripted token endpoint's), never sent to Vertex.
    expect(asked?.bearer).toMatch(/^ya29\.a0/);
    const bearer = vertex.calls.at(-1)?.headers.authorization?.toString().replace(/^Bearer /, '');
    expect(vertex.impersonatedTokens.has(bearer ?? '')).toBe(true);
    expect(vertex.calls.at(-1)?.path).toBe('/v1/projects/demo-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent');

    const stream = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'stream as sa' }], max_tokens: 50, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toContain('stream as sa');
    expect(vertex.calls.at(-1)?.headers.authorization).toBe(`Bearer ${bearer}`);
    expect(vertex.impersonations).toHaveLength(1);
    expect(vertex.tokenRequests).toBe(1);
  });

  it('impersonates anew, once, when Vertex stops taking the cached token', async () => {
    await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'warm' }] });
    const before = vertex.impersonations.length;
    vertex.revokeTokens();
    const completion = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'after revoke' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: after revoke');
    expect(vertex.impersonations.length - before).toBeGreaterThanOrEqual(1);
    const bearer = vertex.calls.at(-1)?.headers.authorization?.toString().replace(/^Bearer /, '');
    expect(vertex.impersonatedTokens.has(bearer ?? '')).toBe(true);
  });

  it('still refuses a workload identity federation file (external_account) with a 401 that says what to do', async () => {
    const calls = vertex.calls.length;
    const error = await tg.client.chat.completions.create({ model: 'federated/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as Error).message).toContain('workload identity federation');
    expect((error as Error).message).toContain('metadata server');
    expect(vertex.calls.length).toBe(calls);
  });
});
