// What an upstream's error says beyond message, type, param and code reaches a client that reads the same format:
// Azure's content filter result (innererror) for an OpenAI client, the field a Gemini BadRequest names as `param`.
import OpenAI, { type APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const AZURE_KEY = 'azure-upstream-key';
const OPENAI_KEY = 'sk-upstream-secret-0123456789';
const GEMINI_KEY = 'gemini-test-key';

let azure: AzureUpstream;
let openai: ScriptedUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  azure = await startAzureUpstream({ apiKey: AZURE_KEY });
  openai = await startOpenAIUpstream();
  gemini = await startGeminiUpstream({ apiKey: GEMINI_KEY });
  tg = await startGateway({
    providers: {
      azure: { base_url: azure.url, api_key: AZURE_KEY, api_version: '2024-10-21' },
      openai: { base_url: `${openai.url}/v1`, api_key: OPENAI_KEY },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: GEMINI_KEY },
    },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await Promise.all([azure?.close(), openai?.close(), gemini?.close()]);
});

beforeEach(() => {
  azure.reset();
  openai.reset();
  gemini.reset();
});

const hi = [{ role: 'user' as const, content: 'hi' }];

async function refusal(promise: Promise<unknown>): Promise<APIError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as APIError;
}

async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

describe("Azure's content filter refusal", () => {
  const innererror = {
    code: 'ResponsibleAIPolicyViolation',
    content_filter_result: {
      hate: { filtered: false, severity: 'safe' },
      self_harm: { filtered: false, severity: 'safe' },
      sexual: { filtered: false, severity: 'safe' },
      violence: { filtered: true, severity: 'high' },
      jailbreak: { filtered: false, detected: false },
    },
  };

  it('reaches an OpenAI client with the category that fired and its severity, as Azure wrote it', async () => {
    azure.enqueue({ kind: 'error', status: 400, code: 'content_filter' });
    const err = await refusal(tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: hi }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('content_filter');
    expect(err.param).toBe('prompt');
    expect(err.error).toMatchObject({ code: 'content_filter', param: 'prompt', status: 400, innererror });
  });

  it('reaches a client of /litellm the same way', async () => {
    azure.enqueue({ kind: 'error', status: 400, code: 'content_filter' });
    const answer = await post('/litellm/chat/completions', { model: 'azure/gpt-4o-prod', messages: hi });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'content_filter', innererror });
  });

  it('stays out of an Anthropic-shaped answer, which has no place for it', async () => {
    azure.enqueue({ kind: 'error', status: 400, code: 'content_filter' });
    const answer = await post('/anthropic/v1/messages', { model: 'azure/gpt-4o-prod', max_tokens: 16, messages: hi });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).not.toContain('innererror');
  });
});

describe("an OpenAI-shaped upstream's extra error fields", () => {
  it('are cleaned of the configured key an upstream echoes in them', async () => {
    const body = JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key', key_sent: OPENAI_KEY } });
    openai.enqueue({ kind: 'raw', status: 401, body });
    const err = await refusal(tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }));
    expect(err.status).toBe(401);
    expect(err.error).toMatchObject({ code: 'invalid_api_key', key_sent: '[REDACTED]' });
    expect(JSON.stringify(err.error)).not.toContain(OPENAI_KEY);
  });
});

describe("a Gemini BadRequest's field violation", () => {
  const violation = { field: 'generation_config.temperature', description: 'temperature must be between 0.0 and 2.0' };

  it('is the param an OpenAI client reads', async () => {
    gemini.enqueue({ kind: 'error', status: 400, message: 'Invalid value at generation_config.temperature', fieldViolations: [violation] });
    const err = await refusal(tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: hi }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.param).toBe('generation_config.temperature');
  });

  it("leaves a Gemini client Google's own details", async () => {
    gemini.enqueue({ kind: 'error', status: 400, message: 'Invalid value at generation_config.temperature', fieldViolations: [violation] });
    const answer = await post('/genai/v1beta/models/gemini%2Fgemini-2.5-flash:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 400,
      message: 'Invalid value at generation_config.temperature',
      status: 'INVALID_ARGUMENT',
      details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [violation] }],
    });
  });
});
