import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A plain-text document is text the model reads, like a text part: input rules check it on every route, and a
// redaction reaches the upstream's body whatever its shape (the client's own body on the native paths included).

const EMAIL = 'jane.doe@example.com';
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gk' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gk' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' },
    },
    guardrails: {
      rules: [
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'input' },
        { name: 'deny', kind: 'keyword', keywords: ['project zephyr'], action: 'block', applies_to: 'input' },
      ],
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([anthropic?.close(), gemini?.close(), openai?.close()]);
});

describe('plain-text documents on input', () => {
  const client = () => new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
  const document = (data: string): Anthropic.MessageParam[] => [
    { role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data } }, { type: 'text', text: 'Summarize it.' }] },
  ];

  it('redacts an Anthropic text document before it goes upstream, native and translated', async () => {
    await client().messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, messages: document(`Write to ${EMAIL} today.`) });
    const sent = anthropic.calls.at(-1)?.raw ?? '';
    expect(sent).toContain('Write to [REDACTED:email] today.');
    expect(sent).not.toContain(EMAIL);

    await client().messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 100, messages: document(`Write to ${EMAIL} today.`) });
    const translated = JSON.stringify(openai.calls.at(-1)?.body);
    expect(translated).not.toContain(EMAIL);
    expect(translated).toContain('Write to [REDACTED:email] today.');
  });

  it('refuses a blocked word in a text document', async () => {
    const before = anthropic.calls.length;
    const error = await client()
      .messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, messages: document('The plan for Project Zephyr.') })
      .then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as Error).message).toContain("guardrail 'deny'");
    expect(anthropic.calls.length).toBe(before);
  });

  it('redacts a Gemini text/plain inline part and an OpenAI text file part', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai` } });
    await ai.models.generateContent({
      model: 'gemini/gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'text/plain', data: b64(`Mail ${EMAIL}.`) } }, { text: 'Summarize it.' }] }],
    });
    const sent = gemini.calls.at(-1)?.raw ?? '';
    expect(sent).toContain(b64('Mail [REDACTED:email].'));
    expect(sent).not.toContain(b64(`Mail ${EMAIL}.`));

    // OpenAI refuses a text file in Chat Completions (PDFs only), but what reached it was redacted.
    const refused = await tg.client.chat.completions
      .create({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'notes.txt', file_data: `data:text/plain;base64,${b64(`Mail ${EMAIL}.`)}` } }, { type: 'text', text: 'Summarize it.' }] }],
      })
      .then(() => null, (err: { status?: number }) => err);
    expect(refused?.status).toBe(400);
    const forwarded = JSON.stringify(openai.calls.at(-1)?.body);
    expect(forwarded).toContain(b64('Mail [REDACTED:email].'));
    expect(forwarded).not.toContain(b64(`Mail ${EMAIL}.`));
  });
});

describe('what the request log keeps of a refused request', () => {
  it('never the text a rule blocked, in the captured body of an OpenAI or a native Anthropic request', async () => {
    const { AdminClient } = await import('../helpers/admin.js');
    const logged = await startGateway({
      providers: { anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' }, openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' } },
      settings: { log_bodies: { enabled: true } },
      guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block' }, { name: 'emails', kind: 'email', action: 'redact' }] },
    });
    try {
      const admin = new AdminClient(logged.url);
      const openaiError = await logged.client.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `mail ${EMAIL}` }, { role: 'user', content: 'pay with 4111 1111 1111 1111 now' }] })
        .then(() => null, (err: any) => err);
      const anthropicClient = new Anthropic({ baseURL: `${logged.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
      const anthropicError = await anthropicClient.messages
        .create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 50, system: `mail ${EMAIL}`, messages: [{ role: 'user', content: 'pay with 4111 1111 1111 1111 now' }] })
        .then(() => null, (err: any) => err);
      for (const error of [openaiError, anthropicError]) {
        expect(error?.status).toBe(400);
        const entry = JSON.stringify(await admin.logEntry(error.requestID ?? error.request_id));
        expect(entry).toContain('guardrail_blocked');
        expect(entry).toContain('pay with [REDACTED:payment_card] now');
        expect(entry).not.toContain('4111');
        expect(entry).not.toContain(EMAIL);
      }
    } finally {
      await logged.stop();
    }
  });
});
