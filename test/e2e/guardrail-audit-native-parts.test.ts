import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * Output rules on an answer passed through in the client's own format read the parts of it the canonical answer has
 * no form for: on /genai the code the model runs with the code execution tool (`executableCode.code`) and what it
 * printed (`codeExecutionResult.output`), whole and streamed; on /anthropic a whole answer's server tool call input
 * (`server_tool_use.input`, which a stream's guard already reads). Left unread they reached the client as the
 * upstream wrote them, past a rule that redacts or blocks the same text anywhere else in the answer.
 */
let gemini: GeminiUpstream;
let anthropic: AnthropicUpstream;
let redacting: RunningGateway;
let blocking: RunningGateway;
let failing: RunningGateway;
const GEMINI_KEY = 'gemini-code-key';
const EMAIL = 'jane.doe@example.com';

const providers = (): NonNullable<ConfigInput['providers']> => ({
  gemini: { base_url: `${gemini.url}/v1beta`, api_key: GEMINI_KEY },
  anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
});

function genai(gateway: RunningGateway): GoogleGenAI {
  return new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${gateway.url}/genai`, timeout: 15_000 } });
}

function claude(gateway: RunningGateway): Anthropic {
  return new Anthropic({ baseURL: `${gateway.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
}

const codeParts = [
  { text: 'Let me run it.' },
  { executableCode: { language: 'PYTHON', code: `print("${EMAIL}")` } },
  { codeExecutionResult: { outcome: 'OUTCOME_OK', output: `${EMAIL}\n` } },
  { text: 'Done.' },
];
const usageMetadata = { promptTokenCount: 5, candidatesTokenCount: 20, totalTokenCount: 25 };
const codeConfig = { tools: [{ codeExecution: {} }] };

function geminiWhole(): void {
  const body = { candidates: [{ content: { role: 'model', parts: codeParts }, finishReason: 'STOP', index: 0 }], usageMetadata, modelVersion: 'gemini-2.5-flash' };
  gemini.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(body) });
}

function geminiStream(): void {
  const events = codeParts.map((part, i) => ({
    candidates: [{ content: { role: 'model', parts: [part] }, ...(i === codeParts.length - 1 ? { finishReason: 'STOP' } : {}), index: 0 }],
    usageMetadata,
    modelVersion: 'gemini-2.5-flash',
  }));
  gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join('') });
}

async function streamed(gateway: RunningGateway): Promise<{ text: string; finish: string | undefined; total: number | undefined }> {
  const stream = await genai(gateway).models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'print my address', config: codeConfig });
  const seen: string[] = [];
  let finish: string | undefined;
  let total: number | undefined;
  for await (const piece of stream) {
    seen.push(JSON.stringify(piece.candidates));
    finish = piece.candidates?.[0]?.finishReason ?? finish;
    total = piece.usageMetadata?.totalTokenCount ?? total;
  }
  return { text: seen.join('\n'), finish, total };
}

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: GEMINI_KEY });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  redacting = await startGateway({ providers: providers(), guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] } });
  blocking = await startGateway({ providers: providers(), guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'block', applies_to: 'output' }] } });
  failing = await startGateway({ providers: providers(), guardrails: { output_block: 'error', rules: [{ name: 'emails', kind: 'email', action: 'block', applies_to: 'output' }] } });
});

afterAll(async () => {
  await redacting?.stop();
  await blocking?.stop();
  await failing?.stop();
  await gemini?.close();
  await anthropic?.close();
});

beforeEach(() => {
  gemini.reset();
  anthropic.reset();
});

describe('/genai: code execution parts under output rules', () => {
  it('redacts an email in the code and its output of a whole answer, the rest kept', async () => {
    geminiWhole();
    const answer = await genai(redacting).models.generateContent({ model: 'gemini-2.5-flash', contents: 'print my address', config: codeConfig });
    expect(JSON.stringify(answer.candidates)).not.toContain(EMAIL);
    expect(answer.executableCode).toBe('print("[REDACTED:email]")');
    expect(answer.codeExecutionResult).toBe('[REDACTED:email]\n');
    expect(answer.text).toBe('Let me run it.Done.');
    expect(answer.usageMetadata?.totalTokenCount).toBe(25);
  });

  it('redacts an email in the code and its output of a stream, the rest kept', async () => {
    geminiStream();
    const { text, finish, total } = await streamed(redacting);
    expect(text).not.toContain(EMAIL);
    expect(text).toContain('print(\\"[REDACTED:email]\\")');
    expect(text).toContain('[REDACTED:email]\\n');
    expect(text).toContain('Done.');
    expect(finish).toBe('STOP');
    expect(total).toBe(25);
  });

  it('withholds a whole answer whose code a rule blocks: SAFETY, usage kept', async () => {
    geminiWhole();
    const answer = await genai(blocking).models.generateContent({ model: 'gemini-2.5-flash', contents: 'print my address', config: codeConfig });
    expect(JSON.stringify(answer.candidates)).not.toContain(EMAIL);
    expect(answer.candidates?.[0]?.finishReason).toBe('SAFETY');
    expect(answer.usageMetadata?.totalTokenCount).toBe(25);
  });

  it('ends a stream whose code a rule blocks with SAFETY, the text before it kept', async () => {
    geminiStream();
    const { text, finish, total } = await streamed(blocking);
    expect(text).not.toContain(EMAIL);
    expect(text).toContain('Let me run it.');
    expect(text).not.toContain('Done.');
    expect(finish).toBe('SAFETY');
    expect(total).toBe(25);
  });

  it('fails a stream whose code a rule blocks under output_block: error', async () => {
    geminiStream();
    const error = await streamed(failing).then(
      () => null,
      (err: unknown) => err as Error,
    );
    expect(String(error)).toContain('guardrail');
    expect(String(error)).not.toContain(EMAIL);
  });
});

describe('/anthropic: a whole answer with a server tool call under output rules', () => {
  const message = (): Record<string, unknown> => ({
    id: 'msg_01AuditServerTool',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [
      { type: 'server_tool_use', id: 'srvtoolu_01Audit', name: 'web_search', input: { query: `who owns ${EMAIL}` } },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01Audit', content: [] },
      { type: 'text', text: 'Nothing found.' },
    ],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 12, server_tool_use: { web_search_requests: 1 } },
  });
  const request: Anthropic.MessageCreateParamsNonStreaming = {
    model: 'anthropic/claude-sonnet-4-5',
    max_tokens: 200,
    tools: [{ type: 'web_search_20250305', name: 'web_search' }],
    messages: [{ role: 'user', content: 'search for the owner' }],
  };

  it('redacts the search query, the blocks and usage kept', async () => {
    anthropic.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(message()) });
    const answer = await claude(redacting).messages.create(request);
    expect(JSON.stringify(answer.content)).not.toContain(EMAIL);
    expect(answer.content.map((block) => block.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    expect((answer.content[0] as Anthropic.ServerToolUseBlock).input).toEqual({ query: 'who owns [REDACTED:email]' });
    expect(answer.usage.output_tokens).toBe(12);
  });

  it('withholds the answer when a rule blocks the search query', async () => {
    anthropic.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(message()) });
    const answer = await claude(blocking).messages.create(request);
    expect(JSON.stringify(answer.content)).not.toContain(EMAIL);
    expect(answer.stop_reason).toBe('refusal');
  });
});
