import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A custom (freeform) tool's call carries its input as text in `custom.input`, not JSON in `function.arguments`
// (Chat Completions: `{type: "custom", custom: {name, input}}`, streamed as pieces of `custom.input`). Output rules
// read it as they read a function call's arguments: a secret the model writes into a patch or a shell command is
// redacted, or the call withheld.

const KEY = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
const chunk = (delta: unknown, finish: string | null = null) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-5', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
const sse = (events: readonly string[]) => `${events.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;
const tools = [{ type: 'custom' as const, custom: { name: 'shell', description: 'Runs a shell command.' } }];

describe('output rules and custom tool calls', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(openAIConfig(upstream.url, { guardrails: { rules: [{ name: 'secrets', kind: 'secret', action: 'redact', applies_to: 'output' }] } }));
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  it('redacts a secret in a whole answer’s custom tool input', async () => {
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'c2',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-5',
        choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'custom', custom: { name: 'shell', input: `export GITHUB_TOKEN=${KEY}` } }] }, finish_reason: 'tool_calls' }],
        usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
      }),
    });
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-5', tools, messages: [{ role: 'user', content: 'set my token' }] });
    const call = answer.choices[0]?.message.tool_calls?.[0] as { type: string; custom?: { name: string; input: string } } | undefined;
    expect(call?.type).toBe('custom');
    expect(call?.custom).toEqual({ name: 'shell', input: 'export GITHUB_TOKEN=[REDACTED:secret]' });
  });

  it('redacts a secret split across a streamed custom tool input', async () => {
    const pieces = ['export GITHUB_TOKEN=', KEY.slice(0, 12), KEY.slice(12), ' && gh auth status'];
    const events = [
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_2', type: 'custom', custom: { name: 'shell', input: '' } }] }),
      ...pieces.map((piece) => chunk({ tool_calls: [{ index: 0, custom: { input: piece } }] })),
      chunk({}, 'tool_calls'),
    ];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-5', tools, stream: true, messages: [{ role: 'user', content: 'set my token' }] });
    let input = '';
    let name = '';
    for await (const part of stream) {
      for (const call of (part.choices[0]?.delta.tool_calls ?? []) as Array<{ custom?: { name?: string; input?: string } }>) {
        input += call.custom?.input ?? '';
        name += call.custom?.name ?? '';
      }
    }
    expect(name).toBe('shell');
    expect(input).toBe('export GITHUB_TOKEN=[REDACTED:secret] && gh auth status');
  });
});

// Input rules read a custom tool call's input in the conversation's history too: a secret the model wrote into a
// command earlier (or the client put there) is redacted before the history goes to the provider again, or blocks.
describe('input rules and custom tool calls in the history', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(openAIConfig(upstream.url, { guardrails: { rules: [
      { name: 'secrets', kind: 'secret', action: 'redact', applies_to: 'input' },
      { name: 'no-rm', kind: 'regex', patterns: ['rm -rf /'], action: 'block', applies_to: 'input' },
    ] } }));
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  const history = (input: string) => [
    { role: 'user' as const, content: 'set my token' },
    { role: 'assistant' as const, content: null, tool_calls: [{ id: 'call_1', type: 'custom' as const, custom: { name: 'shell', input } }] },
    { role: 'tool' as const, tool_call_id: 'call_1', content: 'done' },
  ];

  it('redacts a secret in an earlier custom tool call’s input before the provider sees it', async () => {
    upstream.calls.length = 0;
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-5', tools, messages: history(`export GITHUB_TOKEN=${KEY}`) });
    expect(answer.choices[0]?.message.role).toBe('assistant');
    const sent = upstream.calls[0]?.body as { messages: Array<{ tool_calls?: Array<{ type: string; id: string; custom: { name: string; input: string } }> }> };
    expect(JSON.stringify(sent)).not.toContain(KEY);
    expect(sent.messages[1]?.tool_calls).toEqual([{ id: 'call_1', type: 'custom', custom: { name: 'shell', input: 'export GITHUB_TOKEN=[REDACTED:secret]' } }]);
  });

  it('blocks a request whose history holds a blocked text in a custom tool call’s input, naming where', async () => {
    upstream.calls.length = 0;
    const failure = await tg.client.chat.completions.create({ model: 'openai/gpt-5', tools, messages: history('rm -rf / --no-preserve-root') }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ status: 400 });
    expect((failure as { error?: { param?: string } }).error?.param).toBe('messages[1].tool_calls[0].custom.input');
    expect(upstream.calls).toHaveLength(0);
  });
});
