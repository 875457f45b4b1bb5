import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILD_TIMEOUT_MS, ensureCompiled } from '../helpers/compiled.js';
import { childEnv, compiledCli, repoRoot, spawnMain, waitUntilGone, type MainProcess } from '../helpers/main-process.js';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The compiled gateway, as `npm start` and the `tollgate` bin run it: `node dist/cli.js`, no TypeScript loader.
 * Its commands (--help, --version, init, check-config), its flags over the environment, a chat through the
 * official openai SDK with TypeScript plugins loaded by path (tsx registered on demand), and a clean SIGTERM.
 */
const execFileAsync = promisify(execFile);
const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;

let dir = '';
let upstream: ScriptedUpstream;
const started: MainProcess[] = [];

/** Runs `node dist/cli.js <args>` to its end: exit code and output. */
async function cli(args: string[], cwd = dir): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [compiledCli, ...args], { cwd, env: childEnv({}, cwd), timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

async function stop(gateway: MainProcess): Promise<void> {
  gateway.child.kill('SIGTERM');
  const exit = await gateway.exit;
  expect(exit.code).toBe(0);
  expect(await waitUntilGone(gateway.serverPid, gateway.port, 5_000)).toEqual({ port: 'refused', alive: false });
}

beforeAll(async () => {
  await ensureCompiled();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-compiled-'));
  upstream = await startOpenAIUpstream();
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  for (const gateway of started) if (gateway.child.exitCode === null && gateway.child.signalCode === null) gateway.child.kill('SIGKILL');
  await upstream?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('tollgate, compiled: the small commands', () => {
  it('--version prints the package version and --help the usage; a wrong flag is exit 2', async () => {
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: tollgate \[options\]/);
    for (const flag of ['--config <file>', '--port <n>', '--host <addr>', 'init [file]', '--force', 'check-config <file>']) expect(help.stdout).toContain(flag);
    const wrong = await cli(['--prot', '80']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("unknown option '--prot'; did you mean '--port'?");
    expect((await cli(['--port', 'eighty'])).code).toBe(2);
  });

  it('init writes a starter config that check-config passes, and never overwrites a file', async () => {
    const made = await cli(['init', 'starter.yaml']);
    expect(made.code).toBe(0);
    const starter = readFileSync(join(dir, 'starter.yaml'), 'utf8');
    expect(starter).toContain('# tollgate configuration');
    const checked = await cli(['check-config', 'starter.yaml']);
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(`OK ${join(dir, 'starter.yaml')}`);
    // The starter's route names openai, which has no key here: valid, and said as a warning.
    expect(checked.stdout).toContain("warning: routes.chat.targets.0.model: Target 'openai/gpt-4o-mini'");

    writeFileSync(join(dir, 'mine.yaml'), 'settings: { port: 9999 }\n');
    const refused = await cli(['init', 'mine.yaml']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already exists; not overwriting it');
    expect(readFileSync(join(dir, 'mine.yaml'), 'utf8')).toBe('settings: { port: 9999 }\n');
  });

  it('check-config lists every error with its path and exits 1', async () => {
    writeFileSync(join(dir, 'bad.yaml'), 'settings:\n  port: eighty\n  colour: blue\nroutes:\n  chat: { targets: [] }\n');
    const result = await cli(['check-config', 'bad.yaml']);
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain('OK');
    expect(result.stderr.trim().split('\n')).toEqual([
      'error: settings.port: Invalid input: expected number, received string',
      'error: settings: Unrecognized key: "colour"',
      'error: routes.chat.targets: Too small: expected array to have >=1 items',
    ]);
    writeFileSync(join(dir, 'secret.yaml'), 'providers:\n  openai: { api_key: "env:NO_SUCH_VARIABLE_FOR_TOLLGATE" }\n');
    const secret = await cli(['check-config', 'secret.yaml']);
    expect(secret.code).toBe(1);
    expect(secret.stderr).toContain('NO_SUCH_VARIABLE_FOR_TOLLGATE');
    writeFileSync(join(dir, 'plugin.yaml'), `plugins:\n  - name: redact-word\n    path: ${join(repoRoot, 'plugins/examples/redact-word.ts')}\n    options: { words: 7 }\n`);
    const plugin = await cli(['check-config', 'plugin.yaml']);
    expect(plugin.code).toBe(1);
    expect(plugin.stderr).toMatch(/^error: plugins\.0\.options\.words: /);
    expect((await cli(['check-config', 'missing.yaml'])).stderr).toContain('missing.yaml: no such file');
  });
});

describe('tollgate, compiled: serving', () => {
  it('starts on the starter config with --config/--port/--host (a flag wins over its variable) and stops on SIGTERM', async () => {
    const port = await freePort();
    const gateway = await spawnMain({ cwd: dir, via: 'compiled', port, env: { PORT: '1', HOST: '0.0.0.0' }, args: ['--config', 'starter.yaml', '--port', String(port), '--host', '127.0.0.1'] });
    started.push(gateway);
    const health = (await (await fetch(`${gateway.url}/health`)).json()) as { status: string; version: string };
    expect(health).toMatchObject({ status: 'ok', version });
    expect(gateway.output()).toContain(`"configFile":"${join(dir, 'starter.yaml')}"`);
    await stop(gateway);
  }, 40_000);

  it('answers a chat through the openai SDK, with TypeScript plugins loaded from the config (tsx on demand)', async () => {
    // A plugin of the operator's, in TypeScript, importing tollgate's sources (another copy than the compiled
    // gateway's): its GatewayError must still come out as its 400, not as a 500.
    writeFileSync(
      join(dir, 'no-shouting.ts'),
      `import { definePlugin, gatewayError } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default definePlugin({
  name: 'no-shouting',
  create: () => ({
    name: 'no-shouting',
    run(ctx, next) {
      const last = ctx.operation === 'chat' ? ctx.request.messages.at(-1)?.content : '';
      if (typeof last === 'string' && last === last.toUpperCase() && /[A-Z]/.test(last)) throw gatewayError('invalid_value', 'No shouting, please.', { param: 'messages' });
      return next();
    },
  }),
});
`,
    );
    writeFileSync(
      join(dir, 'served.yaml'),
      JSON.stringify({
        providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
        plugins: [
          { name: 'no-shouting', path: 'no-shouting.ts' },
          { name: 'canned-answer', path: join(repoRoot, 'plugins/examples/canned-answer.ts'), options: { answers: [{ pattern: '^opening hours\\?$', text: 'Nine to five.' }] } },
        ],
      }),
    );
    const gateway = await spawnMain({ cwd: dir, via: 'compiled', args: ['--config', 'served.yaml'] });
    started.push(gateway);
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const echoed = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello compiled' }] });
    expect(echoed.choices[0]?.message.content).toBe('echo: hello compiled');
    const canned = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'opening hours?' }] });
    expect(canned.choices[0]?.message.content).toBe('Nine to five.');
    const shouted = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'HELLO' }] }).catch((err: unknown) => err);
    expect(shouted).toBeInstanceOf(OpenAI.BadRequestError);
    expect((shouted as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('No shouting, please.');
    expect(upstream.calls.filter((call) => call.path === '/v1/chat/completions')).toHaveLength(1);
    await stop(gateway);
  }, 60_000);
});
