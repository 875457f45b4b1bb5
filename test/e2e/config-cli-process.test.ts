import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, repoRoot, spawnMain, waitUntilGone, type MainProcess } from '../helpers/main-process.js';

/**
 * The config file and the command line, through real processes: `src/main.ts` run as `npm start` runs it, its
 * subcommands, and the HTTP API of the gateway it starts.
 */

const execFileAsync = promisify(execFile);
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
const mainScript = join(repoRoot, 'src/main.ts');
const dirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs `tollgate <args>` from the sources and returns its exit code and output. */
async function cli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['--import', tsxLoader, mainScript, ...args], { cwd, env: childEnv({}, cwd), timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** Stops the gateway with SIGTERM and checks that the process is gone and its port closed. */
async function stop(gateway: MainProcess): Promise<void> {
  gateway.child.kill('SIGTERM');
  const exited = await Promise.race([gateway.exit, new Promise<null>((done) => setTimeout(() => done(null), 15_000))]);
  if (exited === null) gateway.child.kill('SIGKILL');
  expect(await waitUntilGone(gateway.serverPid, gateway.port, 5_000)).toEqual({ port: 'refused', alive: false });
}

async function routeNames(gateway: MainProcess): Promise<string[]> {
  const body = (await (await fetch(`${gateway.url}/api/routes`)).json()) as { data: Array<{ name: string }> };
  return body.data.map((route) => route.name).sort();
}

async function until(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 50));
  }
}

function routesYaml(...names: string[]): string {
  return ['routes:', ...names.flatMap((name) => [`  ${name}:`, '    targets: [{ model: openai/gpt-4o-mini }]'])].join('\n') + '\n';
}

describe('the config file, watched by a running gateway', () => {
  it('applies saves of the file a symlink leads to in another directory, in place or by rename, and follows the link when it is retargeted', async () => {
    const root = tempDir('tollgate-symlinked-');
    mkdirSync(join(root, 'etc'));
    mkdirSync(join(root, 'srv'));
    const real = join(root, 'srv', 'prod.yaml');
    writeFileSync(real, routesYaml('one'));
    const link = join(root, 'etc', 'tollgate.yaml');
    symlinkSync(real, link);
    const gateway = await spawnMain({ cwd: root, env: { TOLLGATE_CONFIG: link } });
    try {
      expect(await routeNames(gateway)).toEqual(['one']);
      // Saved in place.
      writeFileSync(real, routesYaml('two'));
      await until(async () => (await routeNames(gateway)).includes('two'));
      // Saved as an editor does: a new file renamed over the old one.
      writeFileSync(`${real}.tmp`, routesYaml('three'));
      renameSync(`${real}.tmp`, real);
      await until(async () => (await routeNames(gateway)).includes('three'));
      // The link pointed at another file, in a third directory; saving that one applies too.
      mkdirSync(join(root, 'next'));
      const other = join(root, 'next', 'prod.yaml');
      writeFileSync(other, routesYaml('four'));
      rmSync(link);
      symlinkSync(other, link);
      await until(async () => (await routeNames(gateway)).includes('four'));
      writeFileSync(other, routesYaml('five'));
      await until(async () => (await routeNames(gateway)).includes('five'));
      // The old target no longer counts.
      writeFileSync(real, routesYaml('stale'));
      await new Promise((done) => setTimeout(done, 500));
      expect(await routeNames(gateway)).toEqual(['five']);
    } finally {
      await stop(gateway);
    }
  }, 60_000);
});

describe('the command line', () => {
  it('init writes the file named by --config, and a flag a subcommand does not read is refused, not ignored', async () => {
    const cwd = tempDir('tollgate-cli-init-');
    const init = await cli(['init', '--config', 'mine.yaml'], cwd);
    expect(init.code).toBe(0);
    expect(existsSync(join(cwd, 'mine.yaml'))).toBe(true);
    expect(existsSync(join(cwd, 'tollgate.config.yaml'))).toBe(false);
    expect(await cli(['init', 'a.yaml', '--config', 'b.yaml'], cwd)).toMatchObject({ code: 2, stderr: expect.stringContaining("init takes one file, but was given 'a.yaml' and --config 'b.yaml'") });
    expect(await cli(['init', 'c.yaml', '--port', '9000'], cwd)).toMatchObject({ code: 2, stderr: expect.stringContaining('--port goes with running the gateway, not with init') });
    expect(existsSync(join(cwd, 'c.yaml'))).toBe(false);
    expect(await cli(['check-config', 'mine.yaml', '--host', '127.0.0.1'], cwd)).toMatchObject({ code: 2, stderr: expect.stringContaining('--host goes with running the gateway, not with check-config') });
    expect(await cli(['check-config', 'mine.yaml', '--force'], cwd)).toMatchObject({ code: 2, stderr: expect.stringContaining('--force goes with init') });
    expect((await cli(['check-config', '--config', 'mine.yaml'], cwd)).code).toBe(0);
  }, 60_000);

  it('a mistyped command or option is exit 2 with the one it most likely meant', async () => {
    const cwd = tempDir('tollgate-cli-typo-');
    expect(await cli(['chek-config', 'x.yaml'], cwd)).toMatchObject({ code: 2, stderr: expect.stringContaining("unknown command 'chek-config'; did you mean 'check-config'?") });
    expect(await cli(['--prot', '9000'], cwd)).toMatchObject({ code: 2, stderr: expect.stringContaining("unknown option '--prot'; did you mean '--port'?") });
    const far = await cli(['--bogus'], cwd);
    expect(far.code).toBe(2);
    expect(far.stderr.split('\n')[0]).toBe("tollgate: unknown option '--bogus'");
  }, 60_000);

  it('a --config file that does not exist is named as --config, not as TOLLGATE_CONFIG', async () => {
    const cwd = tempDir('tollgate-cli-missing-');
    const flag = await cli(['--config', 'nope.yaml', '--port', '1'], cwd);
    expect(flag.code).toBe(1);
    expect(flag.stderr.trim()).toBe(`tollgate: configuration error: --config: file not found: ${join(cwd, 'nope.yaml')}`);
  }, 60_000);
});

describe('a mistyped name in the config', () => {
  it('check-config says which key, provider or route it most likely meant, exit 1', async () => {
    const cwd = tempDir('tollgate-check-typo-');
    writeFileSync(join(cwd, 'keys.yaml'), 'setings: {}\nproviders:\n  openai: { api_kye: sk-x }\nroutes:\n  chat:\n    tragets: [{ model: openai/gpt-4o-mini }]\n');
    const keys = await cli(['check-config', 'keys.yaml'], cwd);
    expect(keys.code).toBe(1);
    expect(keys.stderr.trim().split('\n')).toEqual([
      'error: providers.openai: Unrecognized key: "api_kye"; did you mean "api_key"?',
      'error: routes.chat.targets: Invalid input: expected array, received undefined',
      'error: routes.chat: Unrecognized key: "tragets"; did you mean "targets"?',
      'error: (root): Unrecognized key: "setings"; did you mean "settings"?',
    ]);
    writeFileSync(join(cwd, 'names.yaml'), 'providers:\n  lab: { type: opnai, base_url: "http://127.0.0.1:9/v1" }\nroutes:\n  chat:\n    targets: [{ model: lab/m }]\n');
    expect(await cli(['check-config', 'names.yaml'], cwd)).toMatchObject({ code: 1, stderr: 'error: providers.lab.type: unknown provider type "opnai" (did you mean "openai"?)\n' });
    writeFileSync(join(cwd, 'routes.yaml'), 'routes:\n  chat:\n    targets: [{ model: opnai/gpt-4o-mini }]\n');
    expect(await cli(['check-config', 'routes.yaml'], cwd)).toMatchObject({ code: 1, stderr: 'error: routes.chat.targets.0.model: unknown provider "opnai" (did you mean "openai"?)\n' });
    writeFileSync(join(cwd, 'fallbacks.yaml'), 'routes:\n  chat:\n    targets: [{ model: openai/gpt-4o-mini }]\n    fallbacks: [chta]\n');
    expect(await cli(['check-config', 'fallbacks.yaml'], cwd)).toMatchObject({
      code: 1,
      stderr: 'error: routes.chat.fallbacks.0: "chta" is neither a route nor "<known provider>/<model>" (did you mean "chat"?)\n',
    });
  }, 60_000);

  it('a running gateway refuses a save or a PATCH with a mistyped key in one line that names the key it meant, and keeps running as it was', async () => {
    const cwd = tempDir('tollgate-live-typo-');
    const path = join(cwd, 'tollgate.config.yaml');
    writeFileSync(path, routesYaml('one'));
    const gateway = await spawnMain({ cwd });
    try {
      writeFileSync(path, 'routes:\n  two:\n    tragets: [{ model: openai/gpt-4o-mini }]\n');
      await until(async () => gateway.output().includes('config file change rejected'));
      const rejected = gateway.output().split('\n').filter((line) => line.includes('config file change rejected'));
      expect(rejected).toHaveLength(1);
      expect(rejected[0]).toContain('routes.two: Unrecognized key: \\"tragets\\"; did you mean \\"targets\\"?');
      expect(await routeNames(gateway)).toEqual(['one']);
      const patch = await fetch(`${gateway.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ setings: { log_level: 'debug' } }) });
      expect(patch.status).toBe(400);
      expect(((await patch.json()) as { error: { message: string } }).error.message).toContain('Unrecognized key: "setings"; did you mean "settings"?');
    } finally {
      await stop(gateway);
    }
  }, 60_000);
});

describe('plugins the gateway refuses at start', () => {
  it('check-config refuses them with the start\'s own message, exit 1: a service the gateway does not have, a listed plugin before route', async () => {
    // check-config said OK of both, and the gateway then refused to start on the file it had passed.
    const cwd = tempDir('tollgate-check-plugins-');
    writeFileSync(join(cwd, 'wants.mjs'), "export default { name: 'wants', requires: [{ id: 'bus' }, { id: 'vector-db' }], create: () => null };\n");
    writeFileSync(join(cwd, 'listed.mjs'), "export default { name: 'listed', requires: [{ id: 'bus' }], create: () => null };\n");
    writeFileSync(join(cwd, 'service.yaml'), 'plugins:\n  - { name: wants, path: wants.mjs }\n');
    writeFileSync(join(cwd, 'listed.yaml'), 'plugins:\n  - { name: listed, path: listed.mjs, apply: listed, placement: { after: auth } }\n');
    writeFileSync(join(cwd, 'fine.yaml'), 'plugins:\n  - { name: listed, path: listed.mjs, apply: listed, placement: { after: route } }\n');
    const expected = {
      'service.yaml': 'plugins.0: plugin "wants" requires service "vector-db", which this gateway does not provide',
      'listed.yaml': 'plugins.0.placement: plugin "listed" applies where a route, key or team lists it, so it must be placed after "route" (it is before it)',
    };
    for (const [file, message] of Object.entries(expected)) {
      const check = await cli(['check-config', file], cwd);
      expect({ file, code: check.code, stderr: check.stderr.trim() }).toEqual({ file, code: 1, stderr: `error: ${message}` });
      const start = await cli(['--config', file, '--port', '1', '--host', '127.0.0.1'], cwd);
      expect({ file, code: start.code, stderr: start.stderr.trim() }).toEqual({ file, code: 1, stderr: `tollgate: configuration error: cannot start: ${message}` });
    }
    expect(await cli(['check-config', 'fine.yaml'], cwd)).toMatchObject({ code: 0, stdout: `OK ${join(cwd, 'fine.yaml')}\n` });
  }, 120_000);
});

describe('a plugin whose import never settles', () => {
  it('check-config refuses it after its init_timeout_ms, exit 1, as the start does', async () => {
    // The check ran out of work waiting on the import and the process ended with exit code 0 and no output: a
    // deploy script's `tollgate check-config && ...` went on.
    const cwd = tempDir('tollgate-check-hang-');
    writeFileSync(join(cwd, 'hang.mjs'), "await new Promise(() => {});\nexport default { name: 'hang', create: () => null };\n");
    writeFileSync(join(cwd, 'hang.yaml'), 'plugins:\n  - { name: hang, path: hang.mjs, init_timeout_ms: 500 }\n');
    const message = 'plugins.0: plugin "hang" was not loaded and initialised within 500 ms (init_timeout_ms)';
    expect(await cli(['check-config', 'hang.yaml'], cwd)).toMatchObject({ code: 1, stdout: '', stderr: `error: ${message}\n` });
    expect(await cli(['--config', 'hang.yaml', '--port', '1', '--host', '127.0.0.1'], cwd)).toMatchObject({ code: 1, stderr: `tollgate: configuration error: cannot start: ${message}\n` });
  }, 120_000);
});

describe('a plugin that does not compile', () => {
  it('check-config and the start say where and what its syntax error is', async () => {
    // A TypeScript plugin's syntax error was reported as 'Transform failed with 1 error:' and nothing else (the first
    // line of esbuild's message; the next one says where and what), a JavaScript one as a bare 'Unexpected token'.
    const cwd = tempDir('tollgate-check-syntax-');
    writeFileSync(join(cwd, 'broken.ts'), "export default { name: 'broken', create() { return { name: 'broken', run(ctx: unknown, next: () => unknown) { return next( } }; } };\n");
    writeFileSync(join(cwd, 'broken.mjs'), "export default { name: 'broken', create() { return { name: 'broken', run(ctx, next) { return next( } }; } };\n");
    writeFileSync(join(cwd, 'broken.yaml'), 'plugins:\n  - { name: ts, path: broken.ts }\n  - { name: js, path: broken.mjs }\n');
    const check = await cli(['check-config', 'broken.yaml'], cwd);
    expect(check.code).toBe(1);
    expect(check.stderr.trim().split('\n')).toEqual([
      `error: plugins.0.path: cannot load plugin "ts" from ${join(cwd, 'broken.ts')}: Transform failed with 1 error: ${join(cwd, 'broken.ts')}:1:123: ERROR: Unexpected "}"`,
      `error: plugins.1.path: cannot load plugin "js" from ${join(cwd, 'broken.mjs')}: SyntaxError: Unexpected token '}'`,
    ]);
    const start = await cli(['--config', 'broken.yaml', '--port', '1', '--host', '127.0.0.1'], cwd);
    expect(start.code).toBe(1);
    expect(start.stderr.trim()).toBe(`tollgate: configuration error: cannot start: ${check.stderr.split('\n')[0]!.slice('error: '.length)}`);
  }, 120_000);
});

describe('a fallback loop', () => {
  it('a route that falls back to itself passes check-config with a warning naming the field (cycles are cut at request time)', async () => {
    const cwd = tempDir('tollgate-check-loop-');
    writeFileSync(
      join(cwd, 'loop.yaml'),
      'providers:\n  openai: { api_key: sk-x }\nroutes:\n  a:\n    targets: [{ model: openai/gpt-4o-mini }]\n    fallbacks: [a, b]\n  b:\n    targets: [{ model: openai/gpt-4o }]\n    fallbacks: [a]\n',
    );
    const result = await cli(['check-config', 'loop.yaml'], cwd);
    expect(result.code).toBe(0);
    // a -> b -> a is a legitimate pair of mutual backups; only a route naming itself is pointless.
    expect(result.stdout.trim().split('\n')).toEqual([
      "warning: routes.a.fallbacks.0: Fallback 'a' of route 'a' is the route itself; a route is tried once per request, so this fallback never runs.",
      `OK ${join(cwd, 'loop.yaml')}`,
    ]);
  }, 60_000);
});

describe('a config file that cannot be read any more', () => {
  it('is refused in one line saying why in words, the running config stays, and the next good save applies', async () => {
    const cwd = tempDir('tollgate-unreadable-');
    const path = join(cwd, 'tollgate.config.yaml');
    writeFileSync(path, routesYaml('one'));
    const gateway = await spawnMain({ cwd });
    try {
      rmSync(path);
      mkdirSync(path);
      await until(async () => gateway.output().includes('config file change rejected'));
      const rejected = gateway.output().split('\n').filter((line) => line.includes('config file change rejected'));
      expect(rejected).toHaveLength(1);
      expect(rejected[0]).toContain(`${path}: cannot read the config file: it is a directory, not a file`);
      expect(await routeNames(gateway)).toEqual(['one']);
      rmSync(path, { recursive: true });
      writeFileSync(path, routesYaml('two'));
      await until(async () => (await routeNames(gateway)).includes('two'));
    } finally {
      await stop(gateway);
    }
  }, 60_000);
});
