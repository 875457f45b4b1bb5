// Output guardrails on OpenAI Responses API answers passed through (client.responses.stream / .create -> tollgate
// /v1/responses -> OpenAI's own Responses API, scripted). The upstream's answer is guarded in its own form: a rule's
// redaction rewrites the text events (deltas, .done, the parts' and items' .done, the final Response) and a block ends
// the stream as OpenAI's content filter does (response.incomplete, incomplete_details.reason content_filter), while
// everything the rules do not read reaches the client as the upstream wrote it: reasoning with its encrypted content
// (sent back on the next turn), built-in tools' items (web_search_call), annotations, sequence numbers.
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream } from '../upstream/azure-upstream.js';
import { encryptedReasoning, SEARCH_SOURCE } from '../upstream/openai-responses-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const MODEL = 'openai/gpt-5';
const UPSTREAM_MODEL = 'gpt-5';

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    guardrails: {
      rules: [
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' },
        { name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'output' },
      ],
    },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

function lastSent(): (typeof upstream.responses)[number] {
  const sent = upstream.responses.at(-1);
  if (!sent) throw new Error('the upstream sent no response');
  return sent;
}

/** The request log entry of one request, once written. */
async function logOf(id: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as Record<string, any>;
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A turn that reasons (its encrypted content asked for) and searches the web before it answers. */
const searching = {
  model: MODEL,
  input: 'what is the weather',
  tools: [{ type: 'web_search' as const }],
  reasoning: { effort: 'low' as const },
  include: ['reasoning.encrypted_content' as const],
  store: false,
};

const EMAIL_PIECES = ['Write to jane', '.doe@exa', 'mple.com', ' soon.'];
const CARD_PIECES = ['Safe start. Your card is 4111 11', '11 1111 ', '1111, keep it.', ' More after.'];

/** A stream's frames as [event name, raw data]. */
function framesOf(text: string): Array<[string, string]> {
  return text
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const [name, data] = frame.split('\ndata: ');
      return [(name ?? '').replace(/^event: /, ''), data ?? ''];
    });
}

/** The events whose text the rules read and may rewrite; every other event must come through as written. */
const TEXT_EVENTS = /^response\.(output_text\.|content_part\.done|output_item\.done|completed|incomplete)/;

describe('a streamed answer with an output rule on', () => {
  it('redacts an email split across deltas, keeping the encrypted reasoning, the web search and its citation', async () => {
    upstream.enqueue({ kind: 'reply', pieces: EMAIL_PIECES });
    const stream = client.responses.stream(searching);
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    const sent = lastSent().response;
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('Write to [REDACTED:email] soon.');
    expect(deltas.join('')).toBe('Write to [REDACTED:email] soon.');
    expect(deltas.some((delta) => delta.includes('jane') || delta.includes('exa'))).toBe(false);
    // What the rules do not read is the upstream's own: the reasoning with its encrypted content, the search call.
    expect(final.output[0]).toEqual(sent.output[0]);
    expect(final.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: encryptedReasoning(sent.output[0].id) });
    expect(final.output[1]).toEqual(sent.output[1]);
    expect(final.output[1]).toMatchObject({ type: 'web_search_call', status: 'completed' });
    expect(final.output[2]).toMatchObject({ type: 'message', content: [{ type: 'output_text', annotations: [{ type: 'url_citation', ...SEARCH_SOURCE }] }] });
    expect(final.usage).toEqual(sent.usage);
    expect(JSON.stringify(final)).not.toContain('jane.doe');

    // The next turn sends the reasoning back: OpenAI verifies its encrypted content, so it must be the upstream's own.
    const next = await client.responses.create({ ...searching, input: [...(final.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'and tomorrow?' }] });
    expect(next.status).toBe('completed');
  });

  it('sends every event the rules do not read byte for byte, in the upstream’s numbering', async () => {
    upstream.enqueue({ kind: 'reply', pieces: EMAIL_PIECES });
    const response = await fetch(`${tg.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer any' },
      body: JSON.stringify({ ...searching, stream: true }),
    });
    const got = framesOf(await response.text());
    // The upstream's frames as the client is to get them: each Response showing the client's model.
    const written = framesOf((lastSent().frames as string[]).join('').replaceAll(`"model":"${UPSTREAM_MODEL}-2025-08-07"`, `"model":"${MODEL}"`));
    expect(got.map(([name]) => name)).toEqual(written.map(([name]) => name));
    got.forEach(([name, data], index) => {
      expect(JSON.parse(data).sequence_number).toBe(index);
      if (!TEXT_EVENTS.test(name)) expect(data).toBe(written[index]?.[1]);
    });
    const done = got.find(([name]) => name === 'response.output_text.done');
    expect(JSON.parse(done?.[1] ?? '{}').text).toBe('Write to [REDACTED:email] soon.');
    const item = got.filter(([name]) => name === 'response.output_item.done').at(-1);
    expect(JSON.parse(item?.[1] ?? '{}').item.content[0].text).toBe('Write to [REDACTED:email] soon.');
  });

  it('redacts a function call’s arguments, streamed and in the items that repeat them', async () => {
    const weather: OpenAI.Responses.FunctionTool = { type: 'function', name: 'weather', parameters: { type: 'object', properties: { query: { type: 'string' } } }, strict: false };
    const stream = client.responses.stream({ model: MODEL, input: 'use the tool to mail jane.doe@example.com', tools: [weather] });
    const final = await stream.finalResponse();
    const call = final.output.find((item) => item.type === 'function_call');
    expect(JSON.parse(call?.type === 'function_call' ? call.arguments : '{}')).toEqual({ query: 'use the tool to mail [REDACTED:email]', units: 'metric' });
    expect(JSON.stringify(final)).not.toContain('jane.doe');
  });

  it('checks a custom tool’s input (Codex’s apply_patch), which only the Responses API carries, and reports it', async () => {
    const patch: OpenAI.Responses.CustomTool = { type: 'custom', name: 'apply_patch' };
    const input = 'use the tool: mail jane.doe@example.com and card 4111 1111 1111 1111 done';
    const redacting = await client.responses.stream({ model: MODEL, input: input.replace(/ and card.*/, ''), tools: [patch] }).finalResponse();
    expect(redacting.output[0]).toMatchObject({ type: 'custom_tool_call', input: 'use the tool: mail [REDACTED:email]' });
    const whole = await client.responses.create({ model: MODEL, input: input.replace(/ and card.*/, ''), tools: [patch] });
    expect(whole.output[0]).toMatchObject({ type: 'custom_tool_call', input: 'use the tool: mail [REDACTED:email]' });
    const { data: stream, response } = await client.responses.create({ model: MODEL, input, tools: [patch], stream: true }).withResponse();
    const events: Array<{ type: string; response?: OpenAI.Responses.Response }> = [];
    for await (const event of stream) events.push(event);
    expect(events.at(-1)?.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(JSON.stringify(events)).not.toMatch(/4111|jane\.doe/);
    // What only this guard sees is reported like the rest: the request log names the rules that acted.
    expect(await logOf(response.headers.get('x-request-id') ?? '')).toMatchObject({ guardrails: ['output:cards:blocked'] });
  });

  it('a blocking rule ends the stream as OpenAI’s content filter does, nothing of the match sent', async () => {
    upstream.enqueue({ kind: 'reply', pieces: CARD_PIECES });
    const stream = client.responses.stream(searching);
    const events: Array<{ type: string; sequence_number: number }> = [];
    stream.on('event', (event) => events.push(event));
    const final = await stream.finalResponse();
    const sent = lastSent().response;
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details).toEqual({ reason: 'content_filter' });
    expect(events.at(-1)?.type).toBe('response.incomplete');
    expect(JSON.stringify(events)).not.toMatch(/4111|1111/);
    expect(final.output_text).toBe('Safe start. Your card is ');
    expect(final.output[0]).toEqual(sent.output[0]);
    expect(final.output[1]).toEqual(sent.output[1]);
    expect(final.output[2]).toMatchObject({ type: 'message', status: 'incomplete' });
    // The tokens generated were paid for: the upstream's usage stays.
    expect(final.usage).toEqual(sent.usage);
    const numbers = events.map((event) => event.sequence_number);
    expect(numbers).toEqual(numbers.map((_, index) => index));
  });
});

describe('a whole answer with an output rule on', () => {
  it('is the upstream’s Response with the email redacted, reasoning, search and citation kept', async () => {
    upstream.enqueue({ kind: 'reply', pieces: EMAIL_PIECES });
    const answer = await client.responses.create(searching);
    const sent = lastSent().response;
    expect(answer.output_text).toBe('Write to [REDACTED:email] soon.');
    const message = structuredClone(sent.output[2]);
    message.content[0].text = 'Write to [REDACTED:email] soon.';
    const { output_text: _added, ...got } = answer as unknown as Record<string, unknown>;
    expect(got).toEqual({ ...sent, model: MODEL, output: [sent.output[0], sent.output[1], message] });
  });

  it('a blocking rule answers an incomplete Response (content_filter) with the items before it and the usage', async () => {
    upstream.enqueue({ kind: 'reply', pieces: CARD_PIECES });
    const answer = await client.responses.create(searching);
    const sent = lastSent().response;
    expect(answer.status).toBe('incomplete');
    expect(answer.incomplete_details).toEqual({ reason: 'content_filter' });
    expect(answer.output).toEqual([sent.output[0], sent.output[1]]);
    expect(answer.usage).toEqual(sent.usage);
    expect(JSON.stringify(answer)).not.toMatch(/4111/);
  });

  it('an answer nothing was found in is the upstream’s bytes but for the model', async () => {
    const response = await fetch(`${tg.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer any' },
      body: JSON.stringify({ ...searching, input: 'nothing personal' }),
    });
    expect(await response.text()).toBe(JSON.stringify({ ...lastSent().response, model: MODEL }));
  });
});

describe('a JSON schema rule on a Responses answer with a json_schema text format', () => {
  let json: RunningGateway;
  beforeAll(async () => {
    json = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      guardrails: { rules: [{ name: 'json', kind: 'json_schema', action: 'block' }] },
    });
  });
  afterAll(async () => json?.stop());

  const structured = {
    ...searching,
    tools: undefined,
    text: { format: { type: 'json_schema' as const, name: 'city', strict: true, schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } } },
  };
  const post = (body: Record<string, unknown>) =>
    fetch(`${json.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer any' }, body: JSON.stringify(body) });
  const shown = (text: string) => text.replaceAll(`"model":"${UPSTREAM_MODEL}-2025-08-07"`, `"model":"${MODEL}"`);

  it('passes valid JSON through as the upstream wrote it, whole and streamed, encrypted reasoning included', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['{"city":', '"Paris"}'] });
    const whole = await post(structured);
    expect(await whole.text()).toBe(JSON.stringify({ ...lastSent().response, model: MODEL }));
    upstream.enqueue({ kind: 'reply', pieces: ['{"city":', '"Paris"}'] });
    const streamed = await post({ ...structured, stream: true });
    expect(await streamed.text()).toBe(shown((lastSent().frames as string[]).join('')));
  });

  it('ends JSON the schema refuses as OpenAI’s content filter does, the reasoning kept', async () => {
    upstream.enqueue({ kind: 'reply', pieces: ['not ', 'json'] });
    const whole = await json.client.responses.create(structured);
    const sent = lastSent().response;
    expect(whole).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(whole.output).toEqual([sent.output[0]]);
    upstream.enqueue({ kind: 'reply', pieces: ['not ', 'json'] });
    const events: Array<{ type: string }> = [];
    const stream = json.client.responses.stream(structured);
    stream.on('event', (event) => events.push(event));
    const final = await stream.finalResponse();
    expect(events.at(-1)?.type).toBe('response.incomplete');
    expect(final).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(final.output[0]).toEqual(lastSent().response.output[0]);
  });
});

describe('an output moderation rule on a whole Responses answer', () => {
  it('withholds an answer the classifier calls unsafe in the upstream’s own Response: its id and reasoning kept', async () => {
    const moderated = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      guardrails: { rules: [{ name: 'moderated', kind: 'moderation', action: 'block', model: 'openai/moderator', applies_to: 'output', on_error: 'allow', timeout_ms: 3_000 }] },
    });
    try {
      upstream.enqueue({ kind: 'reply', pieces: ['something ', 'violent'] }, { kind: 'reply', pieces: ['UNSAFE: violence'] });
      const answer = await moderated.client.responses.create({ ...searching, tools: undefined });
      const sent = upstream.responses[0]?.response as Record<string, any>;
      expect(answer).toMatchObject({ id: sent.id, status: 'incomplete', incomplete_details: { reason: 'content_filter' }, usage: sent.usage });
      expect(answer.output).toEqual([sent.output[0]]);
      expect(answer.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA/) });
    } finally {
      await moderated.stop();
    }
  });
});

describe('Azure OpenAI’s v1 API (the Responses API passed through) with an output rule on', () => {
  it('redacts in its own events and Response, the encrypted reasoning kept', async () => {
    const azure = await startAzureUpstream({ apiKey: 'azure-key', deployments: { 'gpt-5-prod': 'gpt-5' } });
    const guarded = await startGateway({
      providers: { 'azure-v1': { type: 'azure', base_url: `${azure.url}/openai/v1/`, api_key: 'azure-key' } },
      guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] },
    });
    try {
      const body = { model: 'azure-v1/gpt-5-prod', input: 'mail jane.doe@example.com', reasoning: { effort: 'low' as const }, include: ['reasoning.encrypted_content' as const], store: false };
      const whole = await guarded.client.responses.create(body);
      const streamed = await guarded.client.responses.stream(body).finalResponse();
      for (const answer of [whole, streamed]) {
        expect(answer.output_text).toBe('echo: mail [REDACTED:email]');
        expect(answer.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA/) });
      }
      expect(azure.calls.at(-1)?.path).toBe('/openai/v1/responses');
    } finally {
      await guarded.stop();
      await azure.close();
    }
  });
});

describe('output_block: error on a Responses stream passed through', () => {
  it('ends the stream with error and response.failed in the upstream’s numbering, nothing of the match sent', async () => {
    const failing = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'output' }], output_block: 'error' },
    });
    try {
      upstream.enqueue({ kind: 'reply', pieces: CARD_PIECES });
      const response = await fetch(`${failing.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer any' },
        body: JSON.stringify({ ...searching, stream: true }),
      });
      const frames = framesOf(await response.text());
      expect(frames.slice(-2).map(([name]) => name)).toEqual(['error', 'response.failed']);
      expect(frames.map(([, data]) => JSON.parse(data).sequence_number)).toEqual(frames.map((_, index) => index));
      expect(frames.map(([, data]) => data).join('')).not.toMatch(/4111|1111/);
      expect(JSON.parse(frames.at(-2)?.[1] ?? '{}')).toMatchObject({ code: 'guardrail_blocked' });
      // The SDK takes it as the failure it is.
      upstream.enqueue({ kind: 'reply', pieces: CARD_PIECES });
      await expect(failing.client.responses.stream(searching).finalResponse()).rejects.toThrow(/guardrail 'cards'/);
    } finally {
      await failing.stop();
    }
  });
});
