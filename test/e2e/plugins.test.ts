import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * User plugins through the public surface: files and packages named in the config, changed through
 * `PATCH /api/config` without a restart, and held to their contract per request.
 */

const zodUrl = import.meta.resolve('zod');
let upstream: ScriptedUpstream;
let dir: string;
let running: RunningGateway | null = null;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** Counters the plugins below bump, shared through the process (the plugin modules are not the test's). */
const probe = globalThis as unknown as { __pluginProbe: { closedStages: string[]; closedPlugins: string[]; inits: number } };

/** A plugin that adds a system message `text` (its option) before the conversation's last message. */
const SYSTEM_NOTE = `
import { z } from ${JSON.stringify(zodUrl)};
// Read at each call: the test replaces the probe between tests, the module is imported once.
const probe = () => (globalThis.__pluginProbe ??= { closedStages: [], closedPlugins: [], inits: 0 });
export default {
  name: 'system-note',
  options: z.strictObject({ text: z.string().min(1) }),
  init() { probe().inits++; },
  create(options) {
    return {
      name: 'system-note',
      run(ctx, next) {
        ctx.request.messages = [{ role: 'system', content: options.text }, ...ctx.request.messages];
        return next();
      },
      close() { probe().closedStages.push(options.text); },
    };
  },
  close() { probe().closedPlugins.push('system-note'); },
};
`;

const THROWS = `
export const plugin = { name: 'boom', create: () => ({ name: 'boom', run() { throw new Error('kaboom'); } }) };
`;

/** Answers by itself with a completion whose choices are not objects: shaped like a ResponseEvent, but not one. */
const MALFORMED = `
import { of } from 'rxjs';
export default { name: 'malformed', create: () => ({ name: 'malformed', run() { return of({ kind: 'completion', completion: { id: 'x', object: 'chat.completion', model: 'm', choices: [null] } }); } }) };
`;

/** An `async run` (a Promise, not an Observable) that rejects, and an `async create` that rejects. */
const ASYNC_RUN = `
export default { name: 'async-run', create: () => ({ name: 'async-run', async run() { throw new Error('async kaboom'); } }) };
`;
const ASYNC_CREATE = `
export default { name: 'async-create', async create() { throw new Error('no stage today'); } };
`;

const HANGS = `
import { NEVER } from 'rxjs';
export default { name: 'hang', create: () => ({ name: 'hang', run() { return NEVER; } }) };
`;

/** Cleans up after each answer with a `finalize` whose clean-up throws: a teardown fault, after the answer is out. */
/** Has something to do only for gpt-4o-mini (adds a system note), and its appliesTo throws for a model named "explode". */
const PICKY = `
export default {
  name: 'picky',
  create: () => ({
    name: 'picky',
    appliesTo(ctx) {
      if (ctx.request.model === 'explode') throw new Error('picky could not decide');
      return ctx.request.model.endsWith('gpt-4o-mini');
    },
    run(ctx, next) {
      ctx.request.messages = [{ role: 'system', content: 'picked' }, ...ctx.request.messages];
      return next();
    },
  }),
};
`;

const TEARDOWN_THROWS = `
import { finalize } from 'rxjs';
export default { name: 'teardown', create: () => ({ name: 'teardown', run(ctx, next) { return next().pipe(finalize(() => { throw new Error('release failed'); })); } }) };
`;

/** An init that waits until the test lets it go (globalThis.__releaseInit), then is closed if not wanted any more. */
const SLOW_INIT = `
export default {
  name: 'slow-init',
  init() { return new Promise((resolve) => { globalThis.__releaseInit = resolve; }); },
  create: () => ({ name: 'slow-init', run: (ctx, next) => next() }),
  close() { globalThis.__pluginProbe.closedPlugins.push('slow-init'); },
};
`;

/**
 * Answers by itself without looking at ctx.stream: a whole completion (or, asked with 'chunks', one chunk), and
 * nothing at all when asked with 'nothing'.
 */
const IGNORES_STREAM = `
import { EMPTY, of } from 'rxjs';
export default { name: 'one-shape', create: () => ({ name: 'one-shape', run(ctx) {
  const text = JSON.stringify(ctx.request.messages);
  if (text.includes('nothing')) return EMPTY;
  const choice = { index: 0, finish_reason: 'stop' };
  if (text.includes('chunks')) return of({ kind: 'chunk', chunk: { id: 'c', object: 'chat.completion.chunk', created: 1, model: ctx.responseModel, choices: [{ ...choice, delta: { content: 'canned' } }] } });
  return of({ kind: 'completion', completion: { id: 'c', object: 'chat.completion', created: 1, model: ctx.responseModel, choices: [{ ...choice, message: { role: 'assistant', content: 'canned' } }] } });
} }) };
`;

/** A stage and a plugin whose close() never settles. */
const STUCK_CLOSE = `
export default {
  name: 'stuck-close',
  create: () => ({ name: 'stuck-close', run: (ctx, next) => next(), close: () => new Promise(() => {}) }),
  close: () => new Promise(() => {}),
};
`;

/** Refuses with a GatewayError whose status the message names ('none' leaves it out), thrown or as its Observable's error. */
const REFUSES = `
import { throwError } from 'rxjs';
import { GatewayError } from 'GATEWAY_ERROR';
export default { name: 'refuses', create: () => ({ name: 'refuses', run(ctx) {
  const [, status, how] = /status=(\\w+) (\\w+)/.exec(JSON.stringify(ctx.request.messages));
  const error = new GatewayError({ ...(status === 'none' ? {} : { status: Number(status) }), type: 'invalid_request_error', code: 'refused_by_policy', message: 'refused' });
  if (how === 'thrown') throw error;
  return throwError(() => error);
} }) };
`;

/** Passes an upstream-like set of headers on to the client through ctx.responseHeaders, framing headers among them. */
const COPIES_HEADERS = `
export default { name: 'copies-headers', create: () => ({ name: 'copies-headers', run(ctx, next) {
  Object.assign(ctx.responseHeaders, { 'x-upstream-region': 'eu-1', 'content-length': '3', 'Transfer-Encoding': 'gzip', 'content-encoding': 'br', connection: 'close' });
  return next();
} }) };
`;

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function patchConfig(body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${running!.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

function systemMessagesSent(): string[] {
  const body = upstream.calls.at(-1)?.body as { messages: Array<{ role: string; content: string }> };
  return body.messages.filter((m) => m.role === 'system').map((m) => m.content);
}

async function expectApiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as InstanceType<typeof OpenAI.APIError>;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugins-'));
  mkdirSync(join(dir, 'plugins'));
  write('plugins/system-note.mjs', SYSTEM_NOTE);
  write('plugins/boom.ts', THROWS);
  write('plugins/picky.mjs', PICKY);
  write('plugins/async-run.mjs', ASYNC_RUN);
  write('plugins/async-create.mjs', ASYNC_CREATE);
  write('plugins/hang.mjs', HANGS.replace("'rxjs'", JSON.stringify(import.meta.resolve('rxjs'))));
  write('plugins/malformed.mjs', MALFORMED.replace("'rxjs'", JSON.stringify(import.meta.resolve('rxjs'))));
  write('plugins/slow-init.mjs', SLOW_INIT);
  write('plugins/stuck-close.mjs', STUCK_CLOSE);
  write('plugins/copies-headers.mjs', COPIES_HEADERS);
  write('plugins/refuses.mjs', REFUSES.replace("'rxjs'", JSON.stringify(import.meta.resolve('rxjs'))).replace("'GATEWAY_ERROR'", JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../src/index.ts')).href)));
  write('plugins/one-shape.mjs', IGNORES_STREAM.replace("'rxjs'", JSON.stringify(import.meta.resolve('rxjs'))));
  write('plugins/teardown.mjs', TEARDOWN_THROWS.replace("'rxjs'", JSON.stringify(import.meta.resolve('rxjs'))));
  // A package in the config folder's node_modules, named by `package`.
  mkdirSync(join(dir, 'node_modules', 'tollgate-plugin-tag'), { recursive: true });
  write('node_modules/tollgate-plugin-tag/package.json', JSON.stringify({ name: 'tollgate-plugin-tag', version: '1.0.0', type: 'module', main: 'index.js' }));
  write(
    'node_modules/tollgate-plugin-tag/index.js',
    `export default { name: 'tag', create: (options) => ({ name: 'tag', run(ctx, next) { ctx.request.messages = [{ role: 'system', content: 'tag:' + options.tag }, ...ctx.request.messages]; return next(); } }) };\n`,
  );
});
/** A package in the config folder's node_modules whose plugin adds the system message `tag:<text>`. */
function writeTagPackage(name: string, manifest: Record<string, unknown>, files: Record<string, string>): void {
  mkdirSync(join(dir, 'node_modules', name, 'dist'), { recursive: true });
  write(`node_modules/${name}/package.json`, JSON.stringify({ name, version: '1.0.0', ...manifest }));
  for (const [file, text] of Object.entries(files)) write(`node_modules/${name}/${file}`, `${text}\n`);
}
const tagPlugin = (text: string) =>
  `{ name: 'tag', create: () => ({ name: 'tag', run(ctx, next) { ctx.request.messages = [{ role: 'system', content: 'tag:${text}' }, ...ctx.request.messages]; return next(); } }) }`;

afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  upstream.reset();
  probe.__pluginProbe = { closedStages: [], closedPlugins: [], inits: 0 };
});
afterEach(async () => {
  await running?.stop();
  running = null;
});

/** A gateway whose config file lives in the temp folder, so relative plugin paths and packages resolve there. */
async function start(plugins: unknown[]): Promise<RunningGateway> {
  running = await startGateway(openAIConfig(upstream.url, { plugins } as never), {}, { configPath: join(dir, 'tollgate.yaml') });
  return running;
}

describe('plugins from the config', () => {
  it('loads a plugin file relative to the config file; the upstream receives what it adds', async () => {
    const { client } = await start([{ name: 'note', path: 'plugins/system-note.mjs', options: { text: 'be brief' } }]);
    const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(completion.choices[0]?.message.role).toBe('assistant');
    expect(systemMessagesSent()).toEqual(['be brief']);
    expect(probe.__pluginProbe.inits).toBe(1);
  });

  it('names each entry of one plugin file listed twice by its config name in stage.completed', async () => {
    // Both stages reported the name the file's stage gives itself ("system-note"), so the events, the tracing
    // channel (tollgate:stage:<name>) and the request's stage timeline could not tell the two entries apart.
    const { client, gateway } = await start([
      { name: 'note-a', path: 'plugins/system-note.mjs', options: { text: 'a' } },
      { name: 'note-b', path: 'plugins/system-note.mjs', options: { text: 'b' } },
    ]);
    const stages: string[] = [];
    gateway.bus.on('stage.completed', (event) => stages.push(event.stage));
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['b', 'a']);
    expect(stages).toContain('note-a');
    expect(stages).toContain('note-b');
    expect(stages).not.toContain('system-note');
  });

  it('loads a plugin from an npm package', async () => {
    const { client } = await start([{ name: 'tag', package: 'tollgate-plugin-tag', options: { tag: 'x1' } }]);
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['tag:x1']);
  });

  it('loads an ESM-only package, and the ESM build of a dual package, as import() resolves them', async () => {
    // Packages were resolved as require() resolves them: one whose "exports" map only "import" was 'cannot find
    // package' (No "exports" main defined), and a dual package's CommonJS build was loaded.
    writeTagPackage('tollgate-plugin-esm-only', { type: 'module', exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } } }, {
      'dist/index.js': `export default ${tagPlugin('esm-only')};`,
    });
    writeTagPackage('tollgate-plugin-dual', { exports: { '.': { require: './dist/index.cjs', import: './dist/index.mjs' } } }, {
      'dist/index.cjs': `module.exports = ${tagPlugin('cjs')};`,
      'dist/index.mjs': `export default ${tagPlugin('esm')};`,
    });
    const { client } = await start([{ name: 'esm-only', package: 'tollgate-plugin-esm-only' }]);
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['tag:esm-only']);
    expect((await patchConfig({ plugins: [{ name: 'dual', package: 'tollgate-plugin-dual' }] })).status).toBe(200);
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['tag:esm']);
    // One that exports nothing import() can load is refused, saying so.
    writeTagPackage('tollgate-plugin-require-only', { exports: { require: './dist/index.cjs' } }, { 'dist/index.cjs': `module.exports = ${tagPlugin('cjs')};` });
    const refused = await patchConfig({ plugins: [{ name: 'req', package: 'tollgate-plugin-require-only' }] });
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toContain('plugins.0.package: cannot find package "tollgate-plugin-require-only"');
    expect(refused.json.error.message).toContain('"exports" give no entry for import');
  });

  it('refuses to start on a bad plugin entry, naming the field', async () => {
    await expect(start([{ name: 'note', path: 'plugins/system-note.mjs', options: { text: '' } }])).rejects.toThrow(/plugins\.0\.options\.text/);
    running = null;
    await expect(start([{ name: 'note', path: 'plugins/missing.ts' }])).rejects.toThrow(/plugins\.0\.path: no such file/);
    running = null;
  });
});

describe('changing plugins without a restart', () => {
  it('shows the plugins in GET /api/config, and a PUT of that view keeps them and changes nothing', async () => {
    const { gateway } = await start([]);
    const note = { name: 'note', path: 'plugins/system-note.mjs', options: { text: 'kept' } };
    expect((await patchConfig({ plugins: [note] })).status).toBe(200);
    const view = (await (await fetch(`${running!.url}/api/config`)).json()) as { version: number; plugins: unknown[] };
    expect(view.plugins).toEqual([note]);
    const put = await fetch(`${running!.url}/api/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(view) });
    expect(put.status).toBe(200);
    expect(gateway.configService.current().version).toBe(view.version);
    expect(gateway.configService.current().plugins).toEqual([note]);
  });

  it('adds, re-configures, reorders and removes plugins through PATCH /api/config', async () => {
    const { client, gateway } = await start([]);
    const ask = () => client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await ask();
    expect(systemMessagesSent()).toEqual([]);

    const note = { name: 'note', path: 'plugins/system-note.mjs', options: { text: 'one' } };
    const tag = { name: 'tag', package: 'tollgate-plugin-tag', options: { tag: 't' } };
    expect((await patchConfig({ plugins: [note] })).status).toBe(200);
    await ask();
    expect(systemMessagesSent()).toEqual(['one']);

    expect((await patchConfig({ plugins: [{ ...note, options: { text: 'two' } }] })).status).toBe(200);
    await ask();
    expect(systemMessagesSent()).toEqual(['two']);
    // The superseded version had no request in flight: its stage was closed; the plugin itself stays loaded.
    await expect.poll(() => probe.__pluginProbe.closedStages).toEqual(['one']);
    expect(probe.__pluginProbe.closedPlugins).toEqual([]);
    expect(probe.__pluginProbe.inits).toBe(1);

    // Both before `call`, in listing order: each prepends, so the later one's message comes first.
    await patchConfig({ plugins: [note, tag] });
    await ask();
    expect(systemMessagesSent()).toEqual(['tag:t', 'one']);
    await patchConfig({ plugins: [tag, note] });
    await ask();
    expect(systemMessagesSent()).toEqual(['one', 'tag:t']);
    // Placement moves one relative to the other.
    await patchConfig({ plugins: [{ ...tag, placement: { after: 'note' } }, note] });
    await ask();
    expect(systemMessagesSent()).toEqual(['tag:t', 'one']);

    await patchConfig({ plugins: null });
    await ask();
    expect(systemMessagesSent()).toEqual([]);
    await expect.poll(() => probe.__pluginProbe.closedPlugins).toEqual(['system-note']);
    expect(gateway.configService.current().plugins).toEqual([]);
  });

  it('re-imports a plugin file edited since it was loaded at the next config change, and closes the old one', async () => {
    const edited = (word: string) => SYSTEM_NOTE.replace('content: options.text', `content: ${JSON.stringify(word)} + options.text`);
    write('plugins/edited.mjs', edited('v1:'));
    const { client } = await start([{ name: 'edited', path: 'plugins/edited.mjs', options: { text: 'x' } }]);
    const ask = () => client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await ask();
    expect(systemMessagesSent()).toEqual(['v1:x']);

    const path = write('plugins/edited.mjs', edited('v2:'));
    // A later modification time, whatever the file system's clock granularity.
    utimesSync(path, new Date(), new Date(Date.now() + 5_000));
    await ask();
    // Nothing changed in the config yet: the loaded version keeps serving.
    expect(systemMessagesSent()).toEqual(['v1:x']);
    expect((await patchConfig({ plugins: [{ name: 'edited', path: 'plugins/edited.mjs', options: { text: 'y' } }] })).status).toBe(200);
    await ask();
    expect(systemMessagesSent()).toEqual(['v2:y']);
    // The first module's plugin was closed once no config version named it; the new one was initialised.
    await expect.poll(() => probe.__pluginProbe.closedPlugins).toEqual(['system-note']);
    expect(probe.__pluginProbe.inits).toBe(2);
  });

  it('refuses a plugin whose init does not finish within init_timeout_ms, and the next change applies', async () => {
    // Config changes apply one at a time, and this one waited on the init for ever: the PATCH never answered, nor
    // did any later change, the one removing the plugin too, until a restart.
    const { client, gateway } = await start([]);
    const version = gateway.configService.current().version;
    const started = performance.now();
    const slow = await patchConfig({ plugins: [{ name: 'slow-init', path: 'plugins/slow-init.mjs', init_timeout_ms: 300 }] });
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(slow.status).toBe(400);
    expect(slow.json.error.message).toBe('Invalid configuration: plugins.0: plugin "slow-init" was not loaded and initialised within 300 ms (init_timeout_ms)');
    expect(gateway.configService.current().version).toBe(version);

    const note = { name: 'note', path: 'plugins/system-note.mjs', options: { text: 'after' } };
    expect((await patchConfig({ plugins: [note] })).status).toBe(200);
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['after']);
    // The refused plugin's init finishes late: what it opened is closed, as nothing runs it.
    (globalThis as unknown as { __releaseInit: () => void }).__releaseInit();
    await expect.poll(() => probe.__pluginProbe.closedPlugins).toEqual(['slow-init']);
    // A start on it is refused the same way, instead of never listening.
    await running!.stop();
    running = null;
    await expect(start([{ name: 'slow-init', path: 'plugins/slow-init.mjs', init_timeout_ms: 300 }])).rejects.toThrow(/plugins\.0: plugin "slow-init" was not loaded and initialised within 300 ms/);
    running = null;
  });

  it('refuses bad options, unknown placements and missing files whole, with a 400 naming the field', async () => {
    const { client, gateway } = await start([{ name: 'note', path: 'plugins/system-note.mjs', options: { text: 'kept' } }]);
    const version = gateway.configService.current().version;
    const cases: Array<[unknown, string]> = [
      [{ name: 'note', path: 'plugins/system-note.mjs', options: { text: 42 } }, 'plugins.0.options.text'],
      [{ name: 'note', path: 'plugins/system-note.mjs', options: { text: 'x', extra: 1 } }, 'plugins.0.options'],
      [{ name: 'note', path: 'plugins/system-note.mjs', options: { text: 'x' }, placement: { after: 'nowhere' } }, 'plugins.0.placement.after'],
      [{ name: 'note', path: 'plugins/nope.ts' }, 'plugins.0.path'],
      [{ name: 'auth', path: 'plugins/system-note.mjs', options: { text: 'x' } }, 'plugins.0.name'],
    ];
    for (const [entry, param] of cases) {
      const { status, json } = await patchConfig({ plugins: [entry] });
      expect(status, param).toBe(400);
      expect(json.error.code).toBe('invalid_config');
      expect(json.error.param).toBe(param);
      expect(json.error.message).toContain(param);
    }
    expect(gateway.configService.current().version).toBe(version);
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['kept']);
  });
});

describe('a plugin that breaks fails only its request', () => {
  it('answers 500 naming a throwing plugin; the next request on a healthy config is fine', async () => {
    const { client } = await start([{ name: 'boom', path: 'plugins/boom.ts' }]);
    const failed: Array<GatewayEvents['plugin.failed']> = [];
    running!.gateway.bus.on('plugin.failed', (event) => failed.push(event));
    const err = await expectApiError(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }));
    expect(err.status).toBe(500);
    expect(err.code).toBe('plugin_failed');
    expect(err.message).toContain("Plugin 'boom'");
    expect(upstream.calls).toHaveLength(0);
    expect(failed).toEqual([expect.objectContaining({ plugin: 'boom', reason: 'threw', message: 'kaboom', optional: false, skipped: false })]);

    await patchConfig({ plugins: [] });
    const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(completion.choices).toHaveLength(1);
  });

  it('answers 500 naming a plugin whose run is async, and its rejected Promise is no unhandled rejection', async () => {
    // The rejection of the Promise an `async run` returned was left unhandled: under `tollgate serve` that ends the
    // gateway process (dieOnUncaught), for every request in flight, not just the one that met the plugin.
    const rejections: unknown[] = [];
    const onRejection = (err: unknown): void => void rejections.push(err);
    process.on('unhandledRejection', onRejection);
    try {
      const { client } = await start([{ name: 'async-run', path: 'plugins/async-run.mjs' }]);
      const failed: Array<GatewayEvents['plugin.failed']> = [];
      running!.gateway.bus.on('plugin.failed', (event) => failed.push(event));
      const err = await expectApiError(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }));
      expect(err.status).toBe(500);
      expect(err.code).toBe('plugin_failed');
      expect(failed).toEqual([expect.objectContaining({ plugin: 'async-run', reason: 'not_observable', message: expect.stringContaining('Promise') })]);
      // An async create is refused with the config change, its rejection handled too.
      const { status, json } = await patchConfig({ plugins: [{ name: 'async-create', path: 'plugins/async-create.mjs' }] });
      expect(status).toBe(400);
      expect(json.error.message).toMatch(/plugin "async-create": create\(\) returned a Promise/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('answers 500 naming a plugin whose answer has malformed choices, before any stage outside it reads them', async () => {
    // The stages outside the plugin (spend, cache, the request log) read the answer in their subscribers, where a
    // TypeError on `choices: [null]` was an uncaught exception (the process's end under `tollgate serve`), and the
    // client got 500 "The upstream answer was empty."
    const { client } = await start([{ name: 'malformed', path: 'plugins/malformed.mjs' }]);
    const failed: Array<GatewayEvents['plugin.failed']> = [];
    running!.gateway.bus.on('plugin.failed', (event) => failed.push(event));
    for (const stream of [false, true]) {
      const err = await expectApiError(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream }));
      expect(err.status).toBe(500);
      expect(err.code).toBe('plugin_failed');
      expect(err.message).toContain("Plugin 'malformed'");
    }
    expect(failed).toEqual([expect.objectContaining({ plugin: 'malformed', reason: 'bad_event' }), expect.objectContaining({ plugin: 'malformed', reason: 'bad_event' })]);
  });

  it('reports a plugin whose teardown throws, whole, streamed and when the client leaves, and the process lives on', async () => {
    // rxjs throws a teardown's error (UnsubscriptionError) from unsubscribe(), which it calls as the answer ends and
    // when the client leaves; nothing caught it, so it reached the process as an uncaught exception, which ends
    // `tollgate serve` (dieOnUncaught) with every request in flight, after this request had been answered.
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    // Chunks 20 ms apart, so the client that leaves does leave before the answer ends.
    const slow = await startOpenAIUpstream({ apiKey: null, chunkDelayMs: 20 });
    try {
      running = await startGateway(openAIConfig(slow.url, { plugins: [{ name: 'teardown', path: 'plugins/teardown.mjs' }] } as never), {}, { configPath: join(dir, 'tollgate.yaml') });
      const { client, gateway } = running;
      const failed: Array<GatewayEvents['plugin.failed']> = [];
      gateway.bus.on('plugin.failed', (event) => failed.push(event));
      const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(completion.choices[0]?.message.content).toBe('echo: hi');
      const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('echo: hi');
      // A client that leaves after the first chunk of a long answer.
      const long: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'word '.repeat(2_000) }];
      const left = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: long, stream: true });
      for await (const _chunk of left) break;
      await expect.poll(() => failed.length).toBe(3);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(uncaught).toEqual([]);
      expect(failed).toEqual(Array(3).fill(expect.objectContaining({ plugin: 'teardown', reason: 'teardown', message: 'release failed', skipped: false })));
      const statuses = async (): Promise<number[]> =>
        ((await (await fetch(`${running!.url}/api/logs?limit=3`)).json()) as { data: Array<{ status: number }> }).data.map((entry) => entry.status).sort();
      await expect.poll(statuses).toEqual([200, 200, 499]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await slow.close();
    }
  });

  it('answers 500 naming a plugin whose own answer is not of the kind the request takes, or is nothing', async () => {
    // The dialects render by the event's kind: a completion for a streamed request went out as a JSON body, which the
    // OpenAI SDK read as an empty stream without an error; chunks went to a client expecting JSON as SSE; an answer of
    // nothing was a 500 'The upstream answer was empty.' though no upstream was called.
    const { client, gateway } = await start([{ name: 'one-shape', path: 'plugins/one-shape.mjs' }]);
    const failed: Array<GatewayEvents['plugin.failed']> = [];
    gateway.bus.on('plugin.failed', (event) => failed.push(event));
    const ask = async (content: string, stream: boolean): Promise<string> => {
      const err = await expectApiError(
        (async () => {
          const answer = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], stream });
          if (stream) for await (const _chunk of answer as AsyncIterable<unknown>) void _chunk;
          return answer;
        })(),
      );
      expect(err.status).toBe(500);
      expect(err.code).toBe('plugin_failed');
      return err.message;
    };
    expect(await ask('a completion', true)).toContain("Plugin 'one-shape' answered a streamed chat request with a 'completion' event, where it takes 'chunk' events");
    expect(await ask('chunks', false)).toContain("Plugin 'one-shape' answered a chat request without stream with a 'chunk' event, where it takes 'completion' events");
    expect(await ask('nothing', false)).toContain("Plugin 'one-shape' completed without answering or calling the next stage");
    expect(failed.map((event) => event.reason)).toEqual(['bad_event', 'bad_event', 'no_answer']);
    // The Anthropic SDK gets the same in Anthropic's shape.
    const anthropic = new Anthropic({ baseURL: `${running!.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const refused = await anthropic.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'nothing' }] }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(Anthropic.InternalServerError);
    expect((refused as InstanceType<typeof Anthropic.InternalServerError>).error).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringContaining("Plugin 'one-shape'") } });
    // A completion for a whole answer is one it takes.
    const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a completion' }] });
    expect(completion.choices[0]?.message.content).toBe('canned');
    expect(upstream.calls).toHaveLength(0);
  });

  it('answers a GatewayError a plugin refuses with by its status, and one without an HTTP error status as plugin_failed', async () => {
    // A GatewayError's status went to the client as it was: a JavaScript plugin's error without one was a 500
    // 'Internal gateway error.' naming no plugin, a 204 an empty answer, a 302 a redirect, a 101 a cut connection.
    const { client } = await start([{ name: 'refuses', path: 'plugins/refuses.mjs' }]);
    const ask = (content: string) => expectApiError(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] }));
    for (const how of ['thrown', 'errored']) {
      const refused = await ask(`status=403 ${how}`);
      expect(refused.status).toBe(403);
      expect(refused.code).toBe('refused_by_policy');
      for (const [status, said] of [['none', 'none'], ['204', '204'], ['302', '302'], ['101', '101']]) {
        const err = await ask(`status=${status} ${how}`);
        expect(err.status).toBe(500);
        expect(err.code).toBe('plugin_failed');
        expect(err.message).toContain(`Plugin 'refuses' failed with a GatewayError whose status (${said}) is not an HTTP error status (400 to 599)`);
      }
    }
    expect(upstream.calls).toHaveLength(0);
  });

  it('keeps the headers a plugin sets for the client, but not those that frame the answer', async () => {
    // ctx.responseHeaders went out as they were: the content-length a plugin copied from an upstream cut the answer to
    // 3 bytes under a 200, whole and streamed, and a transfer-encoding or content-encoding made it unreadable.
    const { client } = await start([{ name: 'copies-headers', path: 'plugins/copies-headers.mjs' }]);
    const { data, response } = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-upstream-region')).toBe('eu-1');
    expect(response.headers.get('content-encoding')).toBeNull();
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true })) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    const anthropic = new Anthropic({ baseURL: `${running!.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: hi' }]);
    const streamed = await anthropic.messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'echo: hi' }]);
    const gemini = await fetch(`${running!.url}/genai/v1beta/models/openai/gpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'unused' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    expect(gemini.status).toBe(200);
    expect(((await gemini.json()) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]?.content.parts[0]?.text).toBe('echo: hi');
  });

  it('answers 504 naming a plugin that hangs past its timeout_ms, within the time', async () => {
    const { client } = await start([{ name: 'hang', path: 'plugins/hang.mjs', timeout_ms: 200 }]);
    const timedOut: Array<GatewayEvents['plugin.timed_out']> = [];
    running!.gateway.bus.on('plugin.timed_out', (event) => timedOut.push(event));
    const started = performance.now();
    const err = await expectApiError(client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(err.status).toBe(504);
    expect(err.code).toBe('plugin_timed_out');
    expect(err.message).toContain("Plugin 'hang'");
    expect(timedOut).toEqual([expect.objectContaining({ plugin: 'hang', timeoutMs: 200, skipped: false })]);
  });

  it('passes a request by a plugin whose appliesTo says no, and fails only the request whose appliesTo throws (skips it when optional)', async () => {
    // Before route, which would refuse the model "explode" first.
    const { client, gateway } = await start([{ name: 'picky', path: 'plugins/picky.mjs', placement: { after: 'auth' } }]);
    const stages: string[] = [];
    const failed: Array<GatewayEvents['plugin.failed']> = [];
    gateway.bus.on('stage.completed', (event) => stages.push(event.stage));
    gateway.bus.on('plugin.failed', (event) => failed.push(event));
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(systemMessagesSent()).toEqual(['picked']);
    expect(stages).toContain('picky');

    stages.length = 0;
    await client.chat.completions.create({ model: 'openai/gpt-4o', messages });
    expect(upstream.calls.at(-1)?.body).toMatchObject({ model: 'gpt-4o', messages });
    expect(stages).not.toContain('picky');
    expect(stages).toContain('call');

    const calls = upstream.calls.length;
    const err = await expectApiError(client.chat.completions.create({ model: 'explode', messages }));
    expect(err.status).toBe(500);
    expect(err.code).toBe('plugin_failed');
    expect(upstream.calls).toHaveLength(calls);
    expect(failed).toEqual([expect.objectContaining({ plugin: 'picky', reason: 'threw', message: 'picky could not decide', skipped: false })]);

    await patchConfig({ plugins: [{ name: 'picky', path: 'plugins/picky.mjs', placement: { after: 'auth' }, optional: true }] });
    failed.length = 0;
    // Optional: the request goes on without it (to a model that does not exist, so a 404 from the route, not a 500).
    const skipped = await expectApiError(client.chat.completions.create({ model: 'explode', messages }));
    expect(skipped.status).not.toBe(500);
    expect(failed).toEqual([expect.objectContaining({ plugin: 'picky', reason: 'threw', optional: true, skipped: true })]);
  });

  it('skips an optional plugin that throws or hangs, and reports it', async () => {
    const { client, gateway } = await start([
      { name: 'boom', path: 'plugins/boom.ts', optional: true },
      { name: 'hang', path: 'plugins/hang.mjs', optional: true, timeout_ms: 100 },
      { name: 'note', path: 'plugins/system-note.mjs', options: { text: 'still here' } },
    ]);
    const failed: Array<GatewayEvents['plugin.failed']> = [];
    const timedOut: Array<GatewayEvents['plugin.timed_out']> = [];
    gateway.bus.on('plugin.failed', (event) => failed.push(event));
    gateway.bus.on('plugin.timed_out', (event) => timedOut.push(event));
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(systemMessagesSent()).toEqual(['still here']);
    expect(failed).toEqual([expect.objectContaining({ plugin: 'boom', optional: true, skipped: true })]);
    expect(timedOut).toEqual([expect.objectContaining({ plugin: 'hang', optional: true, skipped: true })]);
  });
});

describe('lifecycle', () => {
  it('shuts down when a plugin\'s close() never settles, with the last requests logged', async () => {
    // The shutdown waited for every stage's and plugin's close() before it flushed the request log and closed the
    // store: it never ended (tollgate serve ignored SIGTERM until killed, losing the last log entries).
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-plugins-data-'));
    try {
      const config = openAIConfig(upstream.url, { plugins: [{ name: 'stuck-close', path: 'plugins/stuck-close.mjs' }] } as never);
      const first = await startGateway(config, {}, { configPath: join(dir, 'tollgate.yaml'), dataDir });
      const { _request_id: requestId } = await first.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      const started = performance.now();
      await first.stop();
      expect(performance.now() - started).toBeLessThan(15_000);
      running = await startGateway(openAIConfig(upstream.url), {}, { dataDir });
      const logged = await fetch(`${running.url}/api/logs/${requestId}`);
      expect(logged.status).toBe(200);
      expect(await logged.json()).toMatchObject({ status: 200 });
    } finally {
      await running?.stop();
      running = null;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('closes the stages and the plugin when the gateway closes', async () => {
    await start([{ name: 'note', path: 'plugins/system-note.mjs', options: { text: 'bye' } }]);
    await running!.stop();
    running = null;
    expect(probe.__pluginProbe.closedStages).toEqual(['bye']);
    expect(probe.__pluginProbe.closedPlugins).toEqual(['system-note']);
  });
});
