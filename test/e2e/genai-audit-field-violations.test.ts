import { ApiError, GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Google's own 400s name the wrong field in a `google.rpc.BadRequest` detail (`fieldViolations: [{field,
 * description}]`), which Google's clients and tools read. On /genai, a 400 tollgate itself answers (or a non-Gemini
 * upstream's, translated) named its field only to OpenAI clients (`param`): the Google-shaped answer had no details,
 * so a Gen AI SDK client could not tell which field was refused. Now such an error carries the BadRequest detail; a
 * Gemini upstream's own details still pass through as Google wrote them.
 */

const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

let gemini: GeminiUpstream;
let cohere: CohereUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  cohere = await startCohereUpstream({ apiKey: 'co-upstream-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-upstream-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await cohere?.close();
  await openai?.close();
});
beforeEach(() => {
  gemini.reset();
  cohere.reset();
  openai.reset();
});

interface GoogleErrorJson {
  code: number;
  message: string;
  status: string;
  details?: Array<{ '@type': string; fieldViolations?: Array<{ field: string; description: string }> }>;
}

/** The Google error an ApiError carries (its message is the error body's JSON). */
async function googleError(call: Promise<unknown>): Promise<GoogleErrorJson> {
  const error = await call.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ApiError);
  return (JSON.parse((error as ApiError).message) as { error: GoogleErrorJson }).error;
}

async function drain(stream: Promise<AsyncGenerator<unknown>>): Promise<void> {
  for await (const _ of await stream) void _;
}

const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');

describe("a 400 naming a field, on /genai, carries Google's BadRequest detail", () => {
  it("for tollgate's own refusal of a request field, whole and streamed", async () => {
    const request = { model: 'openai/gpt-4o', contents: 'hello', config: { temperature: 'hot' as unknown as number } };
    for (const error of [await googleError(ai.models.generateContent(request)), await googleError(drain(ai.models.generateContentStream(request)))]) {
      expect(error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(error.details).toEqual([{ '@type': BAD_REQUEST, fieldViolations: [{ field: 'generationConfig.temperature', description: error.message }] }]);
    }
    expect(openai.calls).toHaveLength(0);
  });

  it("for a translated provider's refusal (Cohere, which takes no PDF)", async () => {
    const error = await googleError(
      ai.models.generateContent({ model: 'cohere/command-a-03-2025', contents: [{ role: 'user', parts: [{ text: 'summarise' }, { inlineData: { mimeType: 'application/pdf', data: PDF } }] }] }),
    );
    expect(error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(error.message).toContain('cohere:');
    const violation = error.details?.[0]?.fieldViolations?.[0];
    expect(error.details?.[0]?.['@type']).toBe(BAD_REQUEST);
    expect(violation?.field).toMatch(/^messages\[0\]\.content\[1\]$/);
    expect(violation?.description).toBe(error.message);
    expect(cohere.calls).toHaveLength(0);
  });

  it("keeps a Gemini upstream's own details as Google wrote them (none added beside them)", async () => {
    const violations = [{ field: 'generation_config.temperature', description: 'temperature must be at most 2' }];
    gemini.enqueue({ kind: 'error', status: 400, message: 'Invalid value at generation_config.temperature', fieldViolations: violations });
    const error = await googleError(ai.models.generateContent({ model: 'gemini/gemini-2.5-flash', contents: 'hello' }));
    expect(error.details).toEqual([{ '@type': BAD_REQUEST, fieldViolations: violations }]);
  });

  it('is not added to an error that is no 400 or names no field', async () => {
    const unknown = await googleError(ai.models.generateContent({ model: 'nowhere/some-model', contents: 'hello' }));
    expect(unknown.code).not.toBe(400);
    expect(unknown.details).toBeUndefined();
    cohere.setMode({ kind: 'error', status: 400, message: 'invalid request: something Cohere did not like' });
    const upstream = await googleError(ai.models.generateContent({ model: 'cohere/command-a-03-2025', contents: 'hello' }));
    expect(upstream.code).toBe(400);
    expect(upstream.details).toBeUndefined();
  });
});
