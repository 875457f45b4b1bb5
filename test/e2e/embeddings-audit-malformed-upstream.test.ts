import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// An OpenAI-compatible server whose embeddings answer holds an entry that is not an embedding (`null`, or an
// `embedding` of null) has not answered. tollgate took the list as it came: `data: [null]` was a 500
// internal_error on /v1 and /genai, and `embedding: null` reached an OpenAI client as a 200 and broke the /genai
// route (500). Like a chat completion without choices, it is the upstream's 502, and another target may answer.
let broken: ScriptedUpstream;
let spare: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

const answer = (entry: string): string => `{"object":"list","data":[${entry}],"model":"text-embedding-3-small","usage":{"prompt_tokens":1,"total_tokens":1}}`;
const MALFORMED = [answer('null'), answer('{"object":"embedding","index":0,"embedding":null}'), answer('{"object":"embedding","index":0}')];

beforeAll(async () => {
  broken = await startOpenAIUpstream({ apiKey: 'sk-test' });
  spare = await startOpenAIUpstream({ apiKey: 'sk-test' });
  tg = await startGateway({
    // Each case fails the same target again: no breaker, and one attempt each, so every case reaches that target.
    settings: { routing: { breaker: { enabled: false }, retry: { max_attempts: 1 } } },
    providers: {
      openai: { base_url: `${broken.url}/v1`, api_key: 'sk-test' },
      spare: { type: 'openai', base_url: `${spare.url}/v1`, api_key: 'sk-test' },
    },
    routes: { 'embed-chain': { targets: [{ model: 'openai/text-embedding-3-small', weight: 1 }], fallbacks: ['spare/text-embedding-3-small'], retry: { max_attempts: 2 } } },
  });
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000, retryOptions: { attempts: 1 } } });
});
afterAll(async () => {
  await tg?.stop();
  await broken?.close();
  await spare?.close();
});
beforeEach(() => {
  broken.reset();
  spare.reset();
});

describe('an embeddings answer whose entries are not embeddings', () => {
  it("is the upstream's 502 to an OpenAI client, not a 500 or a 200", async () => {
    for (const body of MALFORMED) {
      broken.reset();
      broken.setMode({ kind: 'raw', status: 200, body });
      const error = await tg.client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'hello', encoding_format: 'float' }).catch((err: unknown) => err);
      expect(error, body).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status, body).toBe(502);
      expect((error as InstanceType<typeof OpenAI.APIError>).error, body).toMatchObject({ code: 'invalid_upstream_response' });
    }
  });

  it("is the upstream's 502 to a /genai client", async () => {
    for (const body of MALFORMED) {
      broken.reset();
      broken.setMode({ kind: 'raw', status: 200, body });
      const error = await ai.models.embedContent({ model: 'openai/text-embedding-3-small', contents: 'hello' }).catch((err: unknown) => err);
      expect(error, body).toBeInstanceOf(ApiError);
      expect((error as ApiError).status, body).toBe(502);
    }
  });

  it('so is one with fewer vectors than inputs, and the next target answers instead', async () => {
    broken.setMode({ kind: 'raw', status: 200, body: answer('{"object":"embedding","index":0,"embedding":[0.5,0.5]}') });
    const error = await tg.client.embeddings.create({ model: 'openai/text-embedding-3-small', input: ['one', 'two'], encoding_format: 'float' }).catch((err: unknown) => err);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain('1 vectors for 2 inputs');
    const answered = await tg.client.embeddings.create({ model: 'embed-chain', input: ['one', 'two'] });
    expect(answered.data).toHaveLength(2);
  });

  it('and the next target answers instead', async () => {
    broken.setMode({ kind: 'raw', status: 200, body: MALFORMED[0] as string });
    const { data, response } = await tg.client.embeddings.create({ model: 'embed-chain', input: 'hello' }).withResponse();
    expect(data.data[0]?.embedding).toHaveLength(8);
    expect(response.headers.get('x-tollgate-provider')).toBe('spare');
  });
});
