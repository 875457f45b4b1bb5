import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-file.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The config file deleted while the gateway runs: it keeps serving the last config it applied, warns once (not at
 * every event while the file is away), and applies the file when it is back: the same file as no new version, a
 * changed one as one. Also when the file's whole directory was removed and made again (its watch gone with it).
 */
let a: ScriptedUpstream;
let b: ScriptedUpstream;
const dirs: string[] = [];

beforeAll(async () => {
  a = await startOpenAIUpstream({ apiKey: null });
  b = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await a.close();
  await b.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function labYaml(baseUrl: string): string {
  return ['providers:', '  lab:', '    type: openai', `    base_url: ${baseUrl}/v1`, ''].join('\n');
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 25));
  }
}

const pause = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

describe('a config file deleted while the gateway runs', () => {
  let tg: RunningGateway;
  let dir: string;
  let path: string;
  let lines: Array<{ level: number; msg: string }>;

  beforeEach(async () => {
    a.reset();
    b.reset();
    const root = mkdtempSync(join(tmpdir(), 'tollgate-deleted-'));
    dirs.push(root);
    dir = join(root, 'etc');
    mkdirSync(dir);
    path = join(dir, 'tollgate.config.yaml');
    writeFileSync(path, labYaml(a.url));
    lines = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    tg = await startGateway(parseConfigText(readFileSync(path, 'utf8'), path), {}, { configPath: path, log });
  });
  afterEach(async () => {
    await tg.stop();
  });

  const removedWarnings = (): unknown[] => lines.filter((line) => line.level === 40 && line.msg.startsWith('config file removed'));
  const chat = () => tg.client.chat.completions.create({ model: 'lab/m', messages: [{ role: 'user', content: 'hi' }] });

  it('keeps serving the last config, warns once, and applies the file when it is back', async () => {
    const version = tg.gateway.configService.current().version;
    unlinkSync(path);
    await until(() => removedWarnings().length === 1);
    // More events while it is away (an editor's swap files, a second delete of a re-created temp file): no more warnings.
    writeFileSync(`${path}.tmp`, 'x');
    renameSync(`${path}.tmp`, `${path}.bak`);
    writeFileSync(path, labYaml(a.url));
    unlinkSync(path);
    await pause(600);
    expect(removedWarnings()).toHaveLength(1);
    await chat();
    expect(a.calls).toHaveLength(1);
    expect(tg.gateway.configService.current().version).toBe(version);

    // Back as it was: nothing changes.
    writeFileSync(path, labYaml(a.url));
    await until(() => lines.some((line) => line.msg === 'config file is back; applying it'));
    await pause(300);
    expect(tg.gateway.configService.current().version).toBe(version);

    // Removed again, then back changed: warned again (once), and the change applies.
    unlinkSync(path);
    await until(() => removedWarnings().length === 2);
    writeFileSync(path, labYaml(b.url));
    await until(() => tg.gateway.configService.current().version === version + 1);
    await chat();
    expect(b.calls).toHaveLength(1);
  });

  it('picks the file up again when its whole directory was removed and made again', async () => {
    const version = tg.gateway.configService.current().version;
    rmSync(dir, { recursive: true, force: true });
    await until(() => removedWarnings().length === 1);
    await chat();
    expect(a.calls.length).toBeGreaterThan(0);
    mkdirSync(dir);
    writeFileSync(path, labYaml(b.url));
    await until(() => tg.gateway.configService.current().version === version + 1, 15_000);
    await chat();
    expect(b.calls).toHaveLength(1);
    expect(removedWarnings()).toHaveLength(1);
    // Watched again: a later save applies at once.
    writeFileSync(path, labYaml(a.url));
    await until(() => tg.gateway.configService.current().version === version + 2);
  }, 30_000);
});
