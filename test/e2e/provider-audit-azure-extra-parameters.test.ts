import OpenAI, { type APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';

// Azure AI Foundry's model inference API reads an `extra-parameters` header on every call: `pass-through` gives request
// fields outside its spec to the model, `drop` leaves them out, `error` (or no header) refuses the request. tollgate
// always sent `drop`, so a model's own option a client sent on purpose (Mistral's `safe_prompt`) vanished without a
// word. A provider's `extra_parameters` now says which; `drop` stays the default.

const KEY = 'azure-upstream-key';
let upstream: AzureUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startAzureUpstream({ apiKey: KEY });
  const models = `${upstream.url}/models`;
  tg = await startGateway({
    providers: {
      'azure-ai': { base_url: models, api_key: KEY },
      'foundry-pass': { type: 'azure-ai', base_url: models, api_key: KEY, extra_parameters: 'pass-through' },
      'foundry-strict': { type: 'azure-ai', base_url: models, api_key: KEY, extra_parameters: 'error' },
      // The operator's own header still wins over the option.
      'foundry-header': { type: 'azure-ai', base_url: models, api_key: KEY, extra_parameters: 'error', headers: { 'Extra-Parameters': 'pass-through' } },
    },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

const messages = [{ role: 'user' as const, content: 'bonjour' }];
/** Mistral's own option, outside the model inference API's spec; the OpenAI SDK sends unknown body fields as given. */
const withSafePrompt = { messages, safe_prompt: true, temperature: 0.2 } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;

function ask(provider: string): Promise<OpenAI.ChatCompletion> {
  return tg.client.chat.completions.create({ ...withSafePrompt, model: `${provider}/Mistral-Large-2411` });
}

describe('azure-ai extra_parameters', () => {
  it('pass-through: a model option outside the spec reaches the model, streamed or not', async () => {
    const completion = await ask('foundry-pass');
    expect(completion.choices[0]?.message.content).toBe('echo: bonjour');
    const call = upstream.calls[0];
    expect(call?.path).toBe('/models/chat/completions');
    expect(call?.headers['extra-parameters']).toBe('pass-through');
    expect(call?.modelBody).toMatchObject({ model: 'Mistral-Large-2411', safe_prompt: true, temperature: 0.2 });

    upstream.reset();
    const stream = await tg.client.chat.completions.create({ ...withSafePrompt, model: 'foundry-pass/Mistral-Large-2411', stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: bonjour');
    expect(upstream.calls[0]?.headers['extra-parameters']).toBe('pass-through');
    expect(upstream.calls[0]?.modelBody).toMatchObject({ safe_prompt: true, stream: true });

    upstream.reset();
    await tg.client.embeddings.create({ model: 'foundry-pass/Mistral-Large-2411', input: 'x', user: 'u-1' });
    expect(upstream.calls[0]?.path).toBe('/models/embeddings');
    expect(upstream.calls[0]?.headers['extra-parameters']).toBe('pass-through');
    expect(upstream.calls[0]?.modelBody).toMatchObject({ user: 'u-1' });
  });

  it('drop stays the default: the same request answers without the field, where pass-through gives it to the model', async () => {
    const completion = await ask('azure-ai');
    expect(completion.choices[0]?.message.content).toBe('echo: bonjour');
    expect(upstream.calls[0]?.headers['extra-parameters']).toBe('drop');
    expect(upstream.calls[0]?.body).toMatchObject({ safe_prompt: true });
    expect(upstream.calls[0]?.modelBody).not.toHaveProperty('safe_prompt');
    expect(upstream.calls[0]?.modelBody).toMatchObject({ temperature: 0.2 });

    await ask('foundry-pass');
    expect(upstream.calls[1]?.headers['extra-parameters']).toBe('pass-through');
    expect(upstream.calls[1]?.modelBody).toMatchObject({ safe_prompt: true });

    // A provider setting: in the config view (as written, none when left to the default), checked when set.
    const view = (await (await fetch(`${tg.url}/api/config`)).json()) as { providers: Array<{ name: string; extra_parameters?: string }> };
    expect(view.providers.find((p) => p.name === 'foundry-pass')?.extra_parameters).toBe('pass-through');
    expect(view.providers.find((p) => p.name === 'azure-ai')).not.toHaveProperty('extra_parameters');
    const validate = (value: string): Promise<Response> =>
      fetch(`${tg.url}/api/config/validate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ providers: { 'azure-ai': { base_url: 'https://acme.services.ai.azure.com/models', api_key: KEY, extra_parameters: value } } }),
      });
    const allow = await validate('allow');
    expect(allow.status).toBe(400);
    expect(((await allow.json()) as { error: { param: string } }).error.param).toBe('providers.azure-ai.extra_parameters');
    expect(((await (await validate('pass-through')).json()) as { valid: boolean }).valid).toBe(true);
  });

  it("error: Azure's refusal reaches the client as Azure wrote it; the operator's own header still wins", async () => {
    const refused = await ask('foundry-strict').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as APIError).message).toContain("Extra parameters ['safe_prompt'] are not allowed");
    expect(upstream.calls[0]?.headers['extra-parameters']).toBe('error');

    upstream.reset();
    const plain = await tg.client.chat.completions.create({ model: 'foundry-strict/Phi-4', messages });
    expect(plain.choices[0]?.message.content).toBe('echo: bonjour');

    // A provider whose headers name Extra-Parameters (in any case) sends that one value, whatever extra_parameters says.
    upstream.reset();
    await ask('foundry-header');
    expect(upstream.calls[0]?.headers['extra-parameters']).toBe('pass-through');
    expect(upstream.calls[0]?.modelBody).toMatchObject({ safe_prompt: true });
  });
});
