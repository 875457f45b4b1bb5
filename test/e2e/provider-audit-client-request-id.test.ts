import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';

// OpenAI takes a caller-chosen `X-Client-Request-Id` (printable ASCII, at most 512 characters) and logs it, so a
// request can be looked up with its support even when no answer (and so no x-request-id) came back. tollgate sent it
// on only when the operator listed it in settings.forward_headers (then to every provider). It now goes to OpenAI and
// Azure OpenAI targets as a client's SDK would send it there, and to no other vendor; a value OpenAI would not take
// is left out (the request goes on without it) rather than sent to fail the whole request.

const AZURE_KEY = 'azure-upstream-key';
let openai: ScriptedUpstream;
let other: ScriptedUpstream;
let azure: AzureUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  [openai, other, azure] = await Promise.all([startOpenAIUpstream(), startOpenAIUpstream(), startAzureUpstream({ apiKey: AZURE_KEY })]);
  tg = await startGateway({
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      groq: { base_url: `${other.url}/v1`, api_key: 'gsk-groq' },
      azure: { base_url: azure.url, api_key: AZURE_KEY },
      'azure-ai': { base_url: `${azure.url}/models`, api_key: AZURE_KEY },
    },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), other?.close(), azure?.close()]);
});

beforeEach(() => {
  openai.reset();
  other.reset();
  azure.reset();
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

async function ask(model: string, id: string): Promise<string | null> {
  const completion = await tg.client.chat.completions.create({ model, messages }, { headers: { 'X-Client-Request-Id': id } });
  return completion.choices[0]?.message.content ?? null;
}

describe('X-Client-Request-Id', () => {
  it('reaches OpenAI and Azure OpenAI as the client sent it', async () => {
    expect(await ask('openai/gpt-4o-mini', 'support-lookup-7f3a')).toBe('echo: hello');
    expect(openai.calls[0]?.headers['x-client-request-id']).toBe('support-lookup-7f3a');

    expect(await ask('azure/gpt-4o-prod', 'azure-lookup-42')).toBe('echo: hello');
    expect(azure.calls[0]?.path).toBe('/openai/v1/chat/completions');
    expect(azure.calls[0]?.headers['x-client-request-id']).toBe('azure-lookup-42');
  });

  it('goes to no other vendor: the same request routed to OpenAI carries it, to Groq or Azure AI Foundry not', async () => {
    expect(await ask('openai/gpt-4o-mini', 'for-openai-only')).toBe('echo: hello');
    expect(openai.calls[0]?.headers['x-client-request-id']).toBe('for-openai-only');
    expect(await ask('groq/llama-3.1-8b-instant', 'not-for-groq')).toBe('echo: hello');
    expect(other.calls[0]?.headers['x-client-request-id']).toBeUndefined();
    expect(await ask('azure-ai/Phi-4', 'not-for-foundry')).toBe('echo: hello');
    expect(azure.calls[0]?.path).toBe('/models/chat/completions');
    expect(azure.calls[0]?.headers['x-client-request-id']).toBeUndefined();
  });

  it('leaves out a value OpenAI does not take (too long, not ASCII), and the request still answers', async () => {
    // The longest OpenAI takes goes as it is; one character more is left out.
    const longest = 'a'.repeat(512);
    expect(await ask('openai/gpt-4o-mini', longest)).toBe('echo: hello');
    expect(openai.calls[0]?.headers['x-client-request-id']).toBe(longest);
    openai.reset();
    expect(await ask('openai/gpt-4o-mini', `${longest}b`)).toBe('echo: hello');
    expect(openai.calls[0]?.headers['x-client-request-id']).toBeUndefined();

    // Latin-1 is the most an HTTP header carries as text; é is past ASCII.
    openai.reset();
    const response = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-client-request-id': 'caf\u00e9-1' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages }),
    });
    expect(response.status).toBe(200);
    expect(openai.calls).toHaveLength(1);
    expect(openai.calls[0]?.headers['x-client-request-id']).toBeUndefined();
  });
});
