import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The package as an outsider gets it: `npm pack` (whose prepack builds dist/), unpacked into a fresh project's
 * node_modules, and a plugin written against `import { ... } from 'tollgate'` type-checked with the consumer's own
 * tsconfig against the shipped declarations; then the SDK run for real (createGateway in-process, a chat to a
 * scripted upstream, the typed admin client) and the `tollgate` bin. The consumer shares the repo's node_modules
 * for zod, rxjs, typescript and tollgate's own dependencies (the machine is offline, so nothing is installed).
 */
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, '../..');
const tsc = join(repo, 'node_modules/typescript/bin/tsc');
const TIMEOUT = 120_000;

let dir = '';
let consumer = '';
let upstream: ScriptedUpstream;

const GOOD_PLUGIN = `import { map } from 'rxjs';
import { z } from 'zod';
import { contextKey, definePlugin, gatewayError, serviceKey, type ChatCompletionChunk, type Next, type PluginDefinition, type RequestContext, type ResponseEvent, type Stage } from 'tollgate';

interface Counter { add(n: number): void }
const COUNTER = serviceKey<Counter>('counter');
const SHOUTED = contextKey<boolean>('shout.shouted');

const options = z.strictObject({ max_messages: z.number().int().positive().default(8), suffix: z.string().default('!') });

const plugin: PluginDefinition<z.output<typeof options>> = definePlugin({
  name: 'shout',
  options,
  requires: [COUNTER],
  placement: { after: 'auth', before: 'call' },
  init(services) {
    services.get(COUNTER).add(0);
  },
  create(opts, config, services): Stage | null {
    const counter: Counter = services.get(COUNTER);
    const version: number = config.version;
    return {
      name: 'shout',
      run(ctx: RequestContext, next: Next) {
        if (ctx.operation === 'chat' && ctx.request.messages.length > opts.max_messages) throw gatewayError('invalid_value', 'Too many messages.', { param: 'messages' });
        ctx.extensions.set(SHOUTED, true);
        const traced: string | null = ctx.hints.traceparent;
        const team: string | undefined = ctx.identity?.team?.name;
        counter.add(version + (team ? 1 : 0) + (traced ? 1 : 0) + (ctx.extensions.get(SHOUTED) ? 1 : 0));
        return next().pipe(
          map((event: ResponseEvent): ResponseEvent => {
            if (event.kind !== 'chunk') return event;
            const chunk: ChatCompletionChunk = { ...event.chunk, model: ctx.responseModel + opts.suffix };
            return { kind: 'chunk', chunk };
          }),
        );
      },
    };
  },
  close() {},
});

export default plugin;
`;

/** Wrong on purpose: options typed from the schema, a run that does not return an Observable. */
const WRONG_PLUGIN = `import { z } from 'zod';
import { definePlugin } from 'tollgate';

export default definePlugin({
  name: 'wrong',
  options: z.object({ limit: z.number() }),
  create(options) {
    const label: string = options.limit;
    return { name: label, run: (ctx) => ctx.request.model };
  },
});
`;

/** The SDK as a consumer uses it: the gateway in-process on a free port, the openai-shaped API, the admin client. */
const SDK_SCRIPT = `import { createGateway, type ConfigInput, type Gateway } from 'tollgate';
import { AdminApiError, AdminClient, type KeyWithSecret, type ProviderView } from 'tollgate/admin';

const config: ConfigInput = {
  settings: { log_level: 'warn' },
  providers: { openai: { base_url: process.env.UPSTREAM + '/v1', api_key: 'sk-upstream-test' } },
  routes: { chat: { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }] } },
};
const gateway: Gateway = await createGateway({ config, env: { TOLLGATE_DATA_DIR: process.env.DATA_DIR } });
const url = await gateway.listen({ port: 0, host: '127.0.0.1' });
try {
  const admin = new AdminClient({ baseUrl: url });
  const created: KeyWithSecret = await admin.keys.create({ name: 'consumer', budget: 1 });
  const answer = await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + created.key },
    body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'from a consumer' }] }),
  });
  const completion = (await answer.json()) as { choices: Array<{ message: { content: string } }> };
  const requestId = answer.headers.get('x-request-id') ?? '';
  let logged = null;
  for (let tries = 0; tries < 100 && !logged; tries++) {
    logged = await admin.logs.get(requestId).catch((err: unknown) => (err instanceof AdminApiError && err.status === 404 ? null : Promise.reject(err)));
    if (!logged) await new Promise((done) => setTimeout(done, 20));
  }
  const providers: ProviderView[] = (await admin.providers.list()).data;
  const routes = (await admin.routes.list()).data.map((route) => route.name);
  const usage = await admin.usage({ group_by: 'key' });
  const missing = await admin.teams.get('team_nope').catch((err: unknown) => err);
  console.log(JSON.stringify({
    status: answer.status,
    content: completion.choices[0]?.message.content,
    keys: (await admin.keys.list()).data.map((key) => key.name),
    loggedKey: logged?.key_id === created.id,
    openaiKeys: providers.find((provider) => provider.name === 'openai')?.keys.length,
    routes,
    usageOfKey: usage.totals.filter((row) => row.group === created.id).map((row) => row.requests),
    configVersion: typeof (await admin.config.get()).version,
    missing: missing instanceof AdminApiError ? missing.status : 'no error',
  }));
} finally {
  await gateway.close();
}
`;

function tsconfig(moduleResolution: 'NodeNext' | 'Bundler', file: string): string {
  const module = moduleResolution === 'NodeNext' ? 'NodeNext' : 'ESNext';
  return JSON.stringify({
    compilerOptions: { target: 'ES2022', module, moduleResolution, strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
    files: [file],
  });
}

async function typecheck(project: string): Promise<{ ok: boolean; output: string }> {
  try {
    await run(process.execPath, [tsc, '-p', project], { cwd: consumer, timeout: TIMEOUT });
    return { ok: true, output: '' };
  } catch (err) {
    const failure = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${failure.stdout ?? ''}${failure.stderr ?? ''}` || failure.message };
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-consumer-'));
  const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: repo, timeout: TIMEOUT });
  const tarball = stdout.trim().split('\n').at(-1) ?? '';
  expect(tarball).toMatch(/^tollgate-.*\.tgz$/);
  consumer = join(dir, 'consumer');
  const modules = join(consumer, 'node_modules');
  mkdirSync(join(modules, 'tollgate'), { recursive: true });
  await run('tar', ['-xzf', join(dir, tarball), '-C', join(modules, 'tollgate'), '--strip-components=1'], { timeout: TIMEOUT });
  for (const entry of readdirSync(join(repo, 'node_modules'))) {
    // .bin is the consumer's own (it gets the tollgate command below); a link would write into the repo's.
    if (entry !== 'tollgate' && entry !== '.bin') symlinkSync(join(repo, 'node_modules', entry), join(modules, entry));
  }
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: { tollgate: `file:../${tarball}` } }));
  writeFileSync(join(consumer, 'plugin.ts'), GOOD_PLUGIN);
  writeFileSync(join(consumer, 'wrong.ts'), WRONG_PLUGIN);
  writeFileSync(join(consumer, 'tsconfig.json'), tsconfig('NodeNext', 'plugin.ts'));
  writeFileSync(join(consumer, 'tsconfig.bundler.json'), tsconfig('Bundler', 'plugin.ts'));
  writeFileSync(join(consumer, 'tsconfig.wrong.json'), tsconfig('NodeNext', 'wrong.ts'));
  writeFileSync(join(consumer, 'sdk.ts'), SDK_SCRIPT);
  writeFileSync(join(consumer, 'tsconfig.sdk.json'), tsconfig('NodeNext', 'sdk.ts'));
  upstream = await startOpenAIUpstream();
  writeFileSync(
    join(consumer, 'run.ts'),
    `import plugin from './plugin.js';\nconst stage = plugin.create(plugin.options!.parse({}), { version: 1 } as never, { get: () => ({ add() {} }), has: () => true });\nconsole.log(JSON.stringify({ name: plugin.name, stage: stage?.name }));\n`,
  );
}, TIMEOUT);

afterAll(async () => {
  await upstream?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the published package, from a consumer project', () => {
  it('ships the public entry and not the tests', () => {
    const shipped = readdirSync(join(consumer, 'node_modules/tollgate'));
    expect(shipped).toEqual(expect.arrayContaining(['package.json', 'dist', 'src', 'pipelines', 'plugins']));
    expect(shipped).not.toContain('test');
    for (const file of ['cli.js', 'index.js', 'admin.js', 'types/src/index.d.ts', 'types/src/admin-client/index.d.ts', 'cache/index-builder-worker.mjs']) {
      expect(existsSync(join(consumer, 'node_modules/tollgate/dist', file)), file).toBe(true);
    }
  });

  it("type-checks a plugin written against import { definePlugin } from 'tollgate' (NodeNext and bundler resolution)", async () => {
    const [nodeNext, bundler] = await Promise.all([typecheck('tsconfig.json'), typecheck('tsconfig.bundler.json')]);
    expect(nodeNext.output).toBe('');
    expect(nodeNext.ok).toBe(true);
    expect(bundler.output).toBe('');
    expect(bundler.ok).toBe(true);
  }, TIMEOUT);

  it('refuses a plugin whose options and stage do not fit the contract', async () => {
    const result = await typecheck('tsconfig.wrong.json');
    expect(result.ok).toBe(false);
    expect(result.output).toContain("Type 'number' is not assignable to type 'string'");
    expect(result.output).toMatch(/not assignable to type 'Observable<ResponseEvent>'/);
  }, TIMEOUT);

  it('runs the plugin through tsx, the package entry resolving to its compiled build', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'run.ts'], { cwd: consumer, timeout: TIMEOUT });
    expect(JSON.parse(stdout)).toEqual({ name: 'shout', stage: 'shout' });
  }, TIMEOUT);

  it('type-checks and runs the SDK: createGateway in-process, a chat to a scripted upstream, the admin client', async () => {
    const checked = await typecheck('tsconfig.sdk.json');
    expect(checked.output).toBe('');
    const data = join(dir, 'sdk-data');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'sdk.ts'], { cwd: consumer, timeout: TIMEOUT, env: childEnv({ UPSTREAM: upstream.url, DATA_DIR: data }, consumer) });
    expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '')).toEqual({
      status: 200,
      content: 'echo: from a consumer',
      keys: ['consumer'],
      loggedKey: true,
      openaiKeys: 1,
      routes: ['chat'],
      usageOfKey: [1],
      configVersion: 'number',
      missing: 404,
    });
    expect(existsSync(join(data, 'tollgate.lmdb'))).toBe(true);
  }, TIMEOUT);

  it('installs the tollgate command: npx tollgate --help, tollgate init', async () => {
    const bin = join(consumer, 'node_modules/.bin');
    mkdirSync(bin, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(consumer, 'node_modules/tollgate/package.json'), 'utf8')) as { bin: { tollgate: string }; version: string };
    symlinkSync(join('..', 'tollgate', manifest.bin.tollgate), join(bin, 'tollgate'));
    const env = childEnv({ npm_config_offline: 'true' }, consumer);
    const help = await run('npx', ['--no-install', 'tollgate', '--help'], { cwd: consumer, timeout: TIMEOUT, env });
    expect(help.stdout).toMatch(/^Usage: tollgate \[options\]/);
    const version = await run(join(bin, 'tollgate'), ['--version'], { cwd: consumer, timeout: TIMEOUT, env });
    expect(version.stdout.trim()).toBe(manifest.version);
    await run(join(bin, 'tollgate'), ['init'], { cwd: consumer, timeout: TIMEOUT, env });
    expect(readFileSync(join(consumer, 'tollgate.config.yaml'), 'utf8')).toContain('# tollgate configuration');
    const checked = await run(join(bin, 'tollgate'), ['check-config', 'tollgate.config.yaml'], { cwd: consumer, timeout: TIMEOUT, env });
    expect(checked.stdout).toContain('OK ');
  }, TIMEOUT);
});
