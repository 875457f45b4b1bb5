import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../helpers/gateway.js';
import { startThreeUpstreams, type ThreeUpstreams } from '../helpers/three-upstreams.js';
import type { AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import type { GeminiUpstream } from '../upstream/gemini-upstream.js';
import type { ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A number no double can hold (`1e999`) in a field the gateway reads (sampling knobs, limits, Gemini's generation
 * and thinking config) is refused with a 400 naming the field, in the route's own error shape. Read as a double it
 * is Infinity, which JSON.stringify sends upstream as `null`: the client would get an answer to a request it never
 * made. Gemini's seed is an integer like any other, its digits kept. The bodies are sent raw: no SDK can write
 * 1e999 or 12345678901234567890 (a JavaScript number holds neither).
 */

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

let rig: ThreeUpstreams | undefined;
beforeAll(async () => {
  rig = await startThreeUpstreams({ routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } });
  ({ openai, anthropic, gemini, tg } = rig);
}, 30_000);
afterAll(async () => {
  await rig?.stop();
});
beforeEach(() => rig?.reset());

async function post(path: string, text: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.json() };
}

function noUpstreamCalls(): void {
  expect(openai.calls).toHaveLength(0);
  expect(anthropic.calls).toHaveLength(0);
  expect(gemini.calls).toHaveLength(0);
}

const GENERATE = '/genai/v1beta/models/gemini-2.0-flash:generateContent?key=k';
const CONTENTS = '"contents":[{"role":"user","parts":[{"text":"hi"}]}]';

describe('a number no double holds, where the gateway reads it', () => {
  it('/anthropic: 400 invalid_request_error naming the field', { timeout: 20_000 }, async () => {
    const cases: Array<[string, string]> = [
      ['temperature', '"temperature":1e999'],
      ['top_p', '"top_p":-1e999'],
      ['top_k', '"top_k":1e999'],
      ['thinking.budget_tokens', '"thinking":{"type":"enabled","budget_tokens":1e999}'],
    ];
    for (const [field, extra] of cases) {
      const res = await post('/anthropic/v1/messages', `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,${extra},"messages":[{"role":"user","content":"hi"}]}`);
      expect(res.status, field).toBe(400);
      expect(res.body, field).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect(res.body.error.message, field).toContain(`'${field}'`);
      expect(res.body.error.message, field).toContain('1e999');
    }
    // count_tokens reads the same body.
    const count = await post('/anthropic/v1/messages/count_tokens', '{"model":"anthropic/claude-haiku-4-5","temperature":1e999,"messages":[{"role":"user","content":"hi"}]}');
    expect(count.status).toBe(400);
    expect(count.body.type).toBe('error');
    noUpstreamCalls();
    // A value that fits still goes through, as the SDK sends it.
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'k', maxRetries: 0, timeout: 10_000 });
    // (The SDK's current types leave temperature out; Anthropic still takes it.)
    await client.messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 10, temperature: 0.5, messages: [{ role: 'user', content: 'hi' }] } as Anthropic.MessageCreateParamsNonStreaming);
    expect(anthropic.calls.at(-1)!.raw).toContain('"temperature":0.5');
  });

  it('/genai: 400 INVALID_ARGUMENT naming the field and quoting the value sent', { timeout: 20_000 }, async () => {
    const cases: Array<[string, string]> = [
      ['generationConfig.topK', '"generationConfig":{"topK":1e999}'],
      ['generationConfig.maxOutputTokens', '"generationConfig":{"maxOutputTokens":1e999}'],
      ['generationConfig.temperature', '"generationConfig":{"temperature":-1e999}'],
      ['generationConfig.thinkingConfig.thinkingBudget', '"generationConfig":{"thinkingConfig":{"thinkingBudget":1e999}}'],
    ];
    for (const [field, extra] of cases) {
      const res = await post(GENERATE, `{${CONTENTS},${extra}}`);
      expect(res.status, field).toBe(400);
      expect(res.body.error, field).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(res.body.error.message, field).toContain(`'${field}'`);
      expect(res.body.error.message, field).toMatch(/-?1e999/);
      expect(res.body.error.message, field).not.toContain('null');
    }
    noUpstreamCalls();
    const ai = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 10_000 } });
    await ai.models.generateContent({ model: 'gemini-2.0-flash', contents: 'hi', config: { topK: 40, thinkingConfig: { thinkingBudget: 1024 } } });
    expect(gemini.calls.at(-1)!.raw).toContain('"topK":40');
    expect(gemini.calls.at(-1)!.raw).toContain('"thinkingBudget":1024');
  });

  it('/v1: 400 in OpenAI shape with the field as param', { timeout: 20_000 }, async () => {
    for (const field of ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty']) {
      const res = await post('/v1/chat/completions', `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"${field}":1e999}`);
      expect(res.status, field).toBe(400);
      expect(res.body.error, field).toMatchObject({ type: 'invalid_request_error', param: field, code: 'invalid_value' });
      expect(res.body.error.message, field).toContain('1e999');
    }
    noUpstreamCalls();
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'k', maxRetries: 0, timeout: 10_000 });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 0.25 });
    expect(openai.calls.at(-1)!.raw).toContain('"temperature":0.25');
  });

  it('numbers the gateway only carries still go as written, for the upstream to judge', { timeout: 20_000 }, async () => {
    const res = await post('/v1/chat/completions', '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"logit_bias":{"1":1e999}}');
    expect(res.status).toBe(200);
    expect(openai.calls.at(-1)!.raw).toContain('"logit_bias":{"1":1e999}');
  });
});

describe("Gemini's generationConfig.seed keeps its digits", () => {
  it('to Gemini, as sent (Gemini judges its int32 range)', { timeout: 20_000 }, async () => {
    const res = await post(GENERATE, `{${CONTENTS},"generationConfig":{"seed":12345678901234567890,"temperature":0.5}}`);
    expect(res.status).toBe(200);
    const raw = gemini.calls.at(-1)!.raw!;
    expect(raw).toContain('"seed":12345678901234567890');
    expect(raw).not.toContain('tollgate-exact-number');
  });

  it('to an OpenAI model, translated', { timeout: 20_000 }, async () => {
    const res = await post('/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent?key=k', `{${CONTENTS},"generationConfig":{"seed":12345678901234567890}}`);
    expect(res.status).toBe(200);
    const raw = openai.calls.at(-1)!.raw!;
    expect(raw).toContain('"seed":12345678901234567890');
    expect(raw).not.toContain('tollgate-exact-number');
  });
});
