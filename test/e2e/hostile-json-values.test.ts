import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Valid JSON whose object has its own `toString` and `valueOf` keys that are not functions: String() and template
// literals throw on it ("Cannot convert object to primitive value"). Where tollgate quoted a client's value in its
// 400 (an unknown type, role or effort), or compared it (a routing rule's metadata), such a value was a 500 instead.
const EVIL = { toString: 'x', valueOf: 'y' } as unknown as string;

const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';

let openaiUp: ScriptedUpstream;
let anthropicUp: AnthropicUpstream;
let geminiUp: GeminiUpstream;
let bedrockUp: BedrockUpstream;
let cohereUp: CohereUpstream;
let tg: RunningGateway;
let claude: Anthropic;
let genai: GoogleGenAI;
const uncaught: unknown[] = [];
const onUncaught = (err: unknown): void => void uncaught.push(err);

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  openaiUp = await startOpenAIUpstream({ apiKey: 'sk-up' });
  anthropicUp = await startAnthropicUpstream({ apiKey: 'sk-ant-up' });
  geminiUp = await startGeminiUpstream({ apiKey: 'gemini-up' });
  bedrockUp = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  cohereUp = await startCohereUpstream({ apiKey: 'co-up' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openaiUp.url}/v1`, api_key: 'sk-up' },
      anthropic: { base_url: `${anthropicUp.url}/v1`, api_key: 'sk-ant-up' },
      gemini: { base_url: `${geminiUp.url}/v1beta`, api_key: 'gemini-up' },
      bedrock: { base_url: bedrockUp.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
      cohere: { base_url: `${cohereUp.url}/v2`, api_key: 'co-up' },
    },
    routing_rules: [{ when: { model: 'openai/gpt-4o', metadata: { tier: 'batch' } }, route_to: 'openai/gpt-4o-mini' }],
  });
  claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
  genai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai` } });
});

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await tg?.stop();
  await Promise.all([openaiUp?.close(), anthropicUp?.close(), geminiUp?.close(), bedrockUp?.close(), cohereUp?.close()]);
});

/** The SDK call's error (its status and the body it parsed), or a failure when the call succeeded. */
async function refusal(call: Promise<unknown>): Promise<{ status: number | undefined; error: any }> {
  try {
    await call;
  } catch (err) {
    return { status: (err as { status?: number }).status, error: (err as { error?: unknown }).error };
  }
  throw new Error('the request was answered, not refused');
}

describe('a value with its own toString and valueOf keys where tollgate reads a name', () => {
  it('on /v1/responses (an item, a content part, a tool) is a 400 naming the field, for any provider', async () => {
    const bodies: Array<[Record<string, unknown>, string]> = [
      [{ input: [{ type: EVIL, role: 'user', content: 'hi' }] }, 'input[0].type'],
      [{ input: [{ role: 'user', content: [{ type: EVIL, text: 'hi' }] }] }, 'input[0].content[0].type'],
      [{ input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: EVIL }] }] }, 'input[0].output[0].type'],
      [{ input: 'hi', tools: [{ type: EVIL }] }, 'tools[0]'],
      [{ input: 'hi', tools: [{ type: 'custom', name: EVIL }] }, 'tools[0]'],
    ];
    for (const model of ['anthropic/claude-3-5-haiku-latest', 'gemini/gemini-2.0-flash']) {
      for (const [body, param] of bodies) {
        const { status, error } = await refusal(tg.client.responses.create({ model, ...body } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming));
        expect(status, JSON.stringify(body)).toBe(400);
        expect(error.param).toBe(param);
      }
    }
    // allowed_tools naming a function by such a name: compared, not quoted; the tool it names is not among tools.
    const allowed = await refusal(
      tg.client.responses.create({
        model: 'anthropic/claude-3-5-haiku-latest',
        input: 'hi',
        tools: [{ type: 'function', name: EVIL, parameters: {}, strict: false }],
        tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'f' }] },
      }),
    );
    expect(allowed.status).toBe(400);
  });

  it('on /anthropic (a system block, an image source) is a 400 in Anthropic’s shape', async () => {
    const system = await refusal(claude.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 5, system: [{ type: EVIL as 'text', text: 's' }], messages: [{ role: 'user', content: 'hi' }] }));
    expect(system.status).toBe(400);
    expect(system.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const image = await refusal(
      claude.messages.create({
        model: 'openai/gpt-4o-mini',
        max_tokens: 5,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: EVIL as 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
      }),
    );
    expect(image.status).toBe(400);
    expect(image.error.error.message).toContain('messages.0.content.0.source');
  });

  it('on /v1/chat/completions to Claude, Gemini, Bedrock and Cohere (a content part, reasoning_effort) is a 400', async () => {
    const part = [{ type: EVIL, text: 'hi' }] as unknown as OpenAI.ChatCompletionContentPart[];
    for (const model of ['anthropic/claude-3-5-haiku-latest', 'gemini/gemini-2.0-flash', 'bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0', 'cohere/command-a-03-2025']) {
      const { status, error } = await refusal(tg.client.chat.completions.create({ model, max_tokens: 5, messages: [{ role: 'user', content: part }] }));
      expect(status, model).toBe(400);
      expect(error.param, model).toMatch(/^messages/);
    }
    // Bedrock's stop sequences are written as text: such a value goes as its JSON, for Bedrock to judge.
    const stop = await tg.client.chat.completions.create({ model: 'bedrock/amazon.nova-pro-v1:0', max_tokens: 5, stop: [EVIL], messages: [{ role: 'user', content: 'hi' }] });
    expect(stop.choices[0]?.message.role).toBe('assistant');
    const effort = await refusal(tg.client.chat.completions.create({ model: 'anthropic/claude-3-5-haiku-latest', max_tokens: 5, reasoning_effort: EVIL as 'low', messages: [{ role: 'user', content: 'hi' }] }));
    expect(effort.status).toBe(400);
    expect(effort.error.param).toBe('reasoning_effort');
  });

  it('on /genai (a response MIME type) is a 400 in Google’s shape', async () => {
    const { status, error } = await refusal(genai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'hi', config: { responseMimeType: EVIL } }));
    expect(status ?? (error as any)?.code).toBe(400);
  });

  it('as request metadata a routing rule compares is no match, and the request is served', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 5, metadata: { tier: EVIL }, messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]?.message.role).toBe('assistant');
    expect(uncaught).toEqual([]);
  });
});
