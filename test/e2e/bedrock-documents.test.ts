// Documents (PDFs and other files) to Bedrock's Converse API: an Anthropic client's document block (for a model other
// than Claude, which gets the client's own body), an OpenAI client's `file` part and a /genai inlineData PDF become Converse document blocks, which the scripted upstream
// validates as AWS documents them (name characters, unique names, at most five, a text block beside them).
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

const CLAUDE = 'bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0';
/** Amazon Nova takes documents in Converse; an Anthropic client's request to Claude would be passed through instead. */
const NOVA = 'bedrock/us.amazon.nova-pro-v1:0';
const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n').toString('base64');
const CSV = Buffer.from('city,temp\nParis,21\n').toString('base64');

let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { bedrock: { base_url: upstream.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

const anthropic = (): Anthropic => new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });

async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

function filePart(filename: string | undefined, mediaType: string, data: string): OpenAI.Chat.Completions.ChatCompletionContentPart {
  return { type: 'file', file: { ...(filename ? { filename } : {}), file_data: `data:${mediaType};base64,${data}` } };
}

describe('documents to Bedrock', () => {
  it("sends an Anthropic client's base64 PDF as a Converse document block named after its title (to a model other than Claude)", async () => {
    const message = await anthropic().messages.create({
      model: NOVA,
      max_tokens: 200,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', title: 'Q3 report_final.pdf', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
            { type: 'text', text: 'summarise the report' },
          ],
        },
      ],
    });
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'echo: summarise the report' });
    expect(upstream.calls[0]?.body.messages[0].content).toEqual([
      { document: { format: 'pdf', name: 'Q3 report-final', source: { bytes: PDF } } },
      { text: 'summarise the report' },
    ]);
  });

  it('streams the answer about a document as Claude Code asks for it', async () => {
    const message = await anthropic()
      .messages.stream({
        model: NOVA,
        max_tokens: 200,
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } }, { type: 'text', text: 'what does it say?' }] }],
      })
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'echo: what does it say?' });
    expect(upstream.calls[0]?.action).toBe('converse-stream');
    expect(upstream.calls[0]?.body.messages[0].content[0]).toEqual({ document: { format: 'pdf', name: 'document', source: { bytes: PDF } } });
  });

  it("reads the PDF Claude Code's Read tool answered with: the turn gets the text block Converse requires", async () => {
    const message = await anthropic().messages.create({
      model: NOVA,
      max_tokens: 200,
      tools: [{ name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'read spec.pdf' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: 'spec.pdf' } }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } }] }],
        },
      ],
    });
    expect(message.type).toBe('message');
    const turn = upstream.calls[0]?.body.messages[2];
    expect(turn.role).toBe('user');
    const documents = turn.content.filter((block: any) => block.document);
    expect(documents).toEqual([{ document: { format: 'pdf', name: 'document', source: { bytes: PDF } } }]);
    expect(turn.content.some((block: any) => typeof block.text === 'string' && block.text.trim() !== '')).toBe(true);
  });

  it("sends an OpenAI client's file parts with unique, valid names and their formats", async () => {
    await tg.client.chat.completions.create({
      model: CLAUDE,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'compare these' },
            filePart('notes.v2 (draft).pdf', 'application/pdf', PDF),
            filePart('notes.v2 (draft).pdf', 'application/pdf', PDF),
            filePart('weather.csv', 'text/csv', CSV),
            filePart(undefined, 'application/pdf', PDF),
            filePart('日本.pdf', 'application/pdf', PDF),
          ],
        },
      ],
    });
    const blocks = upstream.calls[0]?.body.messages[0].content;
    expect(blocks[0]).toEqual({ text: 'compare these' });
    expect(blocks.slice(1).map((block: any) => [block.document.format, block.document.name])).toEqual([
      ['pdf', 'notes-v2 (draft)'],
      ['pdf', 'notes-v2 (draft) (2)'],
      ['csv', 'weather'],
      ['pdf', 'document-4'],
      ['pdf', 'document-5'],
    ]);
  });

  it('leaves out a whitespace-only text part beside a file, which Converse would refuse as blank', async () => {
    await tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: [filePart('memo.pdf', 'application/pdf', PDF), { type: 'text', text: ' \n' }] }] });
    const blocks = upstream.calls[0]?.body.messages[0].content;
    expect(blocks[0]).toEqual({ document: { format: 'pdf', name: 'memo', source: { bytes: PDF } } });
    expect(blocks.slice(1)).toEqual([{ text: 'Attached document: memo' }]);

    upstream.reset();
    await tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'system', content: '\n' }, { role: 'user', content: [{ type: 'text', text: ' ' }, { type: 'text', text: 'hi' }] }] });
    expect(upstream.calls[0]?.body.system).toBeUndefined();
    expect(upstream.calls[0]?.body.messages[0].content).toEqual([{ text: 'hi' }]);
  });

  it('sends a /genai inlineData PDF as a document block', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const answer = await ai.models.generateContent({
      model: CLAUDE,
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data: PDF } }, { text: 'what is in it?' }] }],
    });
    expect(answer.text).toBe('echo: what is in it?');
    expect(upstream.calls[0]?.body.messages[0].content).toEqual([
      { document: { format: 'pdf', name: 'document-1', source: { bytes: PDF } } },
      { text: 'what is in it?' },
    ]);
  });

  it('refuses with a 400 naming the part what Converse cannot take, before calling Bedrock', async () => {
    const byId = await failure(
      tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, { type: 'file', file: { file_id: 'file-abc123' } }] }] }),
    );
    expect(byId.status).toBe(400);
    expect(byId.message).toMatch(/file_data/);
    expect(byId.message).toMatch(/pdf, csv, doc, docx, xls, xlsx, html, txt, md/);
    expect((byId.error as any)?.param).toBe('messages.0.content.1');

    const zip = await failure(tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, filePart('a.zip', 'application/zip', PDF)] }] }));
    expect(zip.status).toBe(400);
    expect(zip.message).toMatch(/application\/zip/);
    expect(zip.message).toMatch(/pdf, csv, doc, docx, xls, xlsx, html, txt, md/);

    // A media type naming one of Object's members is no format either (a plain table once found one).
    const hostile = await failure(tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, filePart('a.pdf', 'constructor', PDF)] }] }));
    expect(hostile.status).toBe(400);
    expect(hostile.message).toMatch(/constructor/);
    const hostileImage = await failure(
      tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: `data:constructor;base64,${PDF}` } }] }] }),
    );
    expect(hostileImage.status).toBe(400);
    expect(hostileImage.message).toMatch(/image type constructor is not supported/);

    const six = Array.from({ length: 6 }, (_, i) => filePart(`part ${i}.pdf`, 'application/pdf', PDF));
    const tooMany = await failure(tg.client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: [{ type: 'text', text: 'read all' }, ...six] }] }));
    expect(tooMany.status).toBe(400);
    expect(tooMany.message).toMatch(/at most 5 documents/);
    expect((tooMany.error as any)?.param).toBe('messages.0.content.6');
    expect(upstream.calls).toHaveLength(0);
  });
});
