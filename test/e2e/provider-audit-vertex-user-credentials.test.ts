import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * Application Default Credentials as a developer has them: `gcloud auth application-default login` writes a user
 * credential (`"type": "authorized_user"`: an OAuth client, a refresh token and the quota project), and
 * GOOGLE_APPLICATION_CREDENTIALS names that file. tollgate refreshes it for access tokens at the token endpoint and
 * names the quota project (x-goog-user-project), without which Google's APIs refuse a user's token.
 */

let vertex: VertexUpstream;
let tg: RunningGateway;
let dir: string;

beforeAll(async () => {
  vertex = await startVertexUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-vertex-adc-'));
  const adcFile = join(dir, 'application_default_credentials.json');
  writeFileSync(adcFile, vertex.authorizedUser, { mode: 0o600 });
  // The ADC file names no token endpoint (Google's is meant): this one is the scripted server's. No project is
  // configured: the credential's quota project is the one used, as gcloud set it.
  tg = await startGateway(
    { settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } }, providers: { vertex: { base_url: vertex.url, token_url: vertex.tokenUrl, region: 'us-east5' } } },
    { GOOGLE_APPLICATION_CREDENTIALS: adcFile },
  );
});
afterAll(async () => {
  await tg?.stop();
  await vertex?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Vertex AI with a user credential (gcloud application-default login)', () => {
  it('refreshes it for a token and bills the quota project, for Gemini and Claude, streamed or not', async () => {
    const before = vertex.tokenRequests;
    const gemini = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi from adc' }] });
    expect(gemini.choices[0]?.message.content).toBe('echo: hi from adc');
    const call = vertex.calls.at(-1);
    expect(call?.path).toBe('/v1/projects/demo-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent');
    expect(call?.headers['x-goog-user-project']).toBe('demo-project');
    expect(call?.headers.authorization).toMatch(/^Bearer ya29\./);
    expect(JSON.stringify(call?.headers)).not.toContain('refresh_token');

    const stream = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'stream from adc' }], max_tokens: 50, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toContain('stream from adc');
    expect(vertex.calls.at(-1)?.path).toBe('/v1/projects/demo-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    expect(vertex.calls.at(-1)?.headers['x-goog-user-project']).toBe('demo-project');
    // One refresh serves both calls.
    expect(vertex.tokenRequests - before).toBe(1);
  });

  it('refreshes anew when Vertex stops taking the cached token', async () => {
    await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'warm' }] });
    const before = vertex.tokenRequests;
    vertex.revokeTokens();
    const completion = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'after revoke' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: after revoke');
    expect(vertex.tokenRequests - before).toBe(1);
  });
});
