import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as an outsider gets it: `npm pack`, unpacked into a fresh project's node_modules, and a plugin
 * written against `import { ... } from 'tollgate'` type-checked with the consumer's own tsconfig. The consumer
 * shares the repo's node_modules for zod, rxjs, typescript and tollgate's own dependencies (the machine is
 * offline, so nothing is installed).
 */
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, '../..');
const tsc = join(repo, 'node_modules/typescript/bin/tsc');
const TIMEOUT = 120_000;

let dir = '';
let consumer = '';

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
    if (entry !== 'tollgate') symlinkSync(join(repo, 'node_modules', entry), join(modules, entry));
  }
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: { tollgate: `file:../${tarball}` } }));
  writeFileSync(join(consumer, 'plugin.ts'), GOOD_PLUGIN);
  writeFileSync(join(consumer, 'wrong.ts'), WRONG_PLUGIN);
  writeFileSync(join(consumer, 'tsconfig.json'), tsconfig('NodeNext', 'plugin.ts'));
  writeFileSync(join(consumer, 'tsconfig.bundler.json'), tsconfig('Bundler', 'plugin.ts'));
  writeFileSync(join(consumer, 'tsconfig.wrong.json'), tsconfig('NodeNext', 'wrong.ts'));
  writeFileSync(
    join(consumer, 'run.ts'),
    `import plugin from './plugin.js';\nconst stage = plugin.create(plugin.options!.parse({}), { version: 1 } as never, { get: () => ({ add() {} }), has: () => true });\nconsole.log(JSON.stringify({ name: plugin.name, stage: stage?.name }));\n`,
  );
}, TIMEOUT);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the published package, from a consumer project', () => {
  it('ships the public entry and not the tests', () => {
    const shipped = readdirSync(join(consumer, 'node_modules/tollgate'));
    expect(shipped).toEqual(expect.arrayContaining(['package.json', 'src', 'pipelines', 'plugins']));
    expect(shipped).not.toContain('test');
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

  it('runs the plugin through tsx, the package entry resolving to its TypeScript source', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'run.ts'], { cwd: consumer, timeout: TIMEOUT });
    expect(JSON.parse(stdout)).toEqual({ name: 'shout', stage: 'shout' });
  }, TIMEOUT);
});
