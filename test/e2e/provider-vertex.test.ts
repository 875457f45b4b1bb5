import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { GoogleGenAI } from '@google/genai';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

let vertex: VertexUpstream;
let tg: RunningGateway;
let dir: string;

const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'hi from vertex' },
];
const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'lookup', description: 'Looks things up', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } },
];

beforeAll(async () => {
  vertex = await startVertexUpstream();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-vertex-'));
  const keyFile = join(dir, 'sa.json');
  writeFileSync(keyFile, vertex.serviceAccount, { mode: 0o600 });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      vertex: { base_url: vertex.url, api_key: `file:${keyFile}`, region: 'europe-west4' },
      // Same service account, a token endpoint that refuses it.
      // A ready access token: nothing to fetch again when Vertex refuses it.
      vertexstatic: { type: 'vertex', base_url: vertex.url, api_key: 'ya29.static-token-not-issued-4b7d', project: 'demo-project' },
      vertexbad: { type: 'vertex', base_url: vertex.url, api_key: vertex.serviceAccount.replace(vertex.tokenUrl, `${vertex.tokenUrl}-nope`), token_url: `${vertex.tokenUrl.replace('/token', '/missing')}` },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await vertex.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Vertex AI through tollgate with the official openai client', () => {
  it('signs a JWT with the service account, gets a token once, and answers with Gemini on the project URL', async () => {
    const before = vertex.tokenRequests;
    const completion = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages });
    expect(completion.choices[0]?.message.content).toBe('echo: hi from vertex');
    const call = vertex.calls.at(-1);
    expect(call?.path).toBe('/v1/projects/demo-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent');
    expect(call?.body.systemInstruction).toEqual({ parts: [{ text: 'be brief' }] });
    await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages });
    // The token is cached: one token request for both calls.
    expect(vertex.tokenRequests - before).toBeLessThanOrEqual(1);
    expect(JSON.stringify(vertex.calls.at(-1)?.headers)).not.toContain('private_key');
  });

  it('streams Gemini with usage when asked', async () => {
    const stream = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('echo: hi from vertex');
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
    expect(vertex.calls.at(-1)?.path).toMatch(/:streamGenerateContent$/);
  });

  it('serves Claude through rawPredict with the Vertex version in the body, streaming too', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5', messages, max_tokens: 100 });
    expect(completion.choices[0]?.message.content).toBe('echo: hi from vertex');
    const call = vertex.calls.at(-1);
    expect(call?.path).toBe('/v1/projects/demo-project/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4-5:rawPredict');
    expect(call?.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', system: 'be brief', max_tokens: 100 });
    expect(call?.body).not.toHaveProperty('model');

    const stream = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi from vertex');
    expect(vertex.calls.at(-1)?.path).toMatch(/:streamRawPredict$/);
  });

  it("sends an /anthropic client's anthropic-beta to Claude on Vertex as the header, and not to Gemini", async () => {
    const post = (model: string) =>
      fetch(`${tg.url}/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'context-1m-2025-08-07' },
        body: JSON.stringify({ model, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await post('vertex/claude-sonnet-4-5')).status).toBe(200);
    const call = vertex.calls.at(-1);
    expect(call?.path).toMatch(/publishers\/anthropic\/models\/claude-sonnet-4-5:rawPredict$/);
    expect(call?.headers['anthropic-beta']).toBe('context-1m-2025-08-07');
    // Vertex takes the version in the body; the header is not sent.
    expect(call?.headers['anthropic-version']).toBeUndefined();
    expect(vertex.anthropic.calls.at(-1)?.headers['anthropic-beta']).toBe('context-1m-2025-08-07');

    expect((await post('vertex/gemini-2.5-flash')).status).toBe(200);
    expect(vertex.calls.at(-1)?.headers['anthropic-beta']).toBeUndefined();
  });

  it("sends Claude on Vertex only the beta flags Vertex serves (Claude Code's first-party ones would fail every turn)", async () => {
    const post = (beta: string) =>
      fetch(`${tg.url}/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'anthropic-beta': beta },
        body: JSON.stringify({ model: 'vertex/claude-sonnet-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
      });
    const answer = await post('claude-code-20250219, interleaved-thinking-2025-05-14, oauth-2025-04-20, fine-grained-tool-streaming-2025-05-14, advanced-tool-use-2025-11-20');
    expect(answer.status).toBe(200);
    expect(vertex.calls.at(-1)?.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14,tool-search-tool-2025-10-19');

    expect((await post('claude-code-20250219')).status).toBe(200);
    expect(vertex.calls.at(-1)?.headers['anthropic-beta']).toBeUndefined();
  });

  it('completes a tool-call round trip with Claude on Vertex', async () => {
    const ask: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'please use the tool' }];
    const first = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5', messages: ask, tools, tool_choice: 'required' });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('expected a function call');
    const second = await tg.client.chat.completions.create({
      model: 'vertex/claude-sonnet-4-5',
      tools,
      messages: [...ask, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'found it' }],
    });
    expect(second.choices[0]?.message.content).toContain('found it');
    const sent = vertex.calls.at(-1)?.body.messages.at(-1);
    expect(sent).toMatchObject({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id }] });
  });

  it('turns a refused service account into a 401 the client raises, without calling the model', async () => {
    const calls = vertex.calls.length;
    const error = await tg.client.chat.completions.create({ model: 'vertexbad/gemini-2.5-flash', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as Error).message).toContain('vertex: the token endpoint');
    expect(vertex.calls.length).toBe(calls);
  });

  it("takes Vertex's 401 to a cached token as revoked: fetches a new one once for concurrent requests and calls again", async () => {
    await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages });
    const tokens = vertex.tokenRequests;
    const calls = vertex.calls.length;
    vertex.revokeTokens();
    const answers = await Promise.all(Array.from({ length: 3 }, () => tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages })));
    expect(answers.map((a) => a.choices[0]?.message.content)).toEqual(Array(3).fill('echo: hi from vertex'));
    expect(vertex.tokenRequests - tokens).toBe(1);
    const sent = vertex.calls.slice(calls).map((call) => call.headers.authorization);
    expect(new Set(sent).size).toBe(2);
    // Claude too, with the token fetched then.
    const claude = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5', messages });
    expect(claude.choices[0]?.message.content).toContain('hi from vertex');
    expect(vertex.tokenRequests - tokens).toBe(1);
  });

  it('fails with the 401 after one new token when Vertex refuses that too, naming the provider and no token', async () => {
    await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages });
    const tokens = vertex.tokenRequests;
    const calls = vertex.calls.length;
    vertex.refusingEveryToken = true;
    try {
      const error = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages }).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((error as Error).message).toContain('vertex refused freshly fetched credentials too: Request had invalid authentication credentials.');
      expect((error as Error).message).not.toMatch(/ya29\./);
      expect(vertex.tokenRequests - tokens).toBe(1);
      expect(vertex.calls.length - calls).toBe(2);
    } finally {
      vertex.refusingEveryToken = false;
    }
  });

  it('does not fetch anything for a ready access token Vertex refuses: its 401 is the answer, after one call', async () => {
    const tokens = vertex.tokenRequests;
    const calls = vertex.calls.length;
    const error = await tg.client.chat.completions.create({ model: 'vertexstatic/gemini-2.5-flash', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as Error).message).not.toContain('ya29.static-token-not-issued-4b7d');
    expect(vertex.tokenRequests).toBe(tokens);
    expect(vertex.calls.length - calls).toBe(1);
  });

  it('keeps Google error bodies for Gemini and Anthropic ones for Claude', async () => {
    vertex.gemini.enqueue({ kind: 'error', status: 429 });
    const limited = await tg.client.chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages }).catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    vertex.anthropic.enqueue({ kind: 'error', status: 400, message: 'messages: bad thing' } as never);
    const bad = await tg.client.chat.completions.create({ model: 'vertex/claude-sonnet-4-5', messages }).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe("Vertex AI's Gemini through /genai with the official @google/genai client", () => {
  const SSE = { 'content-type': 'text/event-stream' };
  const ai = (): GoogleGenAI => new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
  /** A Gemini answer that ended with `reason` (no parts unless it is a plain STOP). */
  const answer = (reason: string) => ({
    candidates: [{ content: { role: 'model', parts: reason === 'STOP' ? [{ text: 'fine' }] : [] }, finishReason: reason, index: 0 }],
    usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 0, totalTokenCount: 3 },
    responseId: `r-${reason}`,
  });

  // Vertex answers are translated for a /genai client (Vertex is not Gemini's own API, so no native pass-through):
  // a failed turn was rendered as STOP, and the client took it for a finished one.
  it.each(['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'OTHER'])("passes the upstream's %s on, whole and streamed", async (reason) => {
    vertex.gemini.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(answer(reason)) });
    const whole = await ai().models.generateContent({ model: 'vertex/gemini-2.5-flash', contents: 'hi' });
    expect(whole.candidates?.[0]?.finishReason).toBe(reason);

    vertex.gemini.enqueue({ kind: 'raw', status: 200, headers: SSE, body: `data: ${JSON.stringify(answer(reason))}\n\n` });
    let streamed: unknown;
    for await (const event of await ai().models.generateContentStream({ model: 'vertex/gemini-2.5-flash', contents: 'hi' })) {
      streamed = event.candidates?.[0]?.finishReason ?? streamed;
    }
    expect(streamed).toBe(reason);
  });

  it('keeps STOP, MAX_TOKENS and SAFETY as they were', async () => {
    for (const reason of ['STOP', 'MAX_TOKENS', 'SAFETY']) {
      vertex.gemini.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(answer(reason)) });
      const whole = await ai().models.generateContent({ model: 'vertex/gemini-2.5-flash', contents: `hi ${reason}` });
      expect(whole.candidates?.[0]?.finishReason).toBe(reason);
    }
  });
});
