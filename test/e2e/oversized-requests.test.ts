import Anthropic from '@anthropic-ai/sdk';
import { FunctionCallingConfigMode, GoogleGenAI, type Content } from '@google/genai';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { ownTimed } from '../helpers/own-time.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Requests well under the body limit whose size is in the count of their items, not their bytes: tens of thousands
// of messages, parts, tool calls or guardrail findings. Each must be answered like a small one, without a 500
// (a spread of that many arguments overflows the stack) and without holding the event loop (work quadratic in the
// count), which would stall every other request on the gateway.

/**
 * Far above what these requests take when handled in linear time (0.3-1.6 s here), far below what quadratic work
 * took (10-30 s). Read on this thread's own clock (test/helpers/own-time.ts): the gateway, its upstreams and the client all
 * run on it, and a busy CI machine's scheduler stretched the wall clock of a linear request past the bound.
 */
const PROMPT_MS = 6_000;

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;
let claude: Anthropic;
let genai: GoogleGenAI;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-big-openai', record: false });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-big' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-big-key' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-big-openai' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-big' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-big-key' },
    },
    guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'input' }] },
  });
  claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 60_000 });
  genai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 60_000 } });
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await anthropic?.close();
  await gemini?.close();
});

describe('requests with very many items', () => {
  it('a run of 60 000 user messages to an Anthropic provider is merged in linear time', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = Array.from({ length: 60_000 }, () => ({ role: 'user', content: 'x' }));
    const { value, ms } = await ownTimed(() => tg.client.chat.completions.create({ model: 'anthropic/claude-3-5-haiku-latest', max_tokens: 1, messages }));
    expect(value.choices[0]?.message.role).toBe('assistant');
    expect(ms).toBeLessThan(PROMPT_MS);
  }, 90_000);

  it('one text with 150 000 redacted findings is answered, not a 500', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', max_tokens: 1, messages: [{ role: 'user', content: 'a@b.co '.repeat(150_000) }] });
    expect(answer.choices[0]?.message.role).toBe('assistant');
    const embedded = await tg.client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'a@b.co '.repeat(150_000) });
    expect(embedded.data).toHaveLength(1);
    const native = await claude.messages.create({ model: 'claude-3-5-haiku-latest', max_tokens: 1, messages: [{ role: 'user', content: 'a@b.co '.repeat(150_000) }] });
    expect(native.type).toBe('message');
  }, 90_000);

  it('an Anthropic user turn of 150 000 tool results reaches an OpenAI provider, not a 500', async () => {
    const results: Anthropic.ToolResultBlockParam[] = Array.from({ length: 150_000 }, () => ({ type: 'tool_result', tool_use_id: 't', content: 'x' }));
    const answer = await claude.messages.create({
      model: 'openai/gpt-4o-mini',
      max_tokens: 5,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
        { role: 'user', content: results },
      ],
    });
    expect(answer.type).toBe('message');
  }, 90_000);

  it('150 000 content parts merged into a Gemini turn, and as many system parts for Anthropic, are not a 500', async () => {
    const parts: OpenAI.ChatCompletionContentPartText[] = Array.from({ length: 150_000 }, () => ({ type: 'text', text: 'x' }));
    const merged = await tg.client.chat.completions.create({
      model: 'gemini/gemini-2.0-flash',
      max_tokens: 1,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'user', content: parts },
      ],
    });
    expect(merged.choices[0]?.message.role).toBe('assistant');
    const system = await tg.client.chat.completions.create({
      model: 'anthropic/claude-3-5-haiku-latest',
      max_tokens: 1,
      messages: [
        { role: 'system', content: parts },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(system.choices[0]?.message.role).toBe('assistant');
  }, 90_000);

  it('a Responses input of 150 000 items is answered by a translated provider and passed through to OpenAI, not a 500', async () => {
    const input: OpenAI.Responses.ResponseInputItem[] = Array.from({ length: 150_000 }, () => ({ role: 'user', content: 'x' }));
    for (const model of ['anthropic/claude-3-5-haiku-latest', 'openai/gpt-4o-mini']) {
      const { value, ms } = await ownTimed(() => tg.client.responses.create({ model, max_output_tokens: 16, input }));
      expect(value.object).toBe('response');
      expect(ms).toBeLessThan(PROMPT_MS);
    }
  }, 90_000);

  it('a Responses input of 40 000 parallel function calls and their outputs is translated in linear time', async () => {
    const n = 40_000;
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'hi' }];
    for (let i = 0; i < n; i++) input.push({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' });
    for (let i = 0; i < n; i++) input.push({ type: 'function_call_output', call_id: `c${i}`, output: 'r' });
    for (const model of ['gemini/gemini-2.0-flash', 'openai/gpt-4o-mini']) {
      const { value, ms } = await ownTimed(() => tg.client.responses.create({ model, max_output_tokens: 16, input }));
      expect(value.object).toBe('response');
      expect(ms, model).toBeLessThan(PROMPT_MS);
    }
  }, 120_000);

  it('60 000 tool calls each with an email the input rule redacts are redacted in linear time, on chat and on Responses', async () => {
    const n = 60_000;
    const calls = Array.from({ length: n }, (_, i) => ({ id: `c${i}`, type: 'function' as const, function: { name: 'send', arguments: `{"to":"a${i}@b.co"}` } }));
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'mail them' }, { role: 'assistant', content: null, tool_calls: calls }];
    for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: 'sent' });
    const chat = await ownTimed(() => tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', max_tokens: 1, messages }));
    expect(chat.value.choices[0]?.message.role).toBe('assistant');
    expect(chat.ms).toBeLessThan(PROMPT_MS);
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'mail them' }];
    for (const call of calls) input.push({ type: 'function_call', call_id: call.id, name: 'send', arguments: call.function.arguments });
    for (const call of calls) input.push({ type: 'function_call_output', call_id: call.id, output: 'sent' });
    const responses = await ownTimed(() => tg.client.responses.create({ model: 'gemini/gemini-2.0-flash', max_output_tokens: 16, input }));
    expect(responses.value.object).toBe('response');
    expect(responses.ms).toBeLessThan(PROMPT_MS);
  }, 120_000);

  it('a million items tollgate cannot translate are refused promptly on /v1/responses, /anthropic and /genai, naming the first', async () => {
    // Each once built (and held) an error with its stack trace per item: 1 GB and 15-20 s of a stalled event loop for
    // a 14 MB body, and a body of 6 million such items under the default limit took the gateway down (heap out of memory).
    const items = (item: string): string => Array<string>(1_000_000).fill(item).join(',');
    const cases: Array<{ path: string; body: string; headers?: Record<string, string>; shape: (json: any) => unknown }> = [
      { path: '/v1/responses', body: `{"model":"anthropic/claude-3-5-haiku-latest","input":[${items('{"type":"zz"}')}]}`, shape: (json) => json.error.param },
      { path: '/v1/responses', body: `{"model":"anthropic/claude-3-5-haiku-latest","input":[${items('{}')}]}`, shape: (json) => json.error.param },
      {
        path: '/anthropic/v1/messages',
        body: `{"model":"openai/gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":[${items('{"type":"zz"}')}]}]}`,
        headers: { 'anthropic-version': '2023-06-01' },
        shape: (json) => json.error.message.split(':')[0],
      },
      { path: '/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent', body: `{"contents":[{"role":"user","parts":[${items('{"zz":1}')}]}]}`, shape: (json) => json.error.status },
    ];
    const expected = ['input[0].type', 'input[0].role', 'messages.0.content.0.type', 'INVALID_ARGUMENT'];
    for (const [i, { path, body, headers, shape }] of cases.entries()) {
      const { value, ms } = await ownTimed(async () => {
        const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
        return { status: response.status, json: await response.json() };
      });
      expect(value.status, path).toBe(400);
      expect(shape(value.json), path).toBe(expected[i]);
      expect(ms, path).toBeLessThan(PROMPT_MS);
    }
    const health = await fetch(`${tg.url}/health`);
    expect(health.status).toBe(200);
  }, 180_000);

  it('a Gemini turn of 40 000 function calls and responses is matched in linear time', async () => {
    const n = 40_000;
    const contents: Content[] = [
      { role: 'user', parts: [{ text: 'hi' }] },
      { role: 'model', parts: Array.from({ length: n }, () => ({ functionCall: { name: 'f', args: {} } })) },
      { role: 'user', parts: Array.from({ length: n }, () => ({ functionResponse: { name: 'g', response: {} } })) },
    ];
    const { value, ms } = await ownTimed(() => genai.models.generateContent({ model: 'openai/gpt-4o-mini', contents, config: { maxOutputTokens: 1 } }));
    expect(value.candidates?.length).toBe(1);
    expect(ms).toBeLessThan(PROMPT_MS);
  }, 90_000);

  it('toolConfig ANY naming 120 000 functions among as many narrows the tools in linear time', async () => {
    const n = 120_000;
    const { value, ms } = await ownTimed(() =>
      genai.models.generateContent({
        model: 'openai/gpt-4o-mini',
        contents: 'hi',
        config: {
          maxOutputTokens: 1,
          tools: [{ functionDeclarations: Array.from({ length: n }, (_, i) => ({ name: `f${i}` })) }],
          toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: Array.from({ length: n }, (_, i) => `g${i}`).concat('f1', 'f2') } },
        },
      }),
    );
    expect(value.candidates?.length).toBe(1);
    expect(ms).toBeLessThan(PROMPT_MS);
  }, 90_000);
});
