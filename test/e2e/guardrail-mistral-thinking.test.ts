import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Mistral's reasoning models (Magistral) write `content` as a list of chunks, thinking and text, whole and in each
// streamed delta. Output rules read both: an address the model thought or wrote reaches the client redacted, and a
// client whose answer no stage changed still gets the chunks as Mistral wrote them.

type Part = { type?: string; text?: string; thinking?: Part[] };
interface Read {
  thinking: string;
  text: string;
}

/** The thinking and the text of a message or delta, in either form: Mistral's chunks or reasoning_content and content. */
function read(holder: unknown, into: Read): void {
  const fields = holder as { content?: unknown; reasoning_content?: unknown };
  if (typeof fields.reasoning_content === 'string') into.thinking += fields.reasoning_content;
  if (typeof fields.content === 'string') into.text += fields.content;
  if (!Array.isArray(fields.content)) return;
  for (const part of fields.content as Part[]) {
    if (part.type === 'text') into.text += part.text ?? '';
    if (part.type === 'thinking') for (const inner of part.thinking ?? []) into.thinking += inner.text ?? '';
  }
}

const THINKING = ['The user is ', 'jane.d', 'oe@exam', 'ple.com, so ', 'I will greet her.'];
const REPLY = ['Hello! I will write to ', 'jo', 'hn@examp', 'le.org', ' today.'];

describe('output rules and Mistral’s thinking chunks', () => {
  let upstream: ScriptedUpstream;
  let guarded: RunningGateway;
  let open: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
    const providers = { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } };
    guarded = await startGateway({ providers, guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] } });
    open = await startGateway({ providers });
  });
  afterAll(async () => {
    await guarded?.stop();
    await open?.stop();
    await upstream?.close();
  });

  it('redacts an address in streamed thinking and text chunks, every byte the client gets', async () => {
    upstream.enqueue({ kind: 'reply', pieces: REPLY, thinking: THINKING });
    const stream = await guarded.client.chat.completions.create({ model: 'mistral/magistral-medium-latest', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const got: Read = { thinking: '', text: '' };
    let raw = '';
    for await (const part of stream) {
      raw += JSON.stringify(part);
      read(part.choices[0]?.delta, got);
    }
    expect(got.thinking).toBe('The user is [REDACTED:email], so I will greet her.');
    expect(got.text).toBe('Hello! I will write to [REDACTED:email] today.');
    for (const piece of ['oe@exam', 'hn@examp']) expect(raw).not.toContain(piece);
  });

  it('redacts an address in a whole answer’s thinking and text chunks', async () => {
    upstream.enqueue({ kind: 'reply', pieces: REPLY, thinking: THINKING });
    const answer = await guarded.client.chat.completions.create({ model: 'mistral/magistral-medium-latest', messages: [{ role: 'user', content: 'hi' }] });
    const got: Read = { thinking: '', text: '' };
    read(answer.choices[0]?.message, got);
    expect(got.thinking).toBe('The user is [REDACTED:email], so I will greet her.');
    expect(got.text).toBe('Hello! I will write to [REDACTED:email] today.');
    expect(JSON.stringify(answer)).not.toContain('@example');
  });

  it('passes the chunks through as Mistral wrote them when no stage changes them', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['Hel', 'lo!'], thinking: ['Just ', 'greet.'] });
    const answer = await open.client.chat.completions.create({ model: 'mistral/magistral-medium-latest', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]?.message.content).toEqual([
      { type: 'thinking', thinking: [{ type: 'text', text: 'Just greet.' }] },
      { type: 'text', text: 'Hello!' },
    ]);
    upstream.enqueue({ kind: 'reply', pieces: ['Hel', 'lo!'], thinking: ['Just ', 'greet.'] });
    const stream = await open.client.chat.completions.create({ model: 'mistral/magistral-medium-latest', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const contents: unknown[] = [];
    for await (const part of stream) contents.push(part.choices[0]?.delta.content);
    expect(contents).toEqual(['', [{ type: 'thinking', thinking: [{ type: 'text', text: 'Just ' }] }], [{ type: 'thinking', thinking: [{ type: 'text', text: 'greet.' }] }], [{ type: 'text', text: 'Hel' }], [{ type: 'text', text: 'lo!' }], '']);
  });

  it('gives an Anthropic client the thinking as a thinking block and the text as text block, redacted', async () => {
    const client = new Anthropic({ baseURL: `${guarded.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    upstream.enqueue({ kind: 'reply', pieces: REPLY, thinking: THINKING });
    const message = await client.messages.create({ model: 'mistral/magistral-medium-latest', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]).toMatchObject({ thinking: 'The user is [REDACTED:email], so I will greet her.' });
    expect(message.content[1]).toMatchObject({ text: 'Hello! I will write to [REDACTED:email] today.' });
    upstream.enqueue({ kind: 'reply', pieces: REPLY, thinking: THINKING });
    const streamed = await client.messages.stream({ model: 'mistral/magistral-medium-latest', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(streamed.content.map((block) => (block.type === 'thinking' ? block.thinking : block.type === 'text' ? block.text : block.type))).toEqual([
      'The user is [REDACTED:email], so I will greet her.',
      'Hello! I will write to [REDACTED:email] today.',
    ]);
  });
});

describe('a conversation handed back to Mistral with the reasoning other answers carried', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
    tg = await startGateway({
      providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } },
      guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  it('sends an assistant turn’s reasoning_content as Mistral’s thinking chunk, ahead of its text', async () => {
    // A redacted answer comes back with reasoning_content and a string content; an agent appends it as it came.
    upstream.enqueue({ kind: 'reply', pieces: REPLY, thinking: THINKING });
    const first = await tg.client.chat.completions.create({ model: 'mistral/magistral-medium-latest', messages: [{ role: 'user', content: 'hi' }] });
    const turn = first.choices[0]!.message;
    expect(turn).toHaveProperty('reasoning_content');
    upstream.enqueue({ kind: 'reply', pieces: ['Done.'], thinking: ['Fine.'] });
    const second = await tg.client.chat.completions.create({ model: 'mistral/magistral-medium-latest', messages: [{ role: 'user', content: 'hi' }, turn, { role: 'user', content: 'thanks' }] });
    const got: Read = { thinking: '', text: '' };
    read(second.choices[0]?.message, got);
    expect(got.text).toBe('Done.');
    const sent = upstream.calls.at(-1)?.body.messages[1] as Record<string, unknown>;
    expect(sent).not.toHaveProperty('reasoning_content');
    expect(sent.content).toEqual([
      { type: 'thinking', thinking: [{ type: 'text', text: 'The user is [REDACTED:email], so I will greet her.' }] },
      { type: 'text', text: 'Hello! I will write to [REDACTED:email] today.' },
    ]);
  });
});
