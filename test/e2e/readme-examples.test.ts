import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rootCertificates } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/cli/args.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import { parseConfigText } from '../../src/config/load-file.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { vendorById } from '../../src/providers/registry.js';
import { BUILD_TIMEOUT_MS, ensureCompiled } from '../helpers/compiled.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { checkDeployCommands } from '../helpers/readme-deploy-commands.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Every code block in README.md is executed or validated here, so the README cannot drift from the code:
// YAML blocks are whole config documents validated as the config file is (schema, then the full resolution that
// rejects unknown routes and providers); TypeScript blocks run as programs against a real gateway; a JSON request
// block is sent to it, and a JSON Schema block must be what it serves; shell blocks with curl run against it, and
// npm commands are checked against package.json, and deployment commands (docker, helm, kubectl, scripts/)
// against the files they name.
// A block of a language this test does not know fails, so a new example cannot go unchecked.

const ROOT = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const RUN_TIMEOUT_MS = 20_000;
const HAS_CURL = spawnSync('curl', ['--version']).status === 0;

interface Block {
  lang: string;
  text: string;
  /** The nearest heading above the block. */
  heading: string;
  line: number;
}

function readmeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  let heading = '(top)';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const h = /^#{1,6}\s+(.*)$/.exec(line);
    if (h) heading = h[1]!.trim();
    const fence = /^```(\S*)\s*$/.exec(line);
    if (!fence) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    blocks.push({ lang: fence[1] || '(none)', text: `${body.join('\n')}\n`, heading, line: start + 1 });
  }
  return blocks;
}

const BLOCKS = readmeBlocks(README);

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let secretsDir: string;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-readme-upstream' });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-readme' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-readme-upstream' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-readme' },
    },
    // Routes the README's request examples name.
    routes: { 'chat-cheap': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }] } },
    // The MCP servers the README's keys allow (an allow-list names configured servers only); disabled: never connected.
    mcp: { servers: { docs: { type: 'http', url: 'http://127.0.0.1:9/mcp', disabled: true }, tickets: { type: 'http', url: 'http://127.0.0.1:9/mcp', disabled: true } } },
  });
  secretsDir = mkdtempSync(join(tmpdir(), 'tollgate-readme-'));
  // The SDK example imports 'tollgate' itself, which resolves to the compiled package (dist/).
  await ensureCompiled();
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
  await anthropic?.close();
  if (secretsDir) rmSync(secretsDir, { recursive: true, force: true });
});

/** The gateway's address in place of the README's `localhost:8080`. */
function pointAtGateway(text: string): string {
  const { host } = new URL(tg.url);
  return text.replaceAll('http://localhost:8080', tg.url).replaceAll('localhost:8080', host);
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * Validates a YAML block the way a config file is validated: parsed against the schema, then resolved (routes,
 * fallbacks, rules and keys checked). `env:` references get a value, and `file:` references a file of the same
 * kind in a temporary directory, since the README's paths (/etc/tollgate/sa.json) do not exist here (as does a
 * `ca_file:` path, with a real certificate); an `env:` name ending in `_URL` gets a URL.
 */
function checkYaml(block: Block): void {
  const where = `README.md line ${block.line}`;
  // As written, the document must satisfy the schema.
  parseConfigText(block.text, where);
  const env: Record<string, string> = {};
  // A reference whose name ends in _URL stands for a URL (an incoming-webhook URL is a secret, checked once read).
  for (const [, name] of block.text.matchAll(/env:([A-Za-z_][A-Za-z0-9_]*)/g)) env[name!] = name!.endsWith('_URL') ? `https://hooks.example.com/value-of-${name}` : `value-of-${name}`;
  let n = 0;
  const text = block.text.replace(/file:(\/[^\s"',}\]]+)/g, (_ref, path: string) => {
    const file = join(secretsDir, `${block.line}-${n++}`);
    // A service-account JSON where the README's path names one, a plain key otherwise.
    writeFileSync(file, path.endsWith('.json') ? JSON.stringify({ type: 'service_account', client_email: 'a@b.iam.gserviceaccount.com', private_key: 'x', project_id: 'p' }) : 'secret-from-file');
    return `file:${file}`;
  });
  // A CA bundle path (settings.network.ca_file) gets a real PEM certificate in its place: one of Node's roots.
  const withCa = text.replace(/ca_file: (\/\S+)/g, () => {
    const file = join(secretsDir, `${block.line}-ca-${n++}.pem`);
    writeFileSync(file, rootCertificates[0]!);
    return `ca_file: ${file}`;
  });
  const document = parseConfigText(withCa, where);
  // Throws a ConfigError naming the field when the example would be rejected at start or on save.
  resolveRuntimeConfig({ api: {}, file: document }, env, 1);
}

/** Runs a TypeScript/JavaScript block as a program (inside the repo, so its imports resolve) against the gateway. */
async function runScript(block: Block): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = join(ROOT, 'test', `.readme-example-${block.line}-${process.pid}.${block.lang === 'js' ? 'mjs' : 'ts'}`);
  writeFileSync(file, pointAtGateway(block.text));
  try {
    return await run(process.execPath, ['--import', 'tsx', file], {
      env: { ...process.env, OPENAI_API_KEY: 'sk-readme-client', ANTHROPIC_API_KEY: 'sk-ant-readme-client' },
    });
  } finally {
    rmSync(file, { force: true });
  }
}

/** `npm run X`, `npm start`, `npm test` in a shell block must name scripts package.json has. */
function checkNpmCommands(text: string): number {
  let checked = 0;
  for (const [, command, script] of text.matchAll(/\bnpm (run (\S+)|start|test|install)\b/g)) {
    const name = script ?? command!;
    if (name === 'install') continue;
    expect(PACKAGE.scripts, `package.json has no script for "npm ${command}"`).toHaveProperty([name]);
    checked++;
  }
  return checked;
}

/**
 * `tollgate ...` command lines (the CLI, `./tollgate` the single binary, `npx tollgate`) must be ones the CLI
 * accepts: parsed with its own parser, so a renamed flag or command fails here.
 */
function checkTollgateCommands(text: string): number {
  let checked = 0;
  for (const line of text.split('\n')) {
    const command = /^(?:.*&&\s*)?(?:npx\s+|\.\/|dist-bin\/)?tollgate\b([^#]*)/.exec(line.trim());
    if (!command) continue;
    const args = (command[1] ?? '').trim().split(/\s+/).filter(Boolean);
    expect(() => parseCommand(args), `README: tollgate ${args.join(' ')}`).not.toThrow();
    checked++;
  }
  return checked;
}

/** Runs a child to its end (asynchronously: the gateway answering it lives in this process), killed past the timeout. */
function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${RUN_TIMEOUT_MS} ms)`;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

/** Runs a shell block's curl commands against the gateway; each must get a 2xx (curl --fail-with-body). */
async function runCurl(block: Block): Promise<string> {
  const script = `set -euo pipefail\n${pointAtGateway(block.text).replace(/\bcurl /g, "curl -sS --fail-with-body --noproxy '*' --max-time 10 ")}`;
  // In a folder of its own: an example that saves a file (`curl -o requests.csv`) must not write into the repository.
  const cwd = mkdtempSync(join(tmpdir(), 'tollgate-readme-curl-'));
  try {
    const result = await run('bash', ['-c', script], { cwd });
    expect(result.code, `curl block failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
    return result.stdout;
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

async function checkShell(block: Block): Promise<void> {
  const syntax = spawnSync('bash', ['-n'], { input: block.text, encoding: 'utf8' });
  expect(syntax.status, syntax.stderr).toBe(0);
  let checked = checkNpmCommands(block.text) + checkTollgateCommands(block.text);
  const deploy = checkDeployCommands(block.text, ROOT);
  expect(deploy.problems, `README.md line ${block.line}`).toEqual([]);
  checked += deploy.checked;
  // The comments' claims about a zero-config start.
  if (/npm start\b.*0\.0\.0\.0:8080/.test(block.text)) {
    expect(`${DEFAULTS.host}:${DEFAULTS.port}`).toBe('0.0.0.0:8080');
  }
  for (const [, name] of block.text.matchAll(/\bexport ([A-Z][A-Z0-9_]*_API_KEY)=/g)) {
    const vendor = name!.replace(/_API_KEY$/, '').toLowerCase();
    expect(vendorById(vendor)?.keyEnv, `${name} is not a provider's key variable`).toContain(name);
    checked++;
  }
  for (const [, name] of block.text.matchAll(/# or ([A-Z][A-Z0-9_]*_API_KEY)/g)) expect(vendorById(name!.replace(/_API_KEY$/, '').toLowerCase())?.keyEnv).toContain(name);
  if (/\bcurl\b/.test(block.text)) {
    // curl is part of this check: a machine without it cannot prove the example.
    expect(HAS_CURL, 'curl is not installed; the README curl examples cannot be run').toBe(true);
    const output = await runCurl(block);
    checked++;
    // Where the README shows the answer (`# -> 201 {...}`), the answer has those fields.
    const shown = /# -> (\d{3}) (\{.*\})/.exec(block.text);
    if (shown) {
      const answer = JSON.parse(output.trim().split('\n').at(-1)!);
      const fields = JSON.parse(shown[2]!.replace(/,\s*\.\.\.\s*}/, '}').replace(/"tg-\.\.\."/, '"tg-"').replace(/"\.\.\."/g, '""')) as Record<string, unknown>;
      for (const [key, value] of Object.entries(fields)) {
        expect(answer, `answer lacks "${key}"`).toHaveProperty([key]);
        if (typeof value === 'number') expect(answer[key]).toBe(value);
        if (typeof value === 'string' && value !== '') expect(String(answer[key])).toMatch(new RegExp(`^${value}`));
      }
    }
  }
  expect(checked, 'a shell block with nothing this test can check').toBeGreaterThan(0);
}

async function checkJson(block: Block): Promise<void> {
  // The README elides the messages (`[...]`); the rest is sent as written.
  const body = JSON.parse(block.text.replace('[...]', JSON.stringify([{ role: 'user', content: 'Hello from the README' }]))) as Record<string, unknown>;
  if (typeof body.$schema === 'string') {
    // A JSON Schema the gateway publishes: the README's copy is exactly what it serves.
    expect(String(body.$id), 'a JSON Schema block the gateway does not serve').toMatch(/alert-notification/);
    const served = await fetch(`${tg.url}/api/alerts/schema`);
    expect(served.status).toBe(200);
    expect(body).toEqual(await served.json());
    return;
  }
  expect(body.model, 'a JSON block that is not a chat request').toEqual(expect.any(String));
  const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  expect(JSON.parse(text).choices[0].message.content).toEqual(expect.any(String));
}

/** A layout block names src/ files and folders in its first column: each must exist, so the map stays true. */
function checkLayout(block: Block): void {
  const named = block.text
    .split('\n')
    .map((line) => line.split(/\s{2,}/)[0]?.trim() ?? '')
    .filter((first) => first !== '')
    .flatMap((first) => first.split(',').map((name) => name.trim()));
  expect(named.length, 'the layout block names nothing').toBeGreaterThan(0);
  for (const name of named) expect(existsSync(join(ROOT, 'src', name)), `README.md line ${block.line}: src/${name} does not exist`).toBe(true);
}

describe('README.md examples', () => {
  it('has code blocks (the parser found them)', () => {
    expect(BLOCKS.length).toBeGreaterThan(5);
  });

  for (const block of BLOCKS) {
    it(`${block.lang} block under "${block.heading}" (line ${block.line})`, { timeout: 30_000 }, async () => {
      switch (block.lang) {
        case 'yaml':
        case 'yml':
          checkYaml(block);
          return;
        case 'ts':
        case 'typescript':
        case 'js':
        case 'javascript': {
          const { code, stdout, stderr } = await runScript(block);
          expect(code, `the example failed:\n${stdout}\n${stderr}`).toBe(0);
          if (/console\.log/.test(block.text)) expect(stdout.trim(), 'the example printed nothing').not.toBe('');
          return;
        }
        case 'json':
          await checkJson(block);
          return;
        case 'sh':
        case 'bash':
        case 'shell':
          await checkShell(block);
          return;
        case 'text':
          checkLayout(block);
          return;
        default:
          throw new Error(`README.md line ${block.line}: no check for \`\`\`${block.lang} blocks; add one to this test`);
      }
    });
  }
});
