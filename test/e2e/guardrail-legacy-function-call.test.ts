import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A legacy function call (the `functions` parameter, which OpenAI still serves and older agents still send) carries
// its arguments in `function_call`, not `tool_calls`: output rules read them all the same, whole and streamed.

const chunk = (delta: string, finish = 'null') =>
  `{"id":"f1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]}`;
const sse = (events: readonly string[]) => `${events.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;
const functions = [{ name: 'send_mail', parameters: { type: 'object', properties: { to: { type: 'string' } } } }];

describe('output rules and a legacy function call', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
    tg = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
      guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  it('redacts streamed arguments split across events', async () => {
    const args = ['{"to":"', 'jane.d', 'oe@exam', 'ple.com', '"}'];
    const events = [
      chunk('{"role":"assistant","content":null,"function_call":{"name":"send_mail","arguments":""}}'),
      ...args.map((piece) => chunk(`{"function_call":{"arguments":${JSON.stringify(piece)}}}`)),
      chunk('{}', '"function_call"'),
    ];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, functions, messages: [{ role: 'user', content: 'mail jane' }] });
    let name = '';
    let got = '';
    let finish: string | null = null;
    for await (const part of stream) {
      const choice = part.choices[0];
      name += choice?.delta.function_call?.name ?? '';
      got += choice?.delta.function_call?.arguments ?? '';
      finish = choice?.finish_reason ?? finish;
    }
    expect(name).toBe('send_mail');
    expect(got).toBe('{"to":"[REDACTED:email]"}');
    expect(finish).toBe('function_call');
  });

  it('redacts a whole answer’s arguments', async () => {
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'f2', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: null, function_call: { name: 'send_mail', arguments: '{"to":"jane.doe@example.com"}' } }, finish_reason: 'function_call' }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
    });
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', functions, messages: [{ role: 'user', content: 'mail jane' }] });
    expect(answer.choices[0]?.message.function_call).toEqual({ name: 'send_mail', arguments: '{"to":"[REDACTED:email]"}' });
  });
});
