import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An OpenAI client of an OpenAI-format upstream gets the upstream's own bytes (its stream events, its whole
// answer), with only the model name changed to the one the client sent: fields tollgate does not know, number
// spellings and escapes arrive as the provider wrote them. A stage that changes chunks (a guardrail redaction)
// still changes every one.

/**
 * A stream as OpenAI writes it, with what a re-serialisation would change: `\u00e9` and `\/` escapes, a number
 * written `-2.0` and one written `1.50e-5`, key order, fields tollgate does not read (system_fingerprint,
 * service_tier, obfuscation, logprobs with bytes, usage details), and one event spread over two `data:` lines.
 */
const UPSTREAM_EVENTS = [
  '{"id":"chatcmpl-raw1","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"obfuscation":"Xy3"}',
  '{"id":"chatcmpl-raw1","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":"caf\\u00e9 \\/ \\"model\\":\\"x\\""},"logprobs":{"content":[{"token":"caf","logprob":-2.0,"bytes":[99,97,102],"top_logprobs":[]}],"refusal":null},"finish_reason":null}],"obfuscation":"a1"}',
  '{"id":"chatcmpl-raw1","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{},"logprobs":{"content":[],"refusal":null},"finish_reason":"stop"}],"x_score":1.50e-5}',
  '{"id":"chatcmpl-raw1","object":"chat.completion.chunk","created":1732700000,\n"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}',
];

function sseBody(events: readonly string[]): string {
  return `${events.map((data) => `data: ${data.replaceAll('\n', '\ndata: ')}\n\n`).join('')}data: [DONE]\n\n`;
}

/** The `data:` payloads of an SSE body, multi-line data joined with \n as the SSE standard says. */
function dataOf(body: string): string[] {
  return body
    .split('\n\n')
    .filter((frame) => frame.length > 0)
    .map((frame) =>
      frame
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice('data: '.length))
        .join('\n'),
    );
}

async function streamRaw(tg: RunningGateway, model: string): Promise<string> {
  const res = await fetch(`${tg.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(200);
  return res.text();
}

let upstream: ScriptedUpstream;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
});
afterAll(async () => {
  await upstream?.close();
});
afterEach(() => upstream.reset());

const providers = () => ({
  openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' },
  // The same upstream under a server type whose models are listed, so a client may send the bare dated name.
  lab: { type: 'vllm', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', models: ['gpt-4o-mini-2024-07-18'] },
});

describe('an OpenAI-format upstream stream', () => {
  let tg: RunningGateway;
  beforeAll(async () => {
    tg = await startGateway({ providers: providers() });
  });
  afterAll(() => tg?.stop());

  it('reaches the client byte for byte, only the model name changed to the one the client sent', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody(UPSTREAM_EVENTS) });
    const completed: Array<GatewayEvents['request.completed']> = [];
    const stop = tg.gateway.bus.on('request.completed', (event) => completed.push(event));
    const body = await streamRaw(tg, 'openai/gpt-4o-mini');
    stop();
    const expected = UPSTREAM_EVENTS.map((data) => data.replace('"model":"gpt-4o-mini-2024-07-18"', '"model":"openai/gpt-4o-mini"'));
    expect(dataOf(body)).toEqual([...expected, '[DONE]']);
    // The event the upstream spread over two lines goes out over two lines again.
    expect(body).toContain('"created":1732700000,\ndata: "model":"openai/gpt-4o-mini"');
    // The usage the upstream reported is still what tollgate counted.
    expect(completed).toHaveLength(1);
    expect(completed[0]?.usage).toMatchObject({ input_tokens: 9, output_tokens: 3 });
  });

  it('is unchanged entirely when the client sent the upstream model name itself', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody(UPSTREAM_EVENTS) });
    const body = await streamRaw(tg, 'gpt-4o-mini-2024-07-18');
    expect(body).toBe(sseBody(UPSTREAM_EVENTS));
  });

  it('is rendered from the parsed chunk when an event has no model to show the client’s name in', async () => {
    const events = ['{"id":"c2","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"content":"caf\\u00e9"},"finish_reason":"stop"}]}'];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody(events) });
    const body = await streamRaw(tg, 'openai/gpt-4o-mini');
    expect(dataOf(body)).toEqual(['{"id":"c2","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"content":"café"},"finish_reason":"stop"}],"model":"openai/gpt-4o-mini"}', '[DONE]']);
  });

  it('reaches an OpenAI SDK client whole, chunk for chunk', async () => {
    upstream.enqueue({ kind: 'reply', pieces: Array.from({ length: 20 }, (_, i) => `w${i} `) });
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const texts: string[] = [];
    for await (const chunk of stream) {
      expect(chunk.model).toBe('openai/gpt-4o-mini');
      const text = chunk.choices[0]?.delta.content;
      if (text) texts.push(text);
    }
    expect(texts).toEqual(Array.from({ length: 20 }, (_, i) => `w${i} `));
  });
});

describe('an OpenAI-format upstream answer, not streamed', () => {
  let tg: RunningGateway;
  beforeAll(async () => {
    tg = await startGateway({ providers: providers() });
  });
  afterAll(() => tg?.stop());

  const ANSWER =
    '{\n  "id": "chatcmpl-raw2",\n  "object": "chat.completion",\n  "created": 1732700000,\n  "model": "gpt-4o-mini-2024-07-18",\n  "choices": [{"index": 0, "message": {"role": "assistant", "content": "caf\\u00e9 \\/ 1.50", "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],\n  "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},\n  "service_tier": "default",\n  "system_fingerprint": "fp_0ba0d124f1",\n  "x_score": -2.0\n}\n';

  it('reaches the client byte for byte, only the model name changed', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: ANSWER });
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(ANSWER.replace('"model": "gpt-4o-mini-2024-07-18"', '"model": "openai/gpt-4o-mini"'));
  });

  it('reads the same through the SDK', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: ANSWER });
    const completion = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion).toMatchObject({ model: 'openai/gpt-4o-mini', system_fingerprint: 'fp_0ba0d124f1', choices: [{ message: { content: 'café / 1.50' } }], usage: { total_tokens: 12 } });
  });
});

describe('an OpenAI-format upstream embeddings answer', () => {
  let tg: RunningGateway;
  beforeAll(async () => {
    tg = await startGateway({ providers: providers() });
  });
  afterAll(() => tg?.stop());

  /** Float vectors as OpenAI writes them (`-0.0061`, `1.50e-5`, `0.0`), key order, fields tollgate does not read. */
  const EMBEDDINGS =
    '{\n  "object": "list",\n  "data": [\n    {\n      "object": "embedding",\n      "index": 0,\n      "embedding": [\n        -0.0061,\n        1.50e-5,\n        0.0\n      ]\n    }\n  ],\n  "model": "text-embedding-3-small",\n  "usage": {\n    "prompt_tokens": 2,\n    "total_tokens": 2\n  },\n  "x_served_by": "caf\\u00e9"\n}\n';

  it.each(['/v1', '/litellm'])('reaches the client byte for byte on %s, only the model name changed', async (prefix) => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: EMBEDDINGS });
    const res = await fetch(`${tg.url}${prefix}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/text-embedding-3-small', input: 'hi', encoding_format: 'float' }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(EMBEDDINGS.replace('"model": "text-embedding-3-small"', '"model": "openai/text-embedding-3-small"'));
  });
});

describe('a stage that changes chunks', () => {
  let tg: RunningGateway;
  beforeAll(async () => {
    tg = await startGateway({ providers: providers(), guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] } });
  });
  afterAll(() => tg?.stop());

  it('still sees and changes every chunk: a guardrail redaction leaves no address in any byte the client gets', async () => {
    const pieces = Array.from({ length: 20 }, (_, i) => `mail user${i}@example.com, `);
    upstream.enqueue({ kind: 'reply', pieces });
    const body = await streamRaw(tg, 'openai/gpt-4o-mini');
    expect(body).not.toMatch(/@example\.com/);
    const text = dataOf(body)
      .filter((data) => data !== '[DONE]')
      .map((data) => JSON.parse(data) as { model: string; choices: Array<{ delta?: { content?: string } }> })
      .map((chunk) => {
        expect(chunk.model).toBe('openai/gpt-4o-mini');
        return chunk.choices[0]?.delta?.content ?? '';
      })
      .join('');
    expect(text).toBe(pieces.map(() => 'mail [REDACTED:email], ').join(''));
  });

  it('passes the upstream’s bytes through where the rule changes nothing, each event once its text is released', async () => {
    // An answer longer than the guard's look-behind (256 characters), one address in its middle: every event but the
    // one with the address arrives as OpenAI wrote it (escapes, unknown fields), once the guard has released its text.
    const event = (delta: string, finish = 'null') =>
      `{"id":"c4","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}],"obfuscation":"z"}`;
    const words = Array.from({ length: 40 }, (_, i) => (i === 20 ? ' mail jane\\u002edoe@example.com' : ` caf\\u00e9 number ${i}`));
    const events = [event('{"role":"assistant","content":"","refusal":null}'), ...words.map((word) => event(`{"content":"${word}"}`)), event('{}', '"stop"')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody(events) });
    const body = await streamRaw(tg, 'openai/gpt-4o-mini');
    expect(body).not.toMatch(/doe@example|u002edoe/);
    const got = dataOf(body).filter((data) => data !== '[DONE]');
    const own = new Set(events.map((data) => data.replace('"model":"gpt-4o-mini"', '"model":"openai/gpt-4o-mini"')));
    // Every event went through untouched, in order, but the one whose text the rule changed.
    expect(got).toHaveLength(events.length);
    const rebuilt = got.filter((data) => !own.has(data));
    expect(rebuilt).toHaveLength(1);
    expect(rebuilt[0]).toContain('mail [REDACTED:email]');
    expect(got.indexOf(rebuilt[0]!)).toBe(21);
    const text = got.map((data) => (JSON.parse(data) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(words.map((word) => JSON.parse(`"${word.replace(' mail jane\\u002edoe@example.com', ' mail [REDACTED:email]')}"`) as string).join(''));
  });

  it('changes the raw upstream bytes too', async () => {
    const events = [
      '{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"write to jane\\u002edoe@example.com"},"finish_reason":null}],"obfuscation":"q"}',
      '{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
    ];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody(events) });
    const body = await streamRaw(tg, 'openai/gpt-4o-mini');
    expect(body).not.toMatch(/doe@example|u002edoe/);
    expect(body).toContain('[REDACTED:email]');
  });
});

describe('an Azure upstream stream (OpenAI format, Azure AI Foundry paths)', () => {
  // Azure speaks OpenAI's format: its events pass through too. A keyless scripted OpenAI server stands in for the
  // Foundry endpoint (`<base>/chat/completions?api-version=`), so the stream can be given byte by byte.
  let foundry: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    foundry = await startOpenAIUpstream({ apiKey: null });
    tg = await startGateway({ providers: { 'azure-ai': { base_url: `${foundry.url}/v1`, api_key: 'azure-key' } } });
  });
  afterAll(async () => {
    await tg?.stop();
    await foundry?.close();
  });

  it('reaches the client as Azure wrote it, without the prompt-filter event, only the model name changed', async () => {
    const filter = '{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}';
    foundry.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody([filter, ...UPSTREAM_EVENTS]) });
    const body = await streamRaw(tg, 'azure-ai/gpt-4o-mini');
    expect(foundry.calls[0]?.path).toBe('/v1/chat/completions');
    expect(foundry.calls[0]?.headers['api-key']).toBe('azure-key');
    const expected = UPSTREAM_EVENTS.map((data) => data.replace('"model":"gpt-4o-mini-2024-07-18"', '"model":"azure-ai/gpt-4o-mini"'));
    expect(dataOf(body)).toEqual([...expected, '[DONE]']);
  });
});
