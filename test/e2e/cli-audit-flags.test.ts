import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { childEnv, repoRoot, tryConnect } from '../helpers/main-process.js';

/** The gateway's flags through the real command (src/main.ts, as `npm start` runs it): what it says when it cannot start. */

const execFileAsync = promisify(execFile);
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
const mainScript = join(repoRoot, 'src/main.ts');
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-flags-'));
  dirs.push(dir);
  return dir;
}

/**
 * Runs `tollgate <args>` in `cwd` and returns its exit code and output. One that is still running after `timeout` ms
 * (a gateway that started when it should have refused) is killed with SIGKILL and has code null, so it never
 * outlives the test.
 */
async function cli(args: string[], cwd: string, env: Record<string, string> = {}, timeout = 40_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['--import', tsxLoader, mainScript, ...args], { cwd, env: childEnv({ TOLLGATE_DATA_DIR: join(cwd, 'data'), ...env }, cwd), timeout, killSignal: 'SIGKILL' });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : null, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('a flag given an empty value', () => {
  it('--config "" is a usage error (exit 2), not a gateway started without the config file', async () => {
    // `tollgate --config "$TOLLGATE_FILE"` with the variable unset started on no config at all (no routes, no
    // require_virtual_key), even with a tollgate.config.yaml in the working directory it would otherwise have read.
    const cwd = tempDir();
    writeFileSync(join(cwd, 'tollgate.config.yaml'), 'settings:\n  require_virtual_key: true\n');
    const port = await freePort();
    const result = await cli(['--config', '', '--port', String(port), '--host', '127.0.0.1'], cwd);
    expect(result).toEqual({ code: 2, stdout: '', stderr: "tollgate: --config was given an empty value\nRun 'tollgate --help' for usage.\n" });
    expect(await tryConnect(port)).toBe('refused');
  }, 90_000);

  it('--host "" is a usage error (exit 2), not a gateway listening on every interface', async () => {
    const cwd = tempDir();
    const port = await freePort();
    const result = await cli(['--host', '', '--port', String(port)], cwd);
    expect(result).toEqual({ code: 2, stdout: '', stderr: "tollgate: --host was given an empty value\nRun 'tollgate --help' for usage.\n" });
    expect(await tryConnect(port)).toBe('refused');
  }, 90_000);

  it('an empty file name for check-config or init is a usage error, not the working directory', async () => {
    const cwd = tempDir();
    expect(await cli(['check-config', ''], cwd)).toEqual({ code: 2, stdout: '', stderr: "tollgate: check-config was given an empty file name\nRun 'tollgate --help' for usage.\n" });
    expect(await cli(['init', ''], cwd)).toEqual({ code: 2, stdout: '', stderr: "tollgate: init was given an empty file name\nRun 'tollgate --help' for usage.\n" });
  }, 90_000);
});

describe('a port or host set by a flag that cannot be listened on', () => {
  it('names --port, not PORT (which the flag would win over), exit 1, one line', async () => {
    const taken: Server = createServer();
    const port = await freePort();
    await new Promise<void>((done) => taken.listen(port, '127.0.0.1', done));
    try {
      const cwd = tempDir();
      // PORT is set too, as in a container's environment: the flag is what decided the port, so it is what to change.
      const result = await cli(['--port', String(port), '--host', '127.0.0.1'], cwd, { PORT: '9' });
      expect(result).toEqual({ code: 1, stdout: '', stderr: `tollgate: port ${port} on 127.0.0.1 is already in use; set --port to another port (e.g. --port ${port + 1})\n` });
    } finally {
      await new Promise((done) => taken.close(done));
    }
  }, 90_000);

  it('names --host when the flag gave an address this machine does not have, exit 1, one line', async () => {
    const cwd = tempDir();
    const port = await freePort();
    // TEST-NET-1 (RFC 5737): never a local address.
    const result = await cli(['--port', String(port), '--host', '192.0.2.1'], cwd, { HOST: '127.0.0.1' });
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'tollgate: cannot listen on host 192.0.2.1: no such local address; set --host (e.g. --host 0.0.0.0)\n' });
  }, 90_000);
});
