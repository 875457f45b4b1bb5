import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Retrieving one model by a bare name answers as a chat completion with that name does: a name two configured
 * providers serve (`gpt-4o`: OpenAI's catalogue and the lab's list) is the same `ambiguous_model` error naming the
 * `<provider>/<model>` ids to use, in each route's own shape; a bare name one provider serves is that model.
 */
let openai: ScriptedUpstream;
let lab: ScriptedUpstream;
let tg: RunningGateway;

const messages = [{ role: 'user' as const, content: 'Say hi' }];

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  lab = await startOpenAIUpstream({ apiKey: 'sk-lab' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      lab: { type: 'vllm', base_url: `${lab.url}/v1`, api_key: 'sk-lab', models: ['gpt-4o', 'llama-local', 'shared-model'] },
      lab2: { type: 'vllm', base_url: `${lab.url}/v1`, api_key: 'sk-lab', models: ['shared-model'] },
    },
  });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await lab?.close();
});

async function failure(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (err: unknown) => err,
  );
}

describe('GET /v1/models/{bare name} (OpenAI SDK)', () => {
  it('answers an ambiguous bare name as chat does: ambiguous_model naming the prefixed ids', async () => {
    const chat = await failure(tg.client.chat.completions.create({ model: 'gpt-4o', messages }));
    const retrieved = await failure(tg.client.models.retrieve('gpt-4o'));
    expect(retrieved).toBeInstanceOf(OpenAI.APIError);
    expect(retrieved).toMatchObject({ status: chat.status, code: 'ambiguous_model', param: 'model', type: 'invalid_request_error' });
    expect(retrieved.message).toContain('lab/gpt-4o, openai/gpt-4o');
    // Either prefixed id it names is a model the route answers for.
    expect(await tg.client.models.retrieve('lab/gpt-4o')).toMatchObject({ id: 'lab/gpt-4o', object: 'model', owned_by: 'lab' });
  });

  it('does the same without /v1 and on /litellm, for a name LiteLLM infers no provider for', async () => {
    const bare = await fetch(`${tg.url}/models/gpt-4o`);
    expect(bare.status).toBe(404);
    expect(((await bare.json()) as any).error).toMatchObject({ code: 'ambiguous_model', type: 'invalid_request_error', param: 'model' });
    const litellm = new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const error = await failure(litellm.models.retrieve('shared-model'));
    expect(error).toMatchObject({ status: 404, code: 'ambiguous_model' });
    expect(error.message).toContain('lab/shared-model, lab2/shared-model');
  });

  it('still answers an unknown bare name with model_not_found', async () => {
    const error = await failure(tg.client.models.retrieve('no-such-model-anywhere'));
    expect(error).toMatchObject({ status: 404, code: 'model_not_found' });
  });
});

describe('GET /genai/v1beta/models/{bare name} (@google/genai)', () => {
  const ai = (): GoogleGenAI => new GoogleGenAI({ apiKey: 'client-side-key', apiVersion: 'v1beta', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });

  it('answers an ambiguous bare name with the 404 generateContent gets, naming the prefixed ids', async () => {
    const generated = await failure(ai().models.generateContent({ model: 'gpt-4o', contents: 'hi' }));
    const got = await failure(ai().models.get({ model: 'gpt-4o' }));
    expect(got).toBeInstanceOf(ApiError);
    expect(got.status).toBe(generated.status);
    expect(got.message).toContain('lab/gpt-4o, openai/gpt-4o');
    const raw = await fetch(`${tg.url}/genai/v1beta/models/gpt-4o`);
    expect(await raw.json()).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
  });

  it('answers a bare name one configured provider serves as that model, under the name asked', async () => {
    const model = await ai().models.get({ model: 'llama-local' });
    expect(model.name).toBe('models/llama-local');
    expect(model.supportedActions).toContain('generateContent');
  });
});

describe('GET /anthropic/v1/models/{bare name} (Anthropic SDK)', () => {
  it('answers an ambiguous bare name with ambiguous_model, and a bare name one other provider serves as that model', async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const ambiguous = await failure(anthropic.models.retrieve('shared-model'));
    expect(ambiguous).toBeInstanceOf(Anthropic.APIError);
    expect(ambiguous.status).toBe(404);
    expect(ambiguous.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(ambiguous.error.error.message).toContain('lab/shared-model, lab2/shared-model');
    // A message with the same name resolves the same way.
    const message = await failure(anthropic.messages.create({ model: 'shared-model', max_tokens: 16, messages }));
    expect(message.status).toBe(404);
    expect(await anthropic.models.retrieve('llama-local')).toMatchObject({ type: 'model', id: 'llama-local' });
    expect(await anthropic.models.retrieve('lab/llama-local')).toMatchObject({ type: 'model', id: 'lab/llama-local' });
    expect((await failure(anthropic.models.retrieve('no-such-model'))).status).toBe(404);
  });
});
