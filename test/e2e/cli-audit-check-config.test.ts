import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, repoRoot } from '../helpers/main-process.js';

/**
 * `tollgate check-config` on plugins whose options schema the gateway refuses, and on a plugin module that keeps
 * the event loop busy, through the real command (src/main.ts, as `npm start` runs it).
 */

const execFileAsync = promisify(execFile);
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
const mainScript = join(repoRoot, 'src/main.ts');
const zodUrl = pathToFileURL(join(repoRoot, 'node_modules/zod/index.js')).href;
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A folder holding `plugin.mjs` with `source` and a config naming it with `options`. */
function pluginConfig(source: string, options: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-audit-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'plugin.mjs'), source);
  writeFileSync(join(dir, 'tollgate.yaml'), ['plugins:', '  - name: checked', '    path: ./plugin.mjs', `    options: ${options}`, ''].join('\n'));
  return join(dir, 'tollgate.yaml');
}

/**
 * Runs `tollgate check-config <file>`; a run still going after `timeout` ms is killed with SIGKILL (code null), so
 * nothing it started outlives the test.
 */
async function checkConfig(file: string, timeout = 40_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['--import', tsxLoader, mainScript, 'check-config', file], { env: childEnv({}, tmpdir()), timeout, killSignal: 'SIGKILL' });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : null, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('check-config on plugin options the gateway refuses', () => {
  it('a JSON Schema object as options is one error naming plugins.0.options, exit 1, no stack', async () => {
    const file = pluginConfig(`export default { name: 'checked', options: { type: 'object', properties: {} }, create: () => null };\n`, '{ pattern: x }');
    const { code, stdout, stderr } = await checkConfig(file);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual(['error: plugins.0.options: plugin "checked": its options must be a zod schema (definePlugin({ options: z.object({ ... }) }))']);
    expect(code).toBe(1);
  }, 90_000);

  it('a transform that throws is one error naming plugins.0.options with its message, secret values masked, exit 1', async () => {
    const regex = `import { z } from '${zodUrl}';\nexport default { name: 'checked', options: z.object({ pattern: z.string().transform((s) => new RegExp(s)) }), create: () => null };\n`;
    const bad = await checkConfig(pluginConfig(regex, `{ pattern: "(" }`));
    expect(bad.stderr.trim().split('\n')).toEqual(['error: plugins.0.options: plugin "checked" could not parse its options: Invalid regular expression: /(/: Unterminated group']);
    expect(bad.code).toBe(1);
    // A thrown message may quote the value it refused: a secret option's value must not reach the CI log.
    const quoting = [
      `import { z } from '${zodUrl}';`,
      `const options = z.object({ token: z.string().transform((s) => { throw new Error('bad token ' + s); }) });`,
      `export default { name: 'checked', options, secretOptions: ['token'], create: () => null };`,
      '',
    ].join('\n');
    const secret = await checkConfig(pluginConfig(quoting, `{ token: "tg-sekrit-value-1234" }`));
    expect(secret.stderr).not.toContain('tg-sekrit-value-1234');
    expect(secret.stderr).toMatch(/^error: plugins\.0\.options: plugin "checked" could not parse its options: bad token \S+\n$/);
    expect(secret.code).toBe(1);
  }, 90_000);
});

describe('check-config ends when its verdict is out', () => {
  it('exits 0 after OK even when a plugin module keeps a timer running', async () => {
    // A module that opens a pool or starts a timer when imported (its init is not run) held the process open
    // forever after "OK": the CI step never finished.
    const { code, stdout, stderr } = await checkConfig(pluginConfig(`setInterval(() => {}, 1000);\nexport default { name: 'checked', create: () => null };\n`, '{}'));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^OK \/.*tollgate\.yaml\n$/);
  }, 90_000);

  it('exits 1 with every issue of the options, each with its path, even when a plugin module keeps a timer running', async () => {
    const source = `import { z } from '${zodUrl}';\nsetInterval(() => {}, 1000);\nexport default { name: 'checked', options: z.object({ a: z.number(), b: z.string() }), create: () => null };\n`;
    const { code, stdout, stderr } = await checkConfig(pluginConfig(source, `{ a: "x", b: 1 }`));
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr.trim().split('\n')).toEqual(['error: plugins.0.options.a: Invalid input: expected number, received string', 'error: plugins.0.options.b: Invalid input: expected string, received number']);
  }, 90_000);
});
