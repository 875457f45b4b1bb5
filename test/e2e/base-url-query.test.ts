// A base URL may carry a query the upstream needs on every call: a key some OpenAI-compatible hosts and API gateways
// take as `?api_key=` or `?subscription-key=` (Azure API Management), a routing tag. The README masks such values in
// every answer; they must also reach the upstream where it reads them, after the operation's path. The adapters
// appended the path to the whole base URL, so a call went to `/v1?api_key=X/chat/completions`: the upstream saw the
// path `/v1` and a query value `X/chat/completions`, and answered 404 or 401.
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const QUERY_KEY = 'qk-5c1e9a77f0d24b1e';
let openai: ScriptedUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-up' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${openai.url}/v1?api_key=${QUERY_KEY}&tenant=a%20b`, api_key: 'sk-up' },
      gemini: { base_url: `${gemini.url}/v1beta?route=eu`, api_key: 'gemini-test-key' },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await openai.close();
  await gemini.close();
});
beforeEach(() => {
  openai.reset();
  gemini.reset();
});

describe('a base URL with a query', () => {
  it('sends the query after the operation path, on chat, streams and embeddings', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).not.toBe('');
    await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'hello' });
    expect(openai.calls.map((call) => `${call.path}?${call.query}`)).toEqual([
      `/v1/chat/completions?api_key=${QUERY_KEY}&tenant=a%20b`,
      `/v1/chat/completions?api_key=${QUERY_KEY}&tenant=a%20b`,
      `/v1/embeddings?api_key=${QUERY_KEY}&tenant=a%20b`,
    ]);
  });

  it('puts it beside the operation’s own query (a Gemini stream’s alt=sse)', async () => {
    const genai = new GoogleGenAI({ apiKey: 'anonymous', httpOptions: { baseUrl: `${tg.url}/genai` } });
    const stream = await genai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' });
    let text = '';
    for await (const chunk of stream) text += chunk.text ?? '';
    expect(text).not.toBe('');
    const call = gemini.calls.at(-1);
    expect(call?.path).toMatch(/\/models\/gemini-2\.5-flash:streamGenerateContent$/);
    expect(call?.query.get('alt')).toBe('sse');
    expect(call?.query.get('route')).toBe('eu');
  });

  it('shows the query with credential values masked, and keeps it through a config round trip', async () => {
    const shown = (await (await fetch(`${tg.url}/api/providers/openai`)).json()) as { base_url: string };
    expect(shown.base_url).toBe(`${openai.url}/v1?api_key=****&tenant=a%20b`);
    expect(await (await fetch(`${tg.url}/api/config`)).text()).not.toContain(QUERY_KEY);
    // A change elsewhere in the config writes the providers back: the query must survive it.
    const patched = await fetch(`${tg.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ settings: { upstream_rate_limit_headers: false } }) });
    expect(patched.status).toBe(200);
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'again' }] });
    expect(openai.calls.at(-1)?.query).toBe(`api_key=${QUERY_KEY}&tenant=a%20b`);
  });

  it('keeps the key in the query out of an upstream error the client is shown', async () => {
    openai.enqueue({ kind: 'error', status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: `Incorrect API key provided: ${QUERY_KEY}.` });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
    const failed = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect(String((failed as Error).message)).not.toContain(QUERY_KEY);
  });
});
