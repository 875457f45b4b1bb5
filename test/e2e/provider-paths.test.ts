import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// A model name is placed in the upstream URL by the Gemini and Vertex adapters. Whatever a client sends, the
// request must reach the model's own path on the provider or not be sent at all: never another path, where the
// operator's API key or service-account token would authorise whatever the client chose.

let gemini: GeminiUpstream;
let vertex: VertexUpstream;
let tg: RunningGateway;
let dir: string;

const GEMINI_KEY = 'gemini-test-key';
const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: GEMINI_KEY });
  vertex = await startVertexUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-paths-'));
  const keyFile = join(dir, 'sa.json');
  writeFileSync(keyFile, vertex.serviceAccount, { mode: 0o600 });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: GEMINI_KEY },
      vertex: { base_url: vertex.url, api_key: `file:${keyFile}`, region: 'europe-west4' },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await vertex.close();
  await gemini.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  gemini.reset();
  vertex.calls.length = 0;
  vertex.received.length = 0;
});

/** What the Vertex server received other than token requests. */
function vertexModelRequests(): string[] {
  return vertex.received.filter((line) => line !== 'POST /token');
}

async function refusal(request: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await request.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

const TRAVERSALS = [
  'gemini-2.0-flash/../../../../v1/projects/other-project/locations/us-central1/publishers/google/models/x',
  'gemini-2.0-flash/..%2F..%2Fx',
  '..',
  '../x',
  'gemini-2.0-flash?alt=sse&x=',
  'gemini-2.0-flash#fragment',
  'gemini-2.0-flash%3AstreamGenerateContent',
  'gemini-2.0-flash\\..\\x',
  'gemini-2.0-flash..',
];

describe('Vertex: a model name cannot reach another path', () => {
  it.each(TRAVERSALS)('vertex/%s is a 400 on param model and nothing is sent', async (name) => {
    const error = await refusal(tg.client.chat.completions.create({ model: `vertex/${name}`, messages: hi }));
    expect(error.status).toBe(400);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe('model');
    expect(error.code).toBe('invalid_model_name');
    expect(vertexModelRequests()).toEqual([]);
  });

  it('refuses a slash: a Vertex model is one id (the publisher is chosen from it)', async () => {
    const error = await refusal(tg.client.chat.completions.create({ model: 'vertex/publishers/google/models/gemini-2.5-flash', messages: hi }));
    expect(error.status).toBe(400);
    expect(error.message).toContain("holds '/'");
    expect(vertexModelRequests()).toEqual([]);
  });

  it('streams are refused the same way', async () => {
    const error = await refusal(tg.client.chat.completions.create({ model: 'vertex/gemini-2.0-flash/../../x', messages: hi, stream: true }));
    expect(error.status).toBe(400);
    expect(vertexModelRequests()).toEqual([]);
  });

  it('legitimate names still reach their own path (Gemini ids, Claude versions with @)', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: hi });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    const claude = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5@20250929', messages: hi, max_tokens: 50 });
    expect(claude.choices[0]?.message.content).toBe('echo: hi');
    expect(vertexModelRequests()).toEqual([
      'POST /v1/projects/demo-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent',
      'POST /v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict',
    ]);
  });

  it('through /genai too, with the model URL-encoded in the path: a 400 in Google\'s shape', async () => {
    const model = encodeURIComponent('vertex/gemini-2.0-flash/../../x');
    const response = await jsonRequest(tg.url, 'POST', `/genai/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect(response.status).toBe(400);
    const violation = { field: 'model', description: expect.stringContaining("holds '..'") };
    const details = [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [violation] }];
    expect(response.body).toEqual({ error: { code: 400, message: expect.stringContaining("holds '..'"), status: 'INVALID_ARGUMENT', details } });
    expect(vertexModelRequests()).toEqual([]);
  });
});

describe('a key restricted by a pattern is restricted to the paths it names', () => {
  let restricted: OpenAI;

  beforeAll(async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'flash-only', models: ['vertex/gemini-2.0-flash*'] });
    expect(created.status).toBe(201);
    restricted = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key as string, maxRetries: 0 });
  });

  it.each(['gemini-2.0-flash/../../x', 'gemini-2.0-flash?x', 'gemini-2.0-flash#x', 'gemini-2.0-flash%2F..%2Fx'])(
    'vertex/gemini-2.0-flash* does not allow vertex/%s (403, nothing sent)',
    async (name) => {
      const error = await refusal(restricted.chat.completions.create({ model: `vertex/${name}`, messages: hi }));
      expect(error.status).toBe(403);
      expect(error.code).toBe('model_not_allowed');
      expect(vertexModelRequests()).toEqual([]);
    },
  );

  it('still allows what the pattern names', async () => {
    const completion = await restricted.chat.completions.create({ model: 'vertex/gemini-2.0-flash-001', messages: hi });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(vertexModelRequests()).toEqual(['POST /v1/projects/demo-project/locations/europe-west4/publishers/google/models/gemini-2.0-flash-001:generateContent']);
  });
});

describe('Gemini API: a model name cannot reach another path', () => {
  it.each([...TRAVERSALS, 'cachedContents/abc', 'models/a/b', 'tunedModels/', 'tunedModels/../../files'])(
    'gemini/%s is a 400 on param model and nothing is sent',
    async (name) => {
      const error = await refusal(tg.client.chat.completions.create({ model: `gemini/${name}`, messages: hi }));
      expect(error.status).toBe(400);
      expect(error.param).toBe('model');
      expect(error.code).toBe('invalid_model_name');
      expect(gemini.calls).toEqual([]);
    },
  );

  it('embeddings are refused the same way', async () => {
    const error = await refusal(tg.client.embeddings.create({ model: 'gemini/../../../files', input: 'hi' }));
    expect(error.status).toBe(400);
    expect(error.param).toBe('model');
    expect(gemini.calls).toEqual([]);
  });

  it('legitimate forms reach their own path: <id>, models/<id>, tunedModels/<id>, embeddings', async () => {
    await tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: hi });
    await tg.client.chat.completions.create({ model: 'gemini/models/gemini-2.5-flash', messages: hi });
    // The scripted server knows no tuned models (it answers 404); what matters is the path asked for.
    await tg.client.chat.completions.create({ model: 'gemini/tunedModels/my-tuned-model', messages: hi }).catch(() => null);
    await tg.client.embeddings.create({ model: 'gemini/gemini-embedding-001', input: 'hi' });
    expect(gemini.calls.map((call) => `${call.method} ${call.path}`)).toEqual([
      'POST /v1beta/models/gemini-2.5-flash:generateContent',
      'POST /v1beta/models/gemini-2.5-flash:generateContent',
      'POST /v1beta/tunedModels/my-tuned-model:generateContent',
      'POST /v1beta/models/gemini-embedding-001:batchEmbedContents',
    ]);
  });
});
