// Gemini's thought signatures on the Responses API, translated: Gemini signs a function call with its reasoning, and
// Gemini 3 wants the signature back with the call on the next turn (else tollgate sends Google's skip placeholder and
// the model goes on without its reasoning). A Responses function_call item has no field for it, so tollgate writes it in
// a reasoning item's encrypted_content, just before the call, whole and streamed; handed back (the items themselves, as
// the Vercel AI SDK does with store: false, or a stored conversation by previous_response_id), it reaches Gemini on the
// functionCall part it signs, exactly as Gemini wrote it.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, tool } from 'ai';
import type OpenAI from 'openai';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const GEMINI_3 = 'gemini/gemini-3-pro-preview';
/** The signature the scripted Gemini upstream gives its function calls. */
const SIGNATURE = 'c2lnbmF0dXJlLW9mLXRoZS1jYWxs';
const SKIP = 'skip_thought_signature_validator';

let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      // A vendor of OpenAI's chat format: it gets the canonical messages' fields as they are.
      deepseek: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await openai?.close();
});
beforeEach(() => {
  gemini.reset();
  openai.reset();
});

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  strict: false,
};

const QUESTION = 'use the tool for Rome';

/** A streamed Response through the SDK's own stream parser: its events' types and the final Response. */
async function streamed(params: OpenAI.Responses.ResponseCreateParamsStreaming): Promise<{ events: any[]; final: OpenAI.Responses.Response }> {
  const stream = client.responses.stream(params);
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
  return { events, final };
}

function callOf(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseFunctionToolCall {
  const call = response.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
  if (!call) throw new Error('no function call in the answer');
  return call;
}

/** The call's signature item as tollgate writes it: a reasoning item without summary, just before the call. */
function expectSignatureItem(response: OpenAI.Responses.Response): void {
  expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
  const reasoning = response.output[0] as OpenAI.Responses.ResponseReasoningItem;
  expect(reasoning.id).toMatch(/^rs_tg_/);
  expect(reasoning.summary).toEqual([]);
  const encrypted = reasoning.encrypted_content ?? '';
  expect(encrypted).toMatch(/^tg_gemini_signatures\./);
  expect(JSON.parse(Buffer.from(encrypted.slice('tg_gemini_signatures.'.length), 'base64url').toString('utf8'))).toEqual({ [callOf(response).call_id]: SIGNATURE });
}

/**
 * The second turn's items as the Vercel AI SDK sends them with store: false: the question, the reasoning item (its
 * id, encrypted_content, an empty summary), the function_call (without its item id) and the tool's result.
 */
function aiSdkTurn(first: OpenAI.Responses.Response, result: string): OpenAI.Responses.ResponseInput {
  const reasoning = first.output[0] as OpenAI.Responses.ResponseReasoningItem;
  const call = callOf(first);
  return [
    { role: 'user', content: [{ type: 'input_text', text: QUESTION }] },
    { type: 'reasoning', id: reasoning.id, encrypted_content: reasoning.encrypted_content ?? null, summary: [] },
    { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
    { type: 'function_call_output', call_id: call.call_id, output: result },
  ];
}

/** The thought signature of the functionCall part Gemini got back in the last request. */
function signatureSent(): unknown {
  const contents = gemini.calls.at(-1)?.body.contents as Array<{ role: string; parts: Array<Record<string, unknown>> }>;
  const part = contents.flatMap((content) => (content.role === 'model' ? content.parts : [])).find((item) => item.functionCall !== undefined);
  expect(part).toBeDefined();
  return part?.thoughtSignature;
}

describe('Gemini thought signatures through /v1/responses', () => {
  it('a whole answer carries the call’s signature in a reasoning item; handed back with store: false it reaches Gemini as written', async () => {
    const first = await client.responses.create({ model: GEMINI_3, input: QUESTION, tools: [weather], store: false, include: ['reasoning.encrypted_content'] });
    expectSignatureItem(first);
    const second = await client.responses.create({ model: GEMINI_3, input: aiSdkTurn(first, '18C'), tools: [weather], store: false, include: ['reasoning.encrypted_content'] });
    expect(second.output_text).toContain('18C');
    expect(signatureSent()).toBe(SIGNATURE);
  });

  it('a streamed answer writes the reasoning item before its call (output_item.added/done, in order); handed back, the signature reaches Gemini', async () => {
    const first = await streamed({ model: GEMINI_3, input: QUESTION, tools: [weather], store: false, include: ['reasoning.encrypted_content'], stream: true });
    expectSignatureItem(first.final);
    const items = first.events.filter((event) => event.type === 'response.output_item.added' || event.type === 'response.output_item.done');
    expect(items.map((event) => [event.type, event.output_index, event.item.type])).toEqual([
      ['response.output_item.added', 0, 'reasoning'],
      ['response.output_item.done', 0, 'reasoning'],
      ['response.output_item.added', 1, 'function_call'],
      ['response.output_item.done', 1, 'function_call'],
    ]);
    expect(items[1].item).toEqual(first.final.output[0]);
    // The SDK's documented loop: every output item goes back as it came, then the tool's result.
    const call = callOf(first.final);
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: QUESTION },
      ...(first.final.output as OpenAI.Responses.ResponseInputItem[]),
      { type: 'function_call_output', call_id: call.call_id, output: '18C' },
    ];
    const second = await streamed({ model: GEMINI_3, input, tools: [weather], store: false, stream: true });
    expect(second.final.output_text).toContain('18C');
    expect(signatureSent()).toBe(SIGNATURE);
  });

  it.each([
    ['whole', false],
    ['streamed', true],
  ])('a stored conversation (previous_response_id) after a %s answer sends Gemini the signature', async (_name, stream) => {
    const first = stream
      ? (await streamed({ model: GEMINI_3, input: QUESTION, tools: [weather], stream: true })).final
      : await client.responses.create({ model: GEMINI_3, input: QUESTION, tools: [weather] });
    expect(first).toMatchObject({ store: true });
    expectSignatureItem(first);
    const second = await client.responses.create({
      model: GEMINI_3,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: callOf(first).call_id, output: '18C' }],
      tools: [weather],
    });
    expect(second.output_text).toContain('18C');
    expect(signatureSent()).toBe(SIGNATURE);
  });

  it('the Vercel AI SDK’s own tool loop with store: false sends Gemini the signature on the next step', async () => {
    const provider = createOpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key' });
    const result = await generateText({
      model: provider(GEMINI_3),
      prompt: QUESTION,
      tools: { weather: tool({ description: 'Weather for a city', inputSchema: z.object({ query: z.string() }), execute: async () => '18C' }) },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
      providerOptions: { openai: { store: false, include: ['reasoning.encrypted_content'] } },
    });
    expect(gemini.calls).toHaveLength(2);
    expect(result.text).toContain('18C');
    expect(signatureSent()).toBe(SIGNATURE);
  });

  it('what the client writes in such items is read warily: malformed, oversized or mistyped ones are ignored, the real one is used', async () => {
    const first = await client.responses.create({ model: GEMINI_3, input: QUESTION, tools: [weather], store: false });
    const callId = callOf(first).call_id;
    /** A reasoning item whose encrypted_content has tollgate's prefix and this JSON (a value, or text as it is). */
    const carrying = (value: unknown): OpenAI.Responses.ResponseInputItem => ({
      type: 'reasoning',
      id: 'rs_tg_0123456789abcdef',
      summary: [],
      encrypted_content: `tg_gemini_signatures.${Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')}`,
    });
    const hostile: OpenAI.Responses.ResponseInputItem[] = [
      { type: 'reasoning', id: 'rs_tg_1', summary: [], encrypted_content: 'tg_gemini_signatures.%%%not base64 json' },
      carrying([callId, 'an array']),
      carrying(null),
      carrying({ [callId]: 42, other: { deep: true } }),
      carrying('{"__proto__": {"polluted": "yes"}, "constructor": "x"}'),
      // Larger than any signature tollgate wrote: never decoded, so the wrong signature in it goes nowhere.
      carrying({ [callId]: 'A'.repeat(1_100_000) }),
      { type: 'reasoning', id: 'rs_tg_2', summary: [], encrypted_content: 7 as unknown as string },
    ];
    const [question, ...rest] = aiSdkTurn(first, '18C');
    const second = await client.responses.create({ model: GEMINI_3, input: [question!, ...hostile, ...rest], tools: [weather], store: false });
    expect(second.output_text).toContain('18C');
    expect(signatureSent()).toBe(SIGNATURE);
    // Without an item carrying it, the call goes with Google's placeholder (Gemini 3 would refuse it bare).
    await client.responses.create({ model: GEMINI_3, input: [question!, ...hostile, ...rest.slice(1)], tools: [weather], store: false });
    expect(signatureSent()).toBe(SKIP);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('the signature reaches only Gemini: the same items continued with an OpenAI-format vendor carry none', async () => {
    const first = await client.responses.create({ model: GEMINI_3, input: QUESTION, tools: [weather], store: false });
    const input = aiSdkTurn(first, '18C');
    await client.responses.create({ model: GEMINI_3, input, tools: [weather], store: false });
    expect(signatureSent()).toBe(SIGNATURE);
    await client.responses.create({ model: 'deepseek/deepseek-chat', input, tools: [weather], store: false });
    const sent = openai.calls.at(-1)?.body.messages as Array<Record<string, any>>;
    const assistant = sent.find((message) => message.role === 'assistant');
    expect(assistant?.tool_calls).toEqual([{ id: callOf(first).call_id, type: 'function', function: { name: 'weather', arguments: callOf(first).arguments } }]);
  });
});
