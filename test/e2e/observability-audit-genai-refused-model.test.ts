// A /genai call refused before the pipeline took it (a body that is not JSON, a request Gemini's schema refuses) is
// logged and traced with the model it named. Gemini names the model in the URL, and a Gen AI SDK client reaching
// another provider names it `<provider>/<model>` there (`/models/openai/m:generateContent`, as the SDK writes it, or
// URL-encoded): the whole name is the requested model, not the part before its first slash.
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let otlp: OtlpReceiver;
let tg: RunningGateway;
const { api } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-a' });
  otlp = new OtlpReceiver();
  await otlp.start();
  tg = await startGateway({
    settings: { tracing: { endpoint: `${otlp.url}/v1/traces` } },
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-a' } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
  await otlp?.close();
});

async function post(path: string, body: string): Promise<string> {
  const res = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' }, body });
  expect(res.status).toBe(400);
  await res.text();
  return res.headers.get('x-request-id') as string;
}

describe('a /genai call refused before the pipeline', () => {
  it('is logged and traced under the whole model name its URL gives, as the same call answered is', async () => {
    // The same model answered, through the official SDK: the log names it openai/m.
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai` } });
    await ai.models.generateContent({ model: 'openai/m', contents: 'hi' });
    const refused = {
      notJson: await post('/genai/v1beta/models/openai/m:generateContent', '{not json'),
      invalid: await post('/genai/v1beta/models/openai/m:streamGenerateContent', '{"contents": 5}'),
      encoded: await post('/genai/v1beta/models/openai%2Fm:generateContent', '{not json'),
      colons: await post('/genai/v1/models/bedrock/anthropic.claude-v2:1:generateContent', '{not json'),
    };
    await new Promise((resolve) => setTimeout(resolve, 300));
    const entry = async (id: string): Promise<any> => (await api('GET', `/api/logs/${id}`)).body;
    expect((await entry(refused.notJson)).model).toBe('openai/m');
    expect((await entry(refused.invalid)).model).toBe('openai/m');
    expect((await entry(refused.encoded)).model).toBe('openai/m');
    expect((await entry(refused.colons)).model).toBe('bedrock/anthropic.claude-v2:1');
    // Filtering the log by the model finds the answered call and its refused ones alike.
    const byModel = (await api('GET', '/api/logs?model=openai/m&limit=50')).body.data.map((e: any) => e.status);
    expect(byModel.sort()).toEqual([200, 400, 400, 400]);
    // The refused call's one span names the model too.
    const spans = await otlp.waitFor((all) => all.some((span) => span.attributes['tollgate.request_id'] === refused.notJson));
    const span = spans.find((s) => s.attributes['tollgate.request_id'] === refused.notJson);
    expect(span?.attributes['gen_ai.request.model']).toBe('openai/m');
    expect(span?.name).toBe('chat openai/m');
  });
});
