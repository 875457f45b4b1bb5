import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The plugin contract's edges found in an audit of the plugin seam, each driven through a running gateway and the
 * official clients: a definition whose fields have the wrong type, an answer of the wrong kind (or a second whole
 * answer) after the plugin called next(), and a module loaded again while its timed-out init is still running.
 */

const rxjs = JSON.stringify(import.meta.resolve('rxjs'));
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

let upstream: ScriptedUpstream;
let dir: string;
let running: RunningGateway | null = null;

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function patchPlugins(url: string, plugins: unknown[]): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ plugins }) });
  return { status: res.status, json: await res.json() };
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-contract-'));
});
afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe('a plugin definition whose fields have the wrong type', () => {
  // Each was read by the host as if well-formed: `requires: 5` made PATCH /api/config a 500 (a TypeError in the
  // requires check), a `close` that is no function was accepted and failed only when the plugin was removed, a string
  // `placement` was ignored, and the others were refused with a message that did not say which field was wrong.
  const faults: Array<{ file: string; fields: string; said: RegExp }> = [
    { file: 'requires-five', fields: `requires: 5, create: () => null`, said: /"requires" must be a list of service keys/ },
    { file: 'requires-key', fields: `requires: { id: 'bus' }, create: () => null`, said: /"requires" must be a list of service keys/ },
    { file: 'create-text', fields: `create: 'stage'`, said: /"create" must be a function/ },
    { file: 'init-text', fields: `init: 'soon', create: () => null`, said: /"init" must be a function/ },
    { file: 'close-number', fields: `close: 1, create: () => null`, said: /"close" must be a function/ },
    { file: 'secret-text', fields: `secretOptions: 'api_key', create: () => null`, said: /"secretOptions" must be a list of option paths/ },
    { file: 'secret-numbers', fields: `secretOptions: [1], create: () => null`, said: /"secretOptions" must be a list of option paths/ },
    { file: 'placement-text', fields: `placement: 'auth', create: () => null`, said: /"placement" must be an object/ },
  ];

  it('refuses the change with a 400 invalid_config naming the entry and the field, never a 500', async () => {
    for (const { file, fields } of faults) write(`${file}.mjs`, `export default { name: '${file}', ${fields} };\n`);
    write('name-number.mjs', `export default { name: 5, create: () => null };\n`);
    write('stage-close.mjs', `export default { name: 'stage-close', create: () => ({ name: 'stage-close', run: (ctx, next) => next(), close: 'later' }) };\n`);
    running = await startGateway(openAIConfig(upstream.url), {}, { configPath: join(dir, 'tollgate.yaml') });
    const { gateway, url, client } = running;
    const version = gateway.configService.current().version;

    for (const { file, said } of faults) {
      const answer = await patchPlugins(url, [{ name: `my-${file}`, path: `${file}.mjs` }]);
      expect(answer.status, file).toBe(400);
      expect(answer.json.error, file).toMatchObject({ code: 'invalid_config', param: 'plugins.0.path' });
      expect(answer.json.error.message, file).toMatch(/plugins\.0\.path: plugin "my-/);
      expect(answer.json.error.message, file).toMatch(said);
    }
    const named = await patchPlugins(url, [{ name: 'my-name', path: 'name-number.mjs' }]);
    expect(named.status).toBe(400);
    expect(named.json.error).toMatchObject({ code: 'invalid_config', param: 'plugins.0.path' });
    expect(named.json.error.message).toMatch(/plugin "my-name".*"name" must be a string/);
    // The stage its create returns is read the same way: a `close` that is no function failed only at retirement.
    const stage = await patchPlugins(url, [{ name: 'my-stage', path: 'stage-close.mjs' }]);
    expect(stage.status).toBe(400);
    expect(stage.json.error).toMatchObject({ code: 'invalid_config', param: 'plugins.0' });
    expect(stage.json.error.message).toMatch(/plugin "my-stage": create\(\) must return a stage .*close functions/);

    // Nothing was applied, and the gateway serves on.
    expect(gateway.configService.current().version).toBe(version);
    expect((await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })).choices).toHaveLength(1);
    await running.stop();
    running = null;

    // The same fault in the config file stops the start with the same words (it was a bare TypeError).
    await expect(startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'five', path: 'requires-five.mjs' }] }), {}, { configPath: join(dir, 'tollgate.yaml') })).rejects.toThrow(
      /cannot start: plugins\.0\.path: plugin "five".*"requires" must be a list of service keys/,
    );
  });
});

describe('an answer of the wrong kind after the plugin called next()', () => {
  const completion = `(ctx) => ({ kind: 'completion', completion: { id: 'chatcmpl-plugin', object: 'chat.completion', created: 1, model: ctx.responseModel,
    choices: [{ index: 0, message: { role: 'assistant', content: 'from the plugin' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } })`;

  it('is the plugin fault it is before next(): plugin.failed, 500 plugin_failed in the route shape, an SSE error event once a stream started', async () => {
    // A whole completion emitted into a streamed answer reached the OpenAI route's writer, which cannot write one
    // there: the connection was cut ("terminated", no error event) and the gateway logged its own 500 ("writing the
    // answer failed"), blaming no plugin; the Anthropic route turned it into a second message. A second completion
    // on a whole answer silently replaced the first, though an answer is one completion event (plugins/README.md).
    const path = write(
      'wrong-kind.mjs',
      `import { concat, last, map, of } from ${rxjs};
      const completion = ${completion};
      export default { name: 'wrong-kind', create: () => ({ name: 'wrong-kind', run(ctx, next) {
        const model = ctx.request.model;
        if (model.endsWith('replace')) return next().pipe(last(), map(() => completion(ctx)));
        if (model.endsWith('append')) return concat(next(), of(completion(ctx)));
        if (model.endsWith('twice')) return of(completion(ctx), completion(ctx));
        return next();
      } }) };`,
    );
    const logged: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
    // Optional: once it called next() (or answered) the provider was called, so a later fault fails the request anyway.
    running = await startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'wrong-kind', path, optional: true }] }), {}, { log });
    const { gateway, client, url } = running;
    const failed: Array<GatewayEvents['plugin.failed']> = [];
    gateway.bus.on('plugin.failed', (event) => failed.push(event));
    const ended: number[] = [];
    gateway.bus.on('request.failed', (event) => ended.push(event.status));

    // Streamed, wrong from the first event: nothing was sent yet, so a whole error answer.
    const replaced = await client.chat.completions.create({ model: 'openai/replace', messages, stream: true }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(replaced).toBeInstanceOf(OpenAI.APIError);
    expect(replaced).toMatchObject({ status: 500, code: 'plugin_failed', message: expect.stringContaining("Plugin 'wrong-kind'") });

    // Streamed, wrong after chunks went out: the stream ends with OpenAI's error frame, not a cut connection.
    const stream = await client.chat.completions.create({ model: 'openai/append', messages, stream: true });
    let text = '';
    const streamError = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().then(
      () => null,
      (err: unknown) => err,
    );
    expect(text).not.toBe('');
    expect(streamError).toBeInstanceOf(OpenAI.APIError);
    expect((streamError as Error).message).toContain("Plugin 'wrong-kind'");
    expect((streamError as Error).message).not.toContain('terminated');

    // The same on the Anthropic route: its `event: error` frame.
    const anthropic = new Anthropic({ baseURL: `${url}/anthropic`, apiKey: 'x', maxRetries: 0, timeout: 10_000 });
    const events: string[] = [];
    const anthropicError = await (async () => {
      const messagesStream = await anthropic.messages.create({ model: 'openai/append', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], stream: true });
      for await (const event of messagesStream) events.push(event.type);
    })().then(
      () => null,
      (err: unknown) => err,
    );
    expect(events).toContain('message_start');
    expect(events).not.toContain('message_stop');
    expect(anthropicError).toBeInstanceOf(Anthropic.APIError);
    expect((anthropicError as Error).message).toContain("Plugin 'wrong-kind'");

    // Whole answers: a second completion, after next() or in its own answer, is no answer either.
    for (const model of ['openai/append', 'openai/twice']) {
      const err = await client.chat.completions.create({ model, messages }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, model).toMatchObject({ status: 500, code: 'plugin_failed', message: expect.stringContaining("Plugin 'wrong-kind'") });
    }

    expect(failed.map(({ reason, optional, skipped }) => ({ reason, optional, skipped }))).toEqual(Array(5).fill({ reason: 'bad_event', optional: true, skipped: false }));
    expect(failed[0]?.message).toMatch(/'completion' event, where it takes 'chunk' events/);
    expect(failed[3]?.message).toMatch(/a second 'completion' event/);
    await expect.poll(() => ended.length).toBe(5);
    expect(ended).toEqual([500, 500, 500, 500, 500]);
    expect(logged.some((line) => line.includes('writing the answer failed'))).toBe(false);

    // A plugin that keeps to the contract is not touched.
    expect((await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })).choices).toHaveLength(1);
  });
});

describe("a plugin loaded again while its timed-out init still runs", () => {
  interface Probe {
    calls: number;
    closes: number;
    settle: { resolve: () => void; reject: (err: Error) => void } | null;
  }
  const probe = (): Probe => (globalThis as unknown as { __slowInitProbe: Probe }).__slowInitProbe;

  it('runs init once: the second load waits for the first one and takes its outcome', async () => {
    // After init_timeout_ms refused the first change, the next change naming the same module ran init again while
    // the first was still pending: two inits of one module at once (two exporters, two connection pools), and the
    // late first one's close() then closed what the second had opened.
    (globalThis as unknown as { __slowInitProbe: Probe }).__slowInitProbe = { calls: 0, closes: 0, settle: null };
    write(
      'slow-init.mjs',
      `const probe = () => globalThis.__slowInitProbe;
      export default {
        name: 'slow-init',
        init() { probe().calls++; return new Promise((resolve, reject) => { probe().settle = { resolve, reject }; }); },
        create: () => ({ name: 'slow-init', run: (ctx, next) => next() }),
        close() { probe().closes++; },
      };`,
    );
    running = await startGateway(openAIConfig(upstream.url), {}, { configPath: join(dir, 'tollgate.yaml') });
    const { url, client } = running;

    const first = await patchPlugins(url, [{ name: 'slow', path: 'slow-init.mjs', init_timeout_ms: 100 }]);
    expect(first.status).toBe(400);
    expect(first.json.error.message).toMatch(/plugin "slow" was not loaded and initialised within 100 ms/);
    // The 100 ms cover loading the module too: on a loaded machine init starts after the refusal (the load goes on).
    await expect.poll(() => probe().calls).toBe(1);

    const second = patchPlugins(url, [{ name: 'slow', path: 'slow-init.mjs', init_timeout_ms: 10_000 }]);
    // Not left unhandled should an assertion fail before it is awaited (the gateway's stop then cuts it).
    second.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(probe().calls).toBe(1);
    probe().settle?.resolve();
    expect((await second).status).toBe(200);
    expect(probe()).toMatchObject({ calls: 1, closes: 0 });
    expect((await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })).choices).toHaveLength(1);

    // Removed: closed once.
    expect((await patchPlugins(url, [])).status).toBe(200);
    await expect.poll(() => probe().closes).toBe(1);
  });

  it('fails the waiting load clearly when that init fails, and a later load may try again', async () => {
    (globalThis as unknown as { __slowInitProbe: Probe }).__slowInitProbe = { calls: 0, closes: 0, settle: null };
    write(
      'failing-init.mjs',
      `const probe = () => globalThis.__slowInitProbe;
      export default {
        name: 'failing-init',
        init() { probe().calls++; return new Promise((resolve, reject) => { probe().settle = { resolve, reject }; }); },
        create: () => null,
        close() { probe().closes++; },
      };`,
    );
    running = await startGateway(openAIConfig(upstream.url), {}, { configPath: join(dir, 'tollgate.yaml') });
    const { url } = running;

    expect((await patchPlugins(url, [{ name: 'failing', path: 'failing-init.mjs', init_timeout_ms: 100 }])).status).toBe(400);
    const second = patchPlugins(url, [{ name: 'failing', path: 'failing-init.mjs', init_timeout_ms: 10_000 }]);
    second.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(probe().calls).toBe(1);
    probe().settle?.reject(new Error('the index is locked'));
    const refused = await second;
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toMatch(/plugin "failing" failed to initialise: the index is locked/);

    // That init is over: the next load runs init again (one at a time), and this one succeeds.
    const third = patchPlugins(url, [{ name: 'failing', path: 'failing-init.mjs', init_timeout_ms: 10_000 }]);
    third.catch(() => undefined);
    await expect.poll(() => probe().calls).toBe(2);
    probe().settle?.resolve();
    expect((await third).status).toBe(200);
    expect(probe().closes).toBe(0);
  });
});
