import { lastValueFrom, of, Subject, toArray, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import cannedAnswer from '../../plugins/examples/canned-answer.js';
import redactWord from '../../plugins/examples/redact-word.js';
import teamSystemPrompt from '../../plugins/examples/team-system-prompt.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type RuntimeConfig } from '../../src/core/config.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, PluginDefinition, RequestContext, ResponseEvent, Services, Stage, TeamRecord, VirtualKeyRecord } from '../../src/index.js';
import { createRequestContext, type ContextInit } from '../../src/core/context.js';
import { Pipeline } from '../../src/pipeline/runner.js';
import { runnerServices } from '../helpers/pipeline-services.js';

const config: RuntimeConfig = resolveRuntimeConfig({ api: {}, file: {} }, {}, 1);
const deps = runnerServices();

/** The examples require no service; asking for one is a test failure. */
const noServices: Services = {
  get: (key) => {
    throw new Error(`unexpected service ${key.id}`);
  },
  has: () => false,
};

/** The plugin's stage for this config version, with its options validated by its own schema. */
function stageOf<O>(plugin: PluginDefinition<O>, options: unknown): Stage | null {
  const parsed = plugin.options ? plugin.options.parse(options) : (options as O);
  return plugin.create(parsed, config, noServices);
}

/**
 * A pipeline of the plugin's stage and a fake innermost stage standing for `next()` (the provider): it records
 * what reached it and answers with what the test hands it.
 */
function pipelineOf(stage: Stage, upstream: (ctx: RequestContext) => Observable<ResponseEvent>) {
  const reached: { messages: unknown[]; native: unknown }[] = [];
  const plugin: PluginDefinition = { name: stage.name, create: () => stage };
  const provider: PluginDefinition = {
    name: 'provider',
    create: () => ({
      name: 'provider',
      run: (ctx: RequestContext) => {
        if (ctx.operation !== 'chat') throw new Error('these examples are chat requests');
        reached.push({ messages: structuredClone(ctx.request.messages), native: structuredClone(ctx.native?.body ?? null) });
        return upstream(ctx);
      },
    }),
  };
  const pipeline = new Pipeline({ name: 'unit', stages: [stage.name, 'provider'] }, new Map([plugin, provider].map((f) => [f.name, f])), config, deps);
  return { pipeline, reached };
}

function context(request: Partial<ChatCompletionRequest> = {}, init: Partial<Omit<ContextInit, 'operation' | 'request'>> = {}): RequestContext {
  return createRequestContext({ dialect: 'openai', ...init, config, request: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...request } });
}

function withTeam(ctx: RequestContext, team: { id: string; name: string } | null): RequestContext {
  ctx.identity = { key: { id: 'key-1', name: 'k' } as VirtualKeyRecord, team: team as TeamRecord | null };
  return ctx;
}

function completion(content: string | null, extra: Record<string, unknown> = {}): ChatCompletion {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    ...extra,
  };
}

function chunk(choices: unknown[], extra: Record<string, unknown> = {}): ChatCompletionChunk {
  return { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices, ...extra };
}

const delta = (content: string | undefined, index = 0, finish: string | null = null) => ({
  index,
  delta: content === undefined ? {} : { content },
  logprobs: null,
  finish_reason: finish,
});

/** A stream as the call stage emits it: role chunk, the pieces, the finish chunk. */
function streamOf(pieces: readonly string[]): ResponseEvent[] {
  return [
    { kind: 'chunk', chunk: chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]) },
    ...pieces.map((piece): ResponseEvent => ({ kind: 'chunk', chunk: chunk([delta(piece)]) })),
    { kind: 'chunk', chunk: chunk([delta(undefined, 0, 'stop')]) },
  ];
}

function chunksOf(events: ResponseEvent[]): ChatCompletionChunk[] {
  return events.map((event) => {
    if (event.kind !== 'chunk') throw new Error(`expected chunks, got ${event.kind}`);
    return event.chunk;
  });
}

/** The text each choice index received, joined. */
function streamedText(events: ResponseEvent[], index = 0): string {
  let text = '';
  for (const c of chunksOf(events)) {
    for (const choice of c.choices as { index: number; delta: { content?: string | null } }[]) {
      if (choice.index === index && typeof choice.delta.content === 'string') text += choice.delta.content;
    }
  }
  return text;
}

function messageText(event: ResponseEvent | undefined, index = 0): unknown {
  if (event?.kind !== 'completion') throw new Error('expected a completion');
  return (event.completion.choices[index] as { message: { content: unknown } }).message.content;
}

async function run(pipeline: Pipeline, ctx: RequestContext): Promise<ResponseEvent[]> {
  return lastValueFrom(pipeline.execute(ctx).pipe(toArray()));
}

describe('team-system-prompt', () => {
  const options = { prompts: { research: 'You help the research team.', 'team-ops': 'You help operations.' }, default: 'You are helpful.' };

  it('prepends the prompt of the caller team, by name, before the provider sees the request', async () => {
    const { pipeline, reached } = pipelineOf(stageOf(teamSystemPrompt, options)!, () => of({ kind: 'completion', completion: completion('ok') }));
    const ctx = withTeam(context({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] }), { id: 'team-1', name: 'research' });
    const out = await run(pipeline, ctx);
    expect(messageText(out[0])).toBe('ok');
    expect(reached[0]?.messages).toEqual([
      { role: 'system', content: 'You help the research team.' },
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('finds a team by id, and uses the default for a caller without a listed team or without a team', async () => {
    const { pipeline, reached } = pipelineOf(stageOf(teamSystemPrompt, options)!, () => of({ kind: 'completion', completion: completion('ok') }));
    await run(pipeline, withTeam(context(), { id: 'team-ops', name: 'Operations' }));
    await run(pipeline, withTeam(context(), { id: 'team-9', name: 'sales' }));
    await run(pipeline, withTeam(context(), null));
    await run(pipeline, context());
    expect(reached.map((r) => (r.messages[0] as { content: string }).content)).toEqual(['You help operations.', 'You are helpful.', 'You are helpful.', 'You are helpful.']);
  });

  it('leaves the request alone when no prompt applies, and is no stage at all when nothing is configured', async () => {
    const { pipeline, reached } = pipelineOf(stageOf(teamSystemPrompt, { prompts: { research: 'R' } })!, () => of({ kind: 'completion', completion: completion('ok') }));
    await run(pipeline, withTeam(context(), { id: 't', name: 'sales' }));
    expect(reached[0]?.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(stageOf(teamSystemPrompt, {})).toBeNull();
  });

  it('prepends to the native Anthropic body too, which an Anthropic upstream gets as is', async () => {
    const { pipeline, reached } = pipelineOf(stageOf(teamSystemPrompt, options)!, () => of({ kind: 'completion', completion: completion('ok') }));
    const native = (system: unknown) => ({ format: 'anthropic', body: { model: 'm', max_tokens: 5, messages: [], ...(system === undefined ? {} : { system }) } });
    await run(pipeline, withTeam(context({}, { dialect: 'anthropic', native: native('Be brief.') }), { id: 't', name: 'research' }));
    await run(pipeline, withTeam(context({}, { dialect: 'anthropic', native: native([{ type: 'text', text: 'Be brief.' }]) }), { id: 't', name: 'research' }));
    await run(pipeline, withTeam(context({}, { dialect: 'anthropic', native: native(undefined) }), { id: 't', name: 'research' }));
    expect(reached.map((r) => (r.native as { system: unknown }).system)).toEqual([
      'You help the research team.\n\nBe brief.',
      [{ type: 'text', text: 'You help the research team.' }, { type: 'text', text: 'Be brief.' }],
      'You help the research team.',
    ]);
  });

  it('refuses options of the wrong shape', () => {
    expect(teamSystemPrompt.options!.safeParse({ prompts: { a: 1 } }).success).toBe(false);
    expect(teamSystemPrompt.options!.safeParse({ prompts: {}, extra: true }).success).toBe(false);
    expect(teamSystemPrompt.options!.safeParse({ default: '' }).success).toBe(false);
  });
});

describe('redact-word', () => {
  const stage = stageOf(redactWord, { words: ['password', 'pass', 'hunter2'] })!;

  it('redacts every word wherever the stream splits it, in one or two places', async () => {
    const text = 'My Password: hunter2. pass it on, PASSWORD';
    const expected = 'My [redacted]: [redacted]. [redacted] it on, [redacted]';
    const splits: number[][] = [];
    for (let i = 0; i <= text.length; i++) for (let j = i; j <= text.length; j++) splits.push([i, j]);
    for (const [i, j] of splits) {
      const pieces = [text.slice(0, i), text.slice(i, j), text.slice(j)];
      const { pipeline } = pipelineOf(stage, () => of(...streamOf(pieces)));
      const out = await run(pipeline, context({ stream: true }));
      expect(streamedText(out), `split at ${i}, ${j}`).toBe(expected);
      // One chunk out for one chunk in: the stream is mapped, never gathered.
      expect(out, `split at ${i}, ${j}`).toHaveLength(pieces.length + 2);
    }
  });

  it('holds back at most the longest word minus one characters, so text keeps flowing', async () => {
    const upstream = new Subject<ResponseEvent>();
    const { pipeline } = pipelineOf(stage, () => upstream);
    const out: ResponseEvent[] = [];
    let completed = false;
    pipeline.execute(context({ stream: true })).subscribe({ next: (e) => out.push(e), complete: () => (completed = true) });
    const text = 'abcdefghij'.repeat(50);
    let sent = 0;
    for (let at = 0; at < text.length; at += 7) {
      const piece = text.slice(at, at + 7);
      upstream.next({ kind: 'chunk', chunk: chunk([delta(piece)]) });
      sent += piece.length;
      const received = streamedText(out).length;
      expect(received).toBeGreaterThanOrEqual(sent - ('password'.length - 1));
      expect(out).toHaveLength(at / 7 + 1);
    }
    upstream.next({ kind: 'chunk', chunk: chunk([delta(undefined, 0, 'stop')]) });
    // The finish chunk carries what was held.
    expect(streamedText(out)).toBe(text);
    expect((chunksOf(out).at(-1)?.choices[0] as { finish_reason: string }).finish_reason).toBe('stop');
    upstream.complete();
    expect(completed).toBe(true);
  });

  it('keeps each choice apart and flushes what is held when a stream ends without a finish', async () => {
    const events: ResponseEvent[] = [
      { kind: 'chunk', chunk: chunk([delta('the pa', 0)]) },
      { kind: 'chunk', chunk: chunk([delta('a hun', 1)]) },
      { kind: 'chunk', chunk: chunk([delta('ss', 0)]) },
      { kind: 'chunk', chunk: chunk([delta('ter2 x', 1)]) },
      { kind: 'chunk', chunk: chunk([delta(' pas', 0)]) },
    ];
    const { pipeline } = pipelineOf(stage, () => of(...events));
    const out = await run(pipeline, context({ stream: true, n: 2 }));
    expect(streamedText(out, 0)).toBe('the [redacted] pas');
    expect(streamedText(out, 1)).toBe('a [redacted] x');
    expect(out).toHaveLength(events.length + 1);
    expect(chunksOf(out).at(-1)).toMatchObject({ id: 'chatcmpl-up', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: ' pas' } }, { index: 1, delta: { content: ' x' } }] });
  });

  it('sends what is held before the usage chunk, leaving usage last', async () => {
    const events: ResponseEvent[] = [
      { kind: 'chunk', chunk: chunk([delta('no finish pas')], { usage: null }) },
      { kind: 'chunk', chunk: chunk([], { usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }) },
    ];
    const { pipeline } = pipelineOf(stage, () => of(...events));
    const out = chunksOf(await run(pipeline, context({ stream: true })));
    expect(out.map((c) => c.choices.length)).toEqual([1, 1, 0]);
    // The held tail is the longest word's length minus one: 'ish pas' (7 characters).
    expect(out[0]).toMatchObject({ choices: [{ delta: { content: 'no fin' } }] });
    expect(out[1]).toMatchObject({ choices: [{ delta: { content: 'ish pas' } }], usage: null });
    expect(out[2]?.usage).toEqual({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
  });

  it('redacts whole completions, leaves other fields, and drops the native answer it no longer matches', async () => {
    const { pipeline } = pipelineOf(stage, () =>
      of({ kind: 'completion', completion: completion('hunter2 is the PassWord'), native: { format: 'anthropic', body: { content: [] } } } as ResponseEvent),
    );
    const out = await run(pipeline, context());
    expect(messageText(out[0])).toBe('[redacted] is the [redacted]');
    expect(out[0]).not.toHaveProperty('native');
    expect(out[0]).toMatchObject({ completion: { id: 'chatcmpl-up', usage: { total_tokens: 8 } } });
  });

  it('matches case exactly when asked, and leaves tool calls and empty content alone', async () => {
    const exact = stageOf(redactWord, { words: ['Secret'], case_insensitive: false, replacement: '***' })!;
    const { pipeline } = pipelineOf(exact, () => of(...streamOf(['a Sec', 'ret and a secret'])));
    expect(streamedText(await run(pipeline, context({ stream: true })))).toBe('a *** and a secret');
    const toolCall = chunk([{ index: 0, delta: { content: null, tool_calls: [{ index: 0, function: { arguments: '{"secret":1}' } }] }, finish_reason: null }]);
    const tools = pipelineOf(exact, () => of({ kind: 'chunk', chunk: toolCall } as ResponseEvent));
    expect(chunksOf(await run(tools.pipeline, context({ stream: true })))[0]).toEqual(toolCall);
  });

  it('refuses options without words or with an empty word', () => {
    expect(redactWord.options!.safeParse({ words: [] }).success).toBe(false);
    expect(redactWord.options!.safeParse({ words: [''] }).success).toBe(false);
    expect(redactWord.options!.safeParse({ words: ['x'], case_insensitive: 'yes' }).success).toBe(false);
  });
});

describe('canned-answer', () => {
  const stage = stageOf(cannedAnswer, { answers: [{ pattern: '^\\s*(what are )?your opening hours', text: 'We are open 9 to 5, Monday to Friday.' }, { pattern: 'ping', case_insensitive: false, text: 'pong' }] })!;
  const unexpected = () => of<ResponseEvent>({ kind: 'completion', completion: completion('from the provider') });

  it('answers a matching question itself as a completion, without calling next()', async () => {
    const { pipeline, reached } = pipelineOf(stage, unexpected);
    const ctx = context({ messages: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'What are your opening hours?' }] }, { responseModel: 'hours-bot' });
    const out = await run(pipeline, ctx);
    expect(reached).toHaveLength(0);
    expect(out).toHaveLength(1);
    const answer = out[0] as Extract<ResponseEvent, { kind: 'completion' }>;
    expect(answer.completion).toMatchObject({
      object: 'chat.completion',
      model: 'hours-bot',
      choices: [{ index: 0, message: { role: 'assistant', content: 'We are open 9 to 5, Monday to Friday.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    });
    expect(answer.completion.id).toMatch(/^chatcmpl-[0-9a-f]{30}$/);
    expect(ctx.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('streams the answer as OpenAI would: role, text, finish, then usage when asked', async () => {
    const { pipeline, reached } = pipelineOf(stage, unexpected);
    const ctx = context({ stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: [{ type: 'text', text: 'ping' }] }] });
    const out = chunksOf(await run(pipeline, ctx));
    expect(reached).toHaveLength(0);
    expect(streamedText(out.map((c) => ({ kind: 'chunk', chunk: c })))).toBe('pong');
    expect(new Set(out.map((c) => c.id)).size).toBe(1);
    expect(out.every((c) => c.model === 'openai/gpt-4o-mini' && c.object === 'chat.completion.chunk')).toBe(true);
    expect(out.map((c) => (c.choices.length === 0 ? 'usage' : (c.choices[0] as { finish_reason: string | null }).finish_reason))).toEqual([null, null, 'stop', 'usage']);
    expect(out.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(out.at(-1)?.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('answers each of n choices, and streams without usage fields unless asked', async () => {
    const { pipeline } = pipelineOf(stage, unexpected);
    const whole = await run(pipeline, context({ n: 2, messages: [{ role: 'user', content: 'ping' }] }));
    expect([messageText(whole[0], 0), messageText(whole[0], 1)]).toEqual(['pong', 'pong']);
    const streamed = await run(pipeline, context({ stream: true, n: 2, messages: [{ role: 'user', content: 'ping' }] }));
    expect([streamedText(streamed, 0), streamedText(streamed, 1)]).toEqual(['pong', 'pong']);
    expect(chunksOf(streamed).some((c) => 'usage' in c)).toBe(false);
  });

  it('passes every other request on to the provider, unchanged', async () => {
    const { pipeline, reached } = pipelineOf(stage, unexpected);
    const out = await run(pipeline, context({ messages: [{ role: 'user', content: 'PING' }] }));
    expect(reached).toHaveLength(1);
    expect(messageText(out[0])).toBe('from the provider');
    // Only the last user message counts.
    await run(pipeline, context({ messages: [{ role: 'user', content: 'ping' }, { role: 'assistant', content: 'pong' }, { role: 'user', content: 'thanks' }] }));
    expect(reached).toHaveLength(2);
  });

  it('refuses an invalid pattern in its options', () => {
    const result = cannedAnswer.options!.safeParse({ answers: [{ pattern: '(unclosed', text: 'x' }] });
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).toContain('valid regular expression');
    expect(cannedAnswer.options!.safeParse({ answers: [] }).success).toBe(false);
  });
});
