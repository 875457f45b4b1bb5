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
